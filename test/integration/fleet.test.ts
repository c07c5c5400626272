/**
 * Fleet approvals in one process: the real relay and real bridges (real SQLite, real
 * @azure/service-bus clients) against the AMQP peer's Service Bus queues and the IMDS
 * simulator. The processes-apart version, with Chromium and SIGKILL, is test/e2e/fleet.test.ts.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { type ApprovalCommand, commandId, linkKeyFor, privateKeyOf, signCommand, signOutcome } from '../../src/fleet/keys.ts';
import { startRelay, type RunningRelay } from '../../src/relay/relay.ts';
import { secretKey, signatureHeaders } from '../../src/lib/standard-webhooks.ts';
import type { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { API_SECRET, fleetApproval, fleetKeys, fleetPeer, INBOX, relayConfig, relayInput, sessionOf } from '../../testkit/fleet.ts';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { issueToken, slackSignature } from '../../src/approval/signatures.ts';
import type { BridgeEvent } from '../../src/pipeline/cloudevent.ts';
import { waitFor } from '../helpers.ts';
import { getFrom, openFrom } from '../../testkit/sockets.ts';

let peer: AmqpPeer | null = null;
const relays: RunningRelay[] = [];
const sims: ImdsSimulator[] = [];

afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.close()));
  await stopAll();
  await Promise.all(sims.splice(0).map((s) => s.close()));
  await peer?.close();
  peer = null;
});

/** track: GET /v1/approvals/{trackingId}, signed with the API secret over an empty body. */
async function track(relay: RunningRelay, trackingId: string, signed = true) {
  const headers = signed ? signatureHeaders([secretKey(API_SECRET)!], `msg_${Math.random().toString(36).slice(2)}`, '') : {};
  const res = await fetch(`${relay.url}/v1/approvals/${trackingId}`, { headers });
  return { status: res.status, json: (await res.json()) as Record<string, any> };
}

async function api(relay: RunningRelay, body: Record<string, unknown>, id = `msg_${Math.random().toString(36).slice(2)}`) {
  const text = JSON.stringify(body);
  const res = await fetch(`${relay.url}/v1/approvals`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...signatureHeaders([secretKey(API_SECRET)!], id, text) },
    body: text,
  });
  return { status: res.status, json: (await res.json()) as Record<string, any> };
}

async function fleetBridge(
  p: AmqpPeer,
  keys: ReturnType<typeof fleetKeys>,
  vmName: string,
  o: { relayUrl?: string; start?: boolean; observability?: boolean } = {},
): Promise<Harness> {
  const sim = new ImdsSimulator({ vmName, peers: [], tickMs: 10 });
  await sim.listen(0);
  sims.push(sim);
  const config = {
    approval: fleetApproval(p, keys, sessionOf(sim), o.relayUrl),
    ...(o.observability ? { observability: { listen: '127.0.0.1:0' } } : {}),
  };
  const h = await startBridge({ sim, start: o.start ?? true, config });
  if (o.start ?? true) await waitFor(() => h.bridge.inbox?.connected, 'the inbox session');
  return h;
}

async function relayOn(p: AmqpPeer, keys: ReturnType<typeof fleetKeys>, over: Record<string, unknown> = {}): Promise<RunningRelay> {
  const relay = await startRelay(relayConfig(p, keys, over), pino({ level: 'silent' }), { host: '127.0.0.1', port: 0 });
  relays.push(relay);
  await waitFor(() => relay.bus?.listening, 'the relay replies session');
  return relay;
}

async function scheduled(h: Harness) {
  const e = h.sim.addEvent({ noticeMs: 600_000 });
  await waitFor(() => h.kinds().includes(`scheduled:${e.eventId}`), 'the scheduled event');
  return e;
}

