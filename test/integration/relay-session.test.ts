/**
 * The relay's replies session while nothing happens: the real relay against the Service Bus
 * stand-in (src/simulator/servicebus, AMQP 1.0 with session locks that expire unless renewed
 * through `$management`), its queues' lock shortened to one second, so that several lock periods
 * pass in a few seconds. The stand-in counts the renewals it answered and the locks it lost: the
 * passing of lock periods is what the test waits for, never a sleep.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startRelay, type RunningRelay } from '../../src/relay/relay.ts';
import type { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { fleetKeys, fleetPeer, relayConfig } from '../../testkit/fleet.ts';
import { waitFor } from '../helpers.ts';

const LOCK_MS = 1000;
let peer: AmqpPeer | null = null;
let relay: RunningRelay | null = null;

afterEach(async () => {
  await relay?.close();
  await peer?.close();
  relay = peer = null;
});

describe("the relay's replies session", () => {
  it('an idle relay keeps its session through many lock periods and logs nothing', async () => {
    peer = await fleetPeer(LOCK_MS);
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
    relay = await startRelay(relayConfig(peer, fleetKeys(), { log: { level: 'info' } }), logger, { host: '127.0.0.1', port: 0 });
    const queues = peer.queues;
    await waitFor(() => relay!.bus?.listening, 'the replies session held');
    // eight renewals, each made when half the lock is left, or two locks lost: at least four lock periods either way
    await waitFor(() => queues.renewals >= 8 || queues.locksLost >= 2, 'four lock periods', 30_000);
    expect(queues.locksLost).toBe(0);
    expect(queues.renewals).toBeGreaterThanOrEqual(8);
    expect(relay.bus?.listening).toBe(true);
    const said = lines.map((l) => JSON.parse(l) as { code?: string; msg: string }).filter((l) => l.msg !== 'relay listening');
    expect(said).toEqual([]);
    expect(await (await fetch(`${relay.url}/readyz`)).json()).toMatchObject({ status: 'ready' });
  });
});
