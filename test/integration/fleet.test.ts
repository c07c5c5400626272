/**
 * Fleet approvals in one process: the real relay and real bridges (real SQLite, real
 * @azure/service-bus clients) against the AMQP peer's Service Bus queues and the IMDS
 * simulator. The processes-apart version, with Chromium and SIGKILL, is test/e2e/fleet.test.ts.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { commandId, signCommand, privateKeyOf, type ApprovalCommand } from '../../src/approval/fleet.ts';
import { startRelay, type RunningRelay } from '../../src/approval/relay.ts';
import { secretKey, signatureHeaders } from '../../src/lib/standard-webhooks.ts';
import type { AmqpPeer } from '../../testkit/amqp-peer.ts';
import { API_SECRET, fleetApproval, fleetKeys, fleetPeer, INBOX, relayConfig, sessionOf } from '../../testkit/fleet.ts';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { waitFor } from '../helpers.ts';

let peer: AmqpPeer | null = null;
const relays: RunningRelay[] = [];

afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.close()));
  await stopAll();
  await peer?.close();
  peer = null;
});

async function api(relay: RunningRelay, body: Record<string, unknown>, id = `msg_${Math.random().toString(36).slice(2)}`) {
  const text = JSON.stringify(body);
  const res = await fetch(`${relay.url}/v1/approvals`, { method: 'POST', headers: { 'content-type': 'application/json', ...signatureHeaders([secretKey(API_SECRET)!], id, text) }, body: text });
  return { status: res.status, json: (await res.json()) as Record<string, any> };
}

async function fleetBridge(p: AmqpPeer, keys: ReturnType<typeof fleetKeys>, vmName: string): Promise<Harness> {
  const { ImdsSimulator } = await import('../../src/simulator/server.ts');
  const sim = new ImdsSimulator({ vmName, peers: [], tickMs: 10 });
  await sim.listen(0);
  const h = await startBridge({ sim, config: { approval: fleetApproval(p, keys, sessionOf(sim)) } });
  const stop = h.stop;
  (h as { stop: () => Promise<void> }).stop = async () => {
    await stop();
    await sim.close();
  };
  await waitFor(() => h.bridge.inbox?.connected, 'the inbox session');
  return h;
}

async function scheduled(h: Harness) {
  const e = h.sim.addEvent({ noticeMs: 600_000 });
  await waitFor(() => h.kinds().includes(`scheduled:${e.eventId}`), 'the scheduled event');
  return e;
}

describe('fleet approvals over Service Bus', () => {
  it('approves the right VM through the relay API, once, and answers with the VM outcome', async () => {
    peer = await fleetPeer();
    const keys = fleetKeys();
    const [a, b] = [await fleetBridge(peer, keys, 'vm-a'), await fleetBridge(peer, keys, 'vm-b')];
    const relay = await startRelay(relayConfig(peer, keys), pino({ level: 'silent' }), { host: '127.0.0.1', port: 0 });
    relays.push(relay);
    await waitFor(() => relay.bus.listening, 'the relay replies session');
    const ea = await scheduled(a);
    const eb = await scheduled(b);

    const r = await api(relay, { vm: a.bridge.identity.resourceId, eventId: ea.eventId, approver: 'alice' }, 'msg_one');
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ eventId: ea.eventId, status: 'approved', approvedBy: 'alice', via: 'api' });
    expect(a.sim.startRequests.map((s) => s.eventIds)).toEqual([[ea.eventId]]);
    expect(b.sim.startRequests).toEqual([]);
    await waitFor(() => a.kinds().includes(`approved:${ea.eventId}`), 'the approved CloudEvent');

    // the same webhook-id again: one message (duplicate detection), no second approval
    const again = await api(relay, { vm: a.bridge.identity.resourceId, eventId: ea.eventId, approver: 'alice' }, 'msg_one');
    expect(peer.queues.duplicatesDropped(INBOX)).toBe(1);
    expect([200, 202]).toContain(again.status);
    // a new request for an approved event: already approved
    const third = await api(relay, { vm: a.bridge.identity.resourceId, eventId: ea.eventId, approver: 'bob' });
    expect(third.json).toMatchObject({ status: 'already-approved', approvedBy: 'alice' });
    expect(a.sim.startRequests).toHaveLength(1);
    expect(a.events().filter((e) => e.type.endsWith('.approved'))).toHaveLength(1);

    // the event of vm-b sent to vm-a's session: unknown there, and vm-b untouched
    const wrong = await api(relay, { vm: a.bridge.identity.resourceId, eventId: eb.eventId });
    expect(wrong.status).toBe(404);
    expect(wrong.json.error.code).toBe('UNKNOWN_EVENT');
    expect(b.sim.startRequests).toEqual([]);
    expect(peer.queues.active(INBOX)).toHaveLength(0);
  });

  it('dead-letters forged, foreign, expired and replayed commands before they reach IMDS', async () => {
    peer = await fleetPeer();
    const keys = fleetKeys();
    const a = await fleetBridge(peer, keys, 'vm-a');
    const e = await scheduled(a);
    const session = sessionOf(a.sim);
    const { ServiceBusClient } = await import('@azure/service-bus');
    const client = new ServiceBusClient(peer.connectionString());
    const sender = client.createSender(INBOX);
    const now = Math.floor(Date.now() / 1000);
    const base: ApprovalCommand = { v: 1, id: '', vm: session, eventId: e.eventId, by: 'mallory', via: 'api', reason: '', nonce: null, iat: now, exp: now + 600 };
    const send = async (c: ApprovalCommand, key = privateKeyOf(keys.signingKey)!, messageId = c.id, to = session) => {
      const { body, signature } = signCommand(key, c);
      await sender.sendMessages({ body, messageId, sessionId: to, applicationProperties: { 'se-bridge-signature': signature } });
    };
    const other = privateKeyOf(fleetKeys().signingKey)!;
    await send({ ...base, id: commandId(session, { webhookId: 'forged' }) }, other);
    await send({ ...base, id: commandId('vm-b', { webhookId: 'foreign' }), vm: 'vm-b' });
    await send({ ...base, id: commandId(session, { webhookId: 'expired' }), exp: now - 1 });
    await send({ ...base, id: commandId(session, { webhookId: 'other-id' }) }, undefined, 'f'.repeat(32));
    await waitFor(() => peer!.queues.deadLetters(INBOX).length === 4, 'four dead letters');
    expect(peer.queues.deadLetters(INBOX).map((d) => d.reason)).toEqual(['BAD_SIGNATURE', 'OTHER_VM', 'EXPIRED', 'MALFORMED']);
    expect(a.sim.startRequests).toEqual([]);

    // a genuine command applies; a copy of it sent later (outside duplicate detection's reach: another messageId is
    // refused, the same one dropped) is a replay once duplicate detection forgot it
    const good = { ...base, id: commandId(session, { webhookId: 'good' }) };
    await send(good);
    await waitFor(() => a.sim.startRequests.length === 1, 'the approval');
    peer.queues.forget(INBOX);
    await send(good);
    await waitFor(() => peer!.queues.deadLetters(INBOX).length === 5, 'the replay dead-lettered');
    expect(peer.queues.deadLetters(INBOX)[4]).toMatchObject({ reason: 'REPLAYED' });
    expect(a.sim.startRequests).toHaveLength(1);
    await client.close();
  });
});