describe('fleet approvals over Service Bus', () => {
  it('approves the right VM through the relay API, once, and answers with the VM outcome', async () => {
    // a 1.5 s session lock: the test outlives it several times, so the bridges must renew it
    peer = await fleetPeer(1500);
    const keys = fleetKeys();
    const [a, b] = [await fleetBridge(peer, keys, 'vm-a'), await fleetBridge(peer, keys, 'vm-b')];
    const relay = await relayOn(peer, keys, { replyWaitMs: 3000 });
    const ea = await scheduled(a);
    const eb = await scheduled(b);

    const r = await api(relay, { vm: a.bridge.identity.resourceId, eventId: ea.eventId, approver: 'alice' }, 'msg_one');
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ eventId: ea.eventId, status: 'approved', approvedBy: 'alice', via: 'api' });
    expect(a.sim.startRequests.map((s) => s.eventIds)).toEqual([[ea.eventId]]);
    expect(b.sim.startRequests).toEqual([]);
    await waitFor(() => a.kinds().includes(`approved:${ea.eventId}`), 'the approved CloudEvent');

    // the same webhook-id again: the first answer, and nothing sent (it used to be a 202 that never told the outcome)
    const again = await api(relay, { vm: a.bridge.identity.resourceId, eventId: ea.eventId, approver: 'alice' }, 'msg_one');
    expect(again).toEqual(r);
    expect(peer.queues.queue(INBOX).duplicatesDropped).toBe(0);
    // and the tracking id tells the same, signed like the API; unsigned or unknown ids do not
    expect(await track(relay, r.json.trackingId)).toEqual(r);
    expect((await track(relay, r.json.trackingId, false)).status).toBe(401);
    const unknown = await track(relay, '0'.repeat(32));
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.code).toBe('UNKNOWN_TRACKING_ID');
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
    // the outcome is published before the message is completed
    await waitFor(() => peer!.queues.queue(INBOX).messages.length === 0, 'every command completed');
    // the 1.5 s session lock is renewed while the bridges hold it (waited for: a fast run may end before the first renewal)
    await waitFor(() => peer!.queues.renewals > 0, 'a session lock renewed', 15_000);
    expect(peer.queues.locksLost).toBe(0);
    const metrics = await (await fetch(`${relay.url}/metrics`)).text();
    expect(metrics).toMatch(/sebridge_relay_outcomes_total\{outcome="approved"\} 1\b/);
    expect(await (await fetch(`${relay.url}/readyz`)).json()).toMatchObject({ status: 'ready' });
  });

  it('dead-letters forged, foreign, expired and replayed commands before they reach IMDS', async () => {
    peer = await fleetPeer();
    const keys = fleetKeys();
    const a = await fleetBridge(peer, keys, 'vm-a', { observability: true });
    const e = await scheduled(a);
    const session = sessionOf(a.sim);
    const readyz = async () =>
      (await (await fetch(`${a.bridge.observabilityUrl}/readyz`)).json()) as { status: string; inbox: Record<string, unknown> };
    expect(await readyz()).toMatchObject({
      status: 'ready',
      inbox: { connected: true, queue: INBOX, session, commands: 0, lastError: null },
    });
    const { ServiceBusClient } = await import('@azure/service-bus');
    const client = new ServiceBusClient(peer.connectionString());
    const sender = client.createSender(INBOX);
    const now = Math.floor(Date.now() / 1000);
    const base: ApprovalCommand = {
      v: 1,
      id: '',
      vm: session,
      eventId: e.eventId,
      by: 'mallory',
      via: 'api',
      reason: '',
      nonce: null,
      iat: now,
      exp: now + 600,
    };
    const send = async (c: ApprovalCommand, key = privateKeyOf(keys.signingKey)!, messageId = c.id, to = session) => {
      const { body, signature } = signCommand(key, c);
      await sender.sendMessages({ body, messageId, sessionId: to, applicationProperties: { 'se-bridge-signature': signature } });
    };
    const other = privateKeyOf(fleetKeys().signingKey)!;
    await send({ ...base, id: commandId(session, { webhookId: 'forged' }) }, other);
    await send({ ...base, id: commandId('vm-b', { webhookId: 'foreign' }), vm: 'vm-b' });
    await send({ ...base, id: commandId(session, { webhookId: 'expired' }), exp: now - 1 });
    await send({ ...base, id: commandId(session, { webhookId: 'other-id' }) }, undefined, 'f'.repeat(32));
    await waitFor(() => peer!.queues.queue(INBOX).deadLetters.length === 4, 'four dead letters');
    expect(peer.queues.queue(INBOX).deadLetters.map((d) => d.reason)).toEqual(['BAD_SIGNATURE', 'OTHER_VM', 'EXPIRED', 'MALFORMED']);
    expect(a.sim.startRequests).toEqual([]);

    // a genuine command applies; a copy of it sent later (outside duplicate detection's reach: another messageId is
    // refused, the same one dropped) is a replay once duplicate detection forgot it
    const good = { ...base, id: commandId(session, { webhookId: 'good' }) };
    await send(good);
    await waitFor(() => a.sim.startRequests.length === 1, 'the approval');
    peer.queues.queue(INBOX).seen.clear();
    await send(good);
    await waitFor(() => peer!.queues.queue(INBOX).deadLetters.length === 5, 'the replay dead-lettered');
    expect(peer.queues.queue(INBOX).deadLetters[4]).toMatchObject({ reason: 'REPLAYED' });
    expect(a.sim.startRequests).toHaveLength(1);

    // the connection drops: the bridge accepts its session again and goes on
    peer.dropAll();
    await waitFor(() => a.bridge.inbox?.connected === false, 'the inbox to notice');
    expect((await readyz()).inbox).toMatchObject({ connected: false, commands: 6, lastError: expect.any(String) });
    expect(await a.bridge.metrics.registry.metrics()).toMatch(/\nsebridge_inbox_connected 0\n/);
    await waitFor(() => a.bridge.inbox?.connected, 'the inbox session again');
    const e2 = await scheduled(a);
    const c2 = new ServiceBusClient(peer.connectionString());
    const { body, signature } = signCommand(privateKeyOf(keys.signingKey)!, {
      ...base,
      eventId: e2.eventId,
      id: commandId(session, { webhookId: 'after-drop' }),
    });
    await c2.createSender(INBOX).sendMessages({
      body,
      messageId: commandId(session, { webhookId: 'after-drop' }),
      sessionId: session,
      applicationProperties: { 'se-bridge-signature': signature },
    });
    await waitFor(() => a.sim.startRequests.length === 2, 'the approval after the reconnection');
    expect(await a.bridge.metrics.registry.metrics()).toMatch(/\nsebridge_inbox_connected 1\n/);
    expect(await a.bridge.metrics.registry.metrics()).toMatch(/sebridge_inbox_commands_total\{result="dead-lettered"\} 5\b/);
    await c2.close();
    await client.close().catch(() => undefined);
  });

  it('approves through a link and a Slack button on the relay; a VM key cannot speak for another VM', async () => {
    peer = await fleetPeer();
    const keys = fleetKeys();
    const relay = await relayOn(peer, keys, { replyWaitMs: 3000 });
    const a = await fleetBridge(peer, keys, 'vm-a', { relayUrl: relay.url });
    const b = await fleetBridge(peer, keys, 'vm-b', { relayUrl: relay.url });
    const [e1, e2] = [await scheduled(a), await scheduled(a)];
    const eb = await scheduled(b);
    const ce = (h: Harness, id: string) =>
      h.events().find((x) => x.subject === id && x.type.endsWith('.scheduled')) as unknown as BridgeEvent;
    const link = a.bridge.approvalLinks!.link(ce(a, e1.eventId))!;
    expect(link.startsWith(`${relay.url}/v1/approve?token=`)).toBe(true);
    const token = new URL(link).searchParams.get('token')!;

    const pageRes = await fetch(link, { headers: { accept: 'text/html' } });
    expect(pageRes.status).toBe(200);
    expect(await pageRes.text()).toContain(e1.eventId);
    const posted = await fetch(`${relay.url}/v1/approve`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${token}`,
    });
    expect(posted.status).toBe(200);
    expect(await posted.json()).toMatchObject({ eventId: e1.eventId, status: 'approved' });
    expect(a.sim.startRequests.map((s) => s.eventIds)).toEqual([[e1.eventId]]);

    // Slack: the button's token, a signed interaction, the message updated through response_url
    const slack = new HttpPeer();
    await slack.listen();
    const slackToken = a.bridge.approvalLinks!.token(ce(a, e2.eventId))!;
    const payload = JSON.stringify({
      type: 'block_actions',
      user: { id: 'U1', username: 'carol' },
      actions: [{ action_id: 'se_bridge_approve', value: slackToken }],
      response_url: `${slack.url}/respond`,
      message: { blocks: [{ type: 'actions' }] },
    });
    const form = `payload=${encodeURIComponent(payload)}`;
    const ts = String(Math.floor(Date.now() / 1000));
    const sr = await fetch(`${relay.url}/v1/slack/interactions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-slack-request-timestamp': ts,
        'x-slack-signature': slackSignature('fleet-slack-signing-secret', ts, form),
      },
      body: form,
    });
    expect(sr.status).toBe(200);
    await waitFor(() => slack.requests.length === 1, 'the Slack message update');
    expect(JSON.parse(slack.requests[0]!.body)).toMatchObject({
      replace_original: true,
      text: expect.stringContaining('Approved by <@U1>'),
    });
    expect(a.sim.startRequests.map((s) => s.eventIds)).toEqual([[e1.eventId], [e2.eventId]]);
    await slack.close();

    // vm-a's own link key signing a token that names vm-b: the relay checks it with vm-b's key
    const aKey = linkKeyFor(Buffer.from(keys.fleetKey, 'base64'), sessionOf(a.sim));
    const forged = issueToken(aKey, { e: eb.eventId, v: sessionOf(b.sim), x: Math.floor(Date.now() / 1000) + 600 });
    const refused = await fetch(`${relay.url}/v1/approve`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${forged}`,
    });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('TOKEN_BAD_SIGNATURE');
    expect(b.sim.startRequests).toEqual([]);
    // a used link again: the first answer, and nothing sent to the VM
    const sent = peer.messages.filter((m) => m.address === INBOX).length;
    const again = await fetch(`${relay.url}/v1/approve`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${token}`,
    });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ eventId: e1.eventId, status: 'approved' });
    expect(peer.messages.filter((m) => m.address === INBOX)).toHaveLength(sent);
    expect(a.sim.startRequests).toHaveLength(2);
  });

  it('two relay replicas given the same request approve once', async () => {
    peer = await fleetPeer();
    const keys = fleetKeys();
    const [r1, r2] = [await relayOn(peer, keys, { replyWaitMs: 3000 }), await relayOn(peer, keys, { replyWaitMs: 3000 })];
    const a = await fleetBridge(peer, keys, 'vm-a');
    const e = await scheduled(a);
    const body = { vm: a.bridge.identity.resourceId, eventId: e.eventId, approver: 'dave' };
    const [x, y] = await Promise.all([api(r1, body, 'msg_same'), api(r2, body, 'msg_same')]);
    expect([x.status, y.status].sort()).toEqual([200, 202]);
    expect(a.sim.startRequests).toHaveLength(1);
    expect(peer.queues.queue(INBOX).duplicatesDropped).toBe(1);
    await waitFor(() => a.kinds().includes(`approved:${e.eventId}`), 'the approved CloudEvent');
    expect(a.events().filter((x) => x.type.endsWith('.approved'))).toHaveLength(1);
  });

  it('answers 503 with the tracking id when Service Bus takes the connection but never the command; the id then shows it pending', async () => {
    peer = await fleetPeer();
    const keys = fleetKeys();
    const relay = await relayOn(peer, keys, { replyWaitMs: 3000, sendTimeoutMs: 500 });
    const a = await fleetBridge(peer, keys, 'vm-a', { start: false });
    const e = a.sim.addEvent({ noticeMs: 600_000 });
    // the peer leaves the transfer unsettled: the SDK would wait for it past any client's patience
    peer.inject({ kind: 'stall', count: 1, address: INBOX });
    const r = await api(relay, { vm: a.bridge.identity.resourceId ?? sessionOf(a.sim), eventId: e.eventId }, 'msg_silent');
    expect(r.status).toBe(503);
    expect(r.json).toMatchObject({
      error: { code: 'SERVICE_BUS_UNAVAILABLE' },
      trackingId: commandId(sessionOf(a.sim), { webhookId: 'msg_silent' }),
    });
    expect((await track(relay, r.json.trackingId)).json).toMatchObject({
      status: 'pending',
      trackingId: r.json.trackingId,
      eventId: e.eventId,
    });
  });

  it('caps the connections of one address with a 429; another address and the probes are still served', async () => {
    peer = await fleetPeer();
    const keys = fleetKeys();
    const relay = await relayOn(peer, keys, { maxConnectionsPerClient: 3 });
    const held = [await openFrom(relay.url, '127.0.0.1'), await openFrom(relay.url, '127.0.0.1'), await openFrom(relay.url, '127.0.0.1')];
    // the fourth from the same address gets an answer it can act on: 429 with Retry-After, then closed
    const over = await getFrom(relay.url, '127.0.0.1', '/livez');
    expect(over).toMatch(/^HTTP\/1\.1 429 /);
    expect(over).toMatch(/\r\nretry-after: 1\r\n/i);
    expect(over).toMatch(/\r\nconnection: close\r\n/i);
    expect(await getFrom(relay.url, '127.0.0.2', '/livez')).toMatch(/^HTTP\/1\.1 200 /);
    for (const h of held) h.socket.destroy();
  });

  it("refuses a public key that is not the signing key's, naming it", async () => {
    peer = await fleetPeer();
    const keys = fleetKeys();
    const { RelayConfig } = await import('../../src/relay/config.ts');
    const good = RelayConfig.safeParse({ ...relayInput(peer, keys), publicKey: keys.publicKey });
    expect(good.success).toBe(true);
    const bad = RelayConfig.safeParse({ ...relayInput(peer, keys), publicKey: fleetKeys().publicKey });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual([
      expect.stringMatching(/^publicKey: is not the public key of signingKey/),
    ]);
  });

  it('believes an outcome only when the VM it names signed it', async () => {
    peer = await fleetPeer();
    const keys = fleetKeys();
    const relay = await relayOn(peer, keys, { replyWaitMs: 3000 });
    const a = await fleetBridge(peer, keys, 'vm-a', { start: false });
    const e = a.sim.addEvent({ noticeMs: 600_000 });
    const vmA = sessionOf(a.sim);
    // vm-b, compromised, answers for vm-a (which is down) with its own link key
    const bKey = linkKeyFor(Buffer.from(keys.fleetKey, 'base64'), 'vm-b');
    const id = commandId(vmA, { webhookId: 'msg_forged_outcome' });
    const forged = Buffer.from(
      JSON.stringify({
        v: 1,
        commandId: id,
        vm: vmA,
        eventId: e.eventId,
        outcome: 'not-approvable',
        code: 'NOT_APPROVABLE',
        message: 'forged',
        by: null,
        via: null,
        at: new Date().toISOString(),
      }),
    );
    const { ServiceBusClient } = await import('@azure/service-bus');
    const client = new ServiceBusClient(peer.connectionString());
    const pending = api(relay, { vm: vmA, eventId: e.eventId }, 'msg_forged_outcome');
    await waitFor(() => peer!.messages.some((m) => m.address === INBOX), 'the command');
    await client.createSender('se-bridge-approval-replies').sendMessages({
      body: forged,
      sessionId: relay.bus!.replySession,
      correlationId: id,
      applicationProperties: { 'se-bridge-signature': signOutcome(bKey, forged), vm: vmA },
    });
    const r = await pending;
    expect(r.status).toBe(202);
    expect(await relay.metrics.registry.metrics()).toMatch(/sebridge_relay_outcomes_total\{outcome="unverified"\} 1\b/);
    // the genuine VM, once up, applies the command that waited for it
    await a.bridge.start();
    await waitFor(() => a.sim.startRequests.length === 1, 'the approval');
    await client.close();
  });

  it('abandons a command it cannot handle (its state database gone), so that it comes again', async () => {
    peer = await fleetPeer();
    const keys = fleetKeys();
    const relay = await relayOn(peer, keys, { replyWaitMs: 1000 });
    const a = await fleetBridge(peer, keys, 'vm-a');
    const e = await scheduled(a);
    a.bridge.store.close();
    const r = await api(relay, { vm: sessionOf(a.sim), eventId: e.eventId });
    expect(r.status).toBe(202);
    await waitFor(
      () => a.lines.filter((l) => l.code === 'INBOX_COMMAND_FAILED').length >= 2,
      'the command abandoned, delivered again and abandoned again',
    );
    expect(peer.queues.queue(INBOX).deadLetters).toEqual([]);
    expect(peer.queues.queue(INBOX).completed).toEqual([]);
    expect(a.sim.startRequests).toEqual([]);
  });

  it('abandons a command IMDS failed transiently, and applies it when it comes again', async () => {
    peer = await fleetPeer();
    const keys = fleetKeys();
    const relay = await relayOn(peer, keys);
    const a = await fleetBridge(peer, keys, 'vm-a');
    const e = await scheduled(a);
    // StartRequests answers 500 to every try of the first delivery (4 tries)
    a.sim.injectFault({ kind: 'status', status: 500, count: 4, target: 'start' });
    const r = await api(relay, { vm: a.bridge.identity.resourceId, eventId: e.eventId });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ status: 'approved' });
    await waitFor(() => peer!.queues.queue(INBOX).completed.length === 1, 'the completion');
    expect(peer.queues.queue(INBOX).completed[0]!.deliveryCount).toBe(1);
    expect(a.sim.startRequests).toHaveLength(1);
    // counted once its settlement is acknowledged
    const metrics = await waitFor(async () => {
      const text = await a.bridge.metrics.registry.metrics();
      return /sebridge_inbox_commands_total\{result="approved"\} 1\b/.test(text) ? text : null;
    }, 'the approved command counted');
    expect(metrics).toMatch(/sebridge_inbox_commands_total\{result="failed"\} 1\b/);
  });

  it('loses nothing when the relay restarts or the VM is away: the command waits in Service Bus', async () => {
    peer = await fleetPeer();
    const keys = fleetKeys();
    const first = await relayOn(peer, keys, { replyWaitMs: 500 });
    const a = await fleetBridge(peer, keys, 'vm-a', { start: false });
    const e = a.sim.addEvent({ noticeMs: 600_000 });
    const r = await api(first, { vm: sessionOf(a.sim), eventId: e.eventId, approver: 'erin' });
    expect(r.status).toBe(202);
    expect(r.json).toMatchObject({ status: 'accepted', trackingId: expect.stringMatching(/^[0-9a-f]{32}$/) });
    await first.close();
    relays.splice(relays.indexOf(first), 1);
    const second = await relayOn(peer, keys);
    expect((await fetch(`${second.url}/readyz`)).status).toBe(200);
    await a.bridge.start();
    await waitFor(() => a.sim.startRequests.length === 1, 'the approval once the VM is back');
    await waitFor(() => a.kinds().includes(`approved:${e.eventId}`), 'the approved CloudEvent');
    expect(a.events().find((x) => x.type.endsWith('.approved'))!.data.approval).toMatchObject({ by: 'erin', via: 'api' });
  });
});
