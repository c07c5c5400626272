/**
 * Sink outages at once: a webhook down for a while, an AMQP peer dropping connections, Slack
 * answering 429 with Retry-After, Event Grid answering 503 then 429, next to a healthy file sink. Nothing is lost, order per
 * event is kept at every sink, nothing is dead-lettered, and the healthy sink is unaffected.
 */
import { startBridge } from '../../testkit/harness.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Bridge } from '../../src/daemon/bridge.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { EventGridPeer, PEER_KEY } from '../../testkit/eventgrid-peer.ts';
import { tempDir, waitFor } from '../helpers.ts';

let sim: ImdsSimulator;
let http: HttpPeer;
let amqp: AmqpPeer;
let grid: EventGridPeer;
let dir: ReturnType<typeof tempDir>;
let bridge: Bridge;
const EVENTS = 6;

beforeAll(async () => {
  sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
  await sim.listen(0);
  http = new HttpPeer();
  await http.listen();
  amqp = new AmqpPeer();
  await amqp.listen();
  grid = new EventGridPeer();
  await grid.listen();
  dir = tempDir();
});
afterAll(async () => {
  await bridge?.stop(500);
  await Promise.all([sim.close(), http.close(), amqp.close(), grid.close()]);
  dir.cleanup();
});

/** firstSeen keeps the order in which each CloudEvent id was first received. */
function firstSeen(ids: string[]): string[] {
  return [...new Set(ids)];
}
function inOrderPerEvent(ids: string[]): boolean {
  const byEvent = new Map<string, string[]>();
  for (const id of firstSeen(ids)) {
    const [eventId, kind] = id.split('/') as [string, string];
    byEvent.set(eventId, [...(byEvent.get(eventId) ?? []), kind]);
  }
  return [...byEvent.values()].every((k) => JSON.stringify(k) === JSON.stringify(['scheduled', 'started', 'completed']));
}

describe('sink outages, all at once', () => {
  it('lose nothing, keep order, dead-letter nothing, and leave the healthy sink alone', async () => {
    let webhookDown = true;
    let slack429 = 0;
    http.answer = (r) => {
      if (r.url === '/hook') return webhookDown ? { status: 503 } : { status: 204 };
      if (r.url === '/slack') return slack429++ < 4 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200, body: 'ok' };
      return { status: 404 };
    };
    amqp.inject({ kind: 'drop', count: 3 });
    grid.faults.push({ status: 503, count: 4 }, { status: 429, count: 2, retryAfter: '1' });
    const fast = { initialBackoffMs: 50, maxBackoffMs: 500, maxAttempts: 200, maxAgeMs: 600_000, timeoutMs: 3000 };
    bridge = (
      await startBridge({
        sim,
        dir: dir.path,
        sinks: [
          { name: 'hook', type: 'webhook', url: `${http.url}/hook`, delivery: fast },
          { name: 'hub', type: 'eventhubs', connectionString: amqp.connectionString('maintenance'), delivery: fast },
          { name: 'slack', type: 'slack', webhookUrl: `${http.url}/slack`, delivery: fast },
          { name: 'grid', type: 'eventgrid', endpoint: grid.url, namespaceTopic: 'maintenance', accessKey: PEER_KEY, delivery: fast },
          { name: 'file', type: 'file', path: join(dir.path, 'events.jsonl') },
        ],
      })
    ).bridge;
    // each event stays Started until the bridge has said so (a short Started window goes unread by a poll late on a busy machine), then ends
    for (let i = 0; i < EVENTS; i++) sim.addEvent({ EventId: `EV-${i}`, noticeMs: 300 + i * 100, startedMs: 600_000 });
    const file = (): string[] => {
      try {
        return readFileSync(join(dir.path, 'events.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => (JSON.parse(l) as { id: string }).id);
      } catch {
        return [];
      }
    };
    // the healthy sink gets everything while the webhook is still down
    await waitFor(() => firstSeen(file()).filter((id) => id.endsWith('/started')).length === EVENTS, 'every event Started in the file');
    for (let i = 0; i < EVENTS; i++) sim.removeEvent(`EV-${i}`);
    await waitFor(() => firstSeen(file()).length === EVENTS * 3, 'every transition in the file');
    await waitFor(() => http.requests.filter((r) => r.url === '/hook').length >= 10, 'the webhook to have failed for a while');
    webhookDown = false;
    await waitFor(() => bridge.store.outbox.depth().size === 0, 'every outbox to drain', 60_000, 50);
    const hook = http.requests.filter((r) => r.url === '/hook').map((r) => String(r.headers['ce-id']));
    const hub = amqp.messages.map((m) => String(m.message.message_id));
    const slack = http.requests.filter((r) => r.url === '/slack').length;
    const gridIds = grid.events('maintenance').map((e) => String(e.id));
    expect(grid.publishes.filter((p) => p.status === 503 || p.status === 429)).toHaveLength(6);
    for (const [name, ids] of [
      ['file', file()],
      ['hook', hook],
      ['hub', hub],
      ['grid', gridIds],
    ] as const) {
      expect(firstSeen(ids), name).toHaveLength(EVENTS * 3);
      expect(inOrderPerEvent(ids), `${name} order`).toBe(true);
    }
    expect(slack).toBeGreaterThanOrEqual(EVENTS * 3 + 4);
    expect(bridge.store.outbox.deadLetters()).toEqual([]);
  });
});
