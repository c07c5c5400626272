/**
 * The Azure sinks inside the whole bridge: simulator -> store -> dispatcher -> real SDK
 * clients -> the AMQP peer. Includes a too-large event dead-lettered with its reason.
 */
import { startBridge, type Harness } from '../../testkit/harness.ts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Bridge } from '../../src/daemon/bridge.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { waitFor } from '../helpers.ts';

let sim: ImdsSimulator;
let peer: AmqpPeer;
let bridge: Bridge | null = null;
let h: Harness | null = null;
beforeEach(async () => {
  sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
  await sim.listen(0);
  peer = new AmqpPeer();
  await peer.listen();
});
afterEach(async () => {
  await h?.stop();
  h = null;
  bridge = null;
  await peer.close();
  await sim.close();
});

async function run(sinks: Record<string, unknown>[]) {
  h = await startBridge({ sim, sinks });
  bridge = h.bridge;
}

describe('Azure sinks in the bridge', () => {
  it('delivers every transition to Event Hubs and Service Bus, in order per event', async () => {
    await run([
      { name: 'hub', type: 'eventhubs', connectionString: peer.connectionString('maintenance') },
      { name: 'queue', type: 'servicebus', connectionString: peer.connectionString(), entity: 'maintenance-queue', sessionId: 'eventId' },
    ]);
    // each state lasts until both sinks have it (a short window goes unread by a poll late on a busy machine)
    const e = sim.addEvent({ EventType: 'Freeze', noticeMs: 600_000, startedMs: 600_000, DurationInSeconds: 5 });
    await waitFor(() => peer.messages.length === 2, 'scheduled at each sink', 15_000);
    expect(sim.startEvent(e.eventId)).toBe(true);
    await waitFor(() => peer.messages.length === 4, 'started at each sink', 15_000);
    expect(sim.removeEvent(e.eventId)).toBe(true);
    await waitFor(() => peer.messages.length === 6, 'three transitions at each sink', 15_000);
    for (const address of ['maintenance', 'maintenance-queue']) {
      const got = peer.messages
        .filter((m) => m.address === address)
        .map((m) => String(m.message.application_properties?.cloudEvents_type).slice(21));
      expect(got).toEqual(['scheduled', 'started', 'completed']);
    }
    const q = peer.messages.filter((m) => m.address === 'maintenance-queue');
    expect(new Set(q.map((m) => m.message.group_id))).toEqual(new Set([e.eventId]));
    expect(q.map((m) => m.message.message_id)).toEqual([`${e.eventId}/scheduled`, `${e.eventId}/started`, `${e.eventId}/completed`]);
  });

  it('dead-letters an event too large for the entity, with the reason, and keeps delivering the rest', async () => {
    peer.maxMessageSize = 700;
    await run([{ name: 'hub', type: 'eventhubs', connectionString: peer.connectionString('maintenance'), partitionKey: 'none' }]);
    sim.addEvent({ EventId: 'BIG', Description: 'x'.repeat(2000), noticeMs: 600_000 });
    await waitFor(() => bridge!.store.outbox.deadLetters().length === 1, 'a dead letter');
    expect(bridge!.store.outbox.deadLetters()[0]).toMatchObject({
      sink: 'hub',
      eventId: 'BIG',
      attempts: 1,
      lastError: expect.stringMatching(/^rejected: MessageSizeExceeded: .* at most 700/),
    });
    peer.maxMessageSize = 1024 * 1024;
  });

  it('rides out a dropped connection and a busy hub: nothing lost', async () => {
    await run([
      {
        name: 'hub',
        type: 'eventhubs',
        connectionString: peer.connectionString('maintenance'),
        delivery: { initialBackoffMs: 20, maxBackoffMs: 100, timeoutMs: 2000 },
      },
    ]);
    sim.addEvent({ EventId: 'A', noticeMs: 600_000 });
    await waitFor(() => peer.messages.length === 1, 'the first event');
    peer.inject({ kind: 'drop', count: 1 });
    peer.inject({ kind: 'reject', condition: 'com.microsoft:server-busy', count: 2 });
    sim.addEvent({ EventId: 'B', noticeMs: 600_000 });
    sim.startEvent('A');
    await waitFor(() => peer.messages.length === 3, 'the rest, after the faults', 15_000);
    expect(peer.faults).toEqual([]);
    expect(peer.messages.map((m) => m.message.message_id).sort()).toEqual(['A/scheduled', 'A/started', 'B/scheduled']);
    expect(bridge!.store.outbox.deadLetters()).toEqual([]);
  });
});
