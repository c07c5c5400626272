/**
 * An approval `via: arm` when Resource Manager refuses it, does not answer, or the fleet's store
 * cannot be read: the relay runs in this process (its log captured), the store is Azurite behind a
 * gate the test closes, Resource Manager an HTTPS stand-in written from its REST reference that
 * answers each refusal Resource Manager gives (`{"error": {"code", "message"}}`, Retry-After in
 * seconds), or nothing at all; the token comes from the IMDS simulator's managed identity
 * endpoint. No Azure service runs here. For each: what the relay answers, that nothing is
 * recorded as approved, whether the group's slot is given back, and what is logged.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRelay, type RunningRelay } from '../../src/relay/relay.ts';
import type { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { ArmStandIn, scheduledEventOf, SUBSCRIPTION, vmId, type ArmRefusal } from '../../testkit/azure-feed.ts';
import { API_SECRET, fleetKeys, relayConfig } from '../../testkit/fleet.ts';
import { FleetStores } from '../../testkit/fleet-stores.ts';
import { ArmRelayPeers, liveSlots, writeRecord } from '../../testkit/hostile-fleet.ts';
import { captureLogger, postApproval, ROOT } from '../helpers.ts';

const TLS = {
  key: readFileSync(join(ROOT, 'test/fixtures/tls/key.pem'), 'utf8'),
  cert: readFileSync(join(ROOT, 'test/fixtures/tls/cert.pem'), 'utf8'),
};
const KEYS = fleetKeys();
const READ_KEY = 'fleet-read-key-0123456789';
const E = (n: number) => `00000000-0000-4000-c000-${String(n).padStart(12, '0')}`;

let stores: FleetStores;
let peer: AmqpPeer;
let identity: ImdsSimulator;
let arm: ArmStandIn;
const relays: RunningRelay[] = [];

let peers: ArmRelayPeers;

beforeAll(async () => {
  peers = await ArmRelayPeers.start(TLS);
  ({ stores, peer, identity, arm } = peers);
}, 60_000);
afterEach(async () => {
  stores.gates.blob.open();
  await Promise.all(relays.splice(0).map((r) => r.close()));
  arm.rows = [];
  arm.refusals.length = 0;
});
afterAll(async () => {
  await peers?.stop();
});

const store = (container: string) => ({ ...stores.config('blob'), container }) as never;

/** relay starts the relay in this process over `container`, its log captured; `feed`: Resource Graph configured. */
async function relay(container: string, o: { feed?: boolean; timeoutMs?: number; clientId?: string } = {}) {
  const config = relayConfig(peer, KEYS, {
    fleet: { store: store(container), cacheMs: 0, storeTimeoutMs: 2000 },
    readKeys: [READ_KEY],
    azure: {
      subscriptions: [SUBSCRIPTION],
      checkSeconds: 3600,
      arm: {
        endpoint: arm.peer.url,
        caFile: join(ROOT, 'test/fixtures/tls/cert.pem'),
        timeoutMs: o.timeoutMs ?? 5000,
        ...(o.clientId === undefined ? {} : { credential: { kind: 'managedIdentity', clientId: o.clientId } }),
      },
      ...(o.feed ? { resourceGraph: { intervalSeconds: 3600 } } : {}),
    },
  });
  const { logger, lines } = captureLogger();
  const r = await startRelay(config, logger, { host: '127.0.0.1', port: 0 });
  relays.push(r);
  return { r, lines };
}

const approve = (r: RunningRelay, body: Record<string, unknown>) =>
  postApproval(r.url, API_SECRET, { via: 'arm', approver: 'oncall', ...body });

/** the live slots of a group, as its store holds them */
const slotsOf = (container: string, group: string) => liveSlots(store(container), group);

/** what the relay's read API says of an event: Azure's record of it, with who approved it (if any) */
async function azureOf(r: RunningRelay, eventId: string): Promise<Record<string, any> | undefined> {
  const res = await fetch(`${r.url}/v1/fleet/events?limit=1000`, { headers: { authorization: `Bearer ${READ_KEY}` } });
  const events = ((await res.json()) as { events: { eventId: string; azure?: Record<string, any> }[] }).events;
  return events.find((e) => e.eventId === eventId)?.azure;
}

const refusedLines = (lines: Record<string, unknown>[]) => lines.filter((l) => String(l.msg).startsWith('relay: approval via arm refused'));
const approvedLines = (lines: Record<string, unknown>[]) => lines.filter((l) => l.msg === 'relay: approved through Resource Manager');

describe("approval via arm: Resource Manager's refusals", () => {
  it('each refusal answered with its code, nothing recorded as approved, the slot given back, and logged with who asked', async () => {
    const container = 'arm-refusals';
    await writeRecord(store(container), 'app', {
      name: 'app-1',
      resourceId: vmId('app-1'),
      events: [{ eventId: E(1) }],
      maxUnavailable: 1,
    });
    arm.rows = [scheduledEventOf({ resourceId: vmId('app-1'), eventId: E(1) })];
    const { r, lines } = await relay(container);
    const table: [ArmRefusal, number, string, number | undefined][] = [
      [{ status: 400 }, 502, 'ARM_REFUSED', undefined],
      [{ status: 401 }, 502, 'ARM_FORBIDDEN', undefined],
      [{ status: 403 }, 502, 'ARM_FORBIDDEN', undefined],
      [{ status: 409 }, 409, 'ARM_CONFLICT', undefined],
      [{ status: 429, retryAfter: 7 }, 503, 'ARM_UNAVAILABLE', 7],
      [{ status: 429 }, 503, 'ARM_UNAVAILABLE', undefined],
      [{ status: 500 }, 503, 'ARM_UNAVAILABLE', undefined],
      [{ status: 502, text: '<html>Bad Gateway</html>' }, 503, 'ARM_UNAVAILABLE', undefined],
      [{ status: 503, retryAfter: 30 }, 503, 'ARM_UNAVAILABLE', 30],
      [{ status: 504 }, 503, 'ARM_UNAVAILABLE', undefined],
    ];
    for (const [refusal, status, code, retryAfterSeconds] of table) {
      arm.refusals.push(refusal);
      const a = await approve(r, { vm: 'app-1', eventId: E(1), reason: 'its bridge is gone' });
      expect({ refusal, status: a.status, code: a.json.error?.code, retryAfterSeconds: a.json.retryAfterSeconds }).toEqual({
        refusal,
        status,
        code,
        retryAfterSeconds,
      });
      expect(a.json.error.message).toContain(`Resource Manager answered ${(refusal as { status: number }).status}: `);
      // the group's slot free again, nothing acknowledged, nothing recorded as approved
      expect(await slotsOf(container, 'app')).toEqual([]);
    }
    expect(arm.acknowledged.filter((x) => x.eventId === E(1))).toEqual([]);
    expect(await azureOf(r, E(1))).toBeUndefined();
    expect(approvedLines(lines)).toEqual([]);
    // what the identity needs, said where an operator reads it
    const forbidden = await (arm.refusals.push({ status: 403 }), approve(r, { vm: 'app-1', eventId: E(1) }));
    expect(forbidden.json.error.message).toMatch(/AuthorizationFailed refused with 403 \(.*Scheduled Events Contributor/);
    // each logged once, with its code, who asked and from where
    expect(refusedLines(lines).map((l) => [l.code, l.status])).toEqual([
      ...table.map(([, status, code]) => [code, status]),
      ['ARM_FORBIDDEN', 502],
    ]);
    for (const l of refusedLines(lines))
      expect(l).toMatchObject({ level: 40, vm: 'app-1', eventId: E(1), by: 'oncall', client: '127.0.0.1', force: false });
    // Resource Manager taking it at last: approved in the slot, once
    expect(await approve(r, { vm: 'app-1', eventId: E(1) })).toMatchObject({ status: 200, json: { status: 'approved' } });
    expect(await slotsOf(container, 'app')).toMatchObject([{ vm: 'app-1', eventIds: [E(1)] }]);
  }, 60_000);

  it('an event Resource Manager does not know (404) is UNKNOWN_EVENT; a forced approval of a VM no record names takes no slot and gives none back', async () => {
    const container = 'arm-unknown';
    await writeRecord(store(container), 'web', {
      name: 'web-1',
      resourceId: vmId('web-1'),
      events: [{ eventId: E(2) }],
      maxUnavailable: 1,
    });
    const { r, lines } = await relay(container, { feed: true });
    // Azure lists both events; Resource Manager (acknowledging) knows neither: rows come and go between the two asks
    arm.rows = [
      scheduledEventOf({ resourceId: vmId('web-1'), eventId: E(2) }),
      scheduledEventOf({ resourceId: vmId('ghost-1'), eventId: E(3) }),
    ];
    arm.refusals.push({ status: 404 });
    const unknown = await approve(r, { vm: vmId('web-1'), eventId: E(2) });
    expect(unknown).toMatchObject({ status: 404, json: { error: { code: 'UNKNOWN_EVENT', message: /Resource Manager answered 404/ } } });
    expect(await slotsOf(container, 'web')).toEqual([]);
    arm.refusals.push({ status: 409 });
    const forced = await approve(r, { vm: vmId('ghost-1'), eventId: E(3), force: true, reason: 'no bridge on it' });
    expect(forced).toMatchObject({ status: 409, json: { error: { code: 'ARM_CONFLICT' } } });
    expect(refusedLines(lines).map((l) => [l.code, l.force])).toEqual([
      ['UNKNOWN_EVENT', false],
      ['ARM_CONFLICT', true],
    ]);
    expect(await azureOf(r, E(3))).not.toHaveProperty('acknowledged');
  }, 60_000);
});

describe('approval via arm: Resource Manager that does not answer', () => {
  it('503 within arm.timeoutMs, the slot kept (Azure may have taken it); the repeat is approved in that slot and recorded; the next says already-approved', async () => {
    const container = 'arm-hang';
    await writeRecord(store(container), 'db', { name: 'db-1', resourceId: vmId('db-1'), events: [{ eventId: E(4) }], maxUnavailable: 1 });
    arm.rows = [scheduledEventOf({ resourceId: vmId('db-1'), eventId: E(4) })];
    const { r, lines } = await relay(container, { timeoutMs: 1000 });
    arm.refusals.push('hang');
    const hung = await approve(r, { vm: 'db-1', eventId: E(4) });
    expect(hung).toMatchObject({ status: 503, json: { error: { code: 'ARM_UNAVAILABLE', message: /did not answer.*slot is kept/ } } });
    expect(hung.json).not.toHaveProperty('retryAfterSeconds');
    expect(refusedLines(lines).map((l) => l.code)).toEqual(['ARM_UNAVAILABLE']);
    expect(await slotsOf(container, 'db')).toMatchObject([{ vm: 'db-1', eventIds: [E(4)] }]);
    expect(await azureOf(r, E(4))).toBeUndefined();

    const again = await approve(r, { vm: 'db-1', eventId: E(4), approver: 'alice', reason: 'patch night', force: false });
    expect(again).toMatchObject({ status: 200, json: { status: 'approved', vm: 'db-1', via: 'arm', approvedBy: 'alice' } });
    expect(again.json).not.toHaveProperty('forced');
    expect(await slotsOf(container, 'db')).toHaveLength(1);
    expect(arm.acknowledged.filter((x) => x.eventId === E(4))).toHaveLength(1);
    expect(await azureOf(r, E(4))).toMatchObject({ acknowledged: { by: 'alice', at: again.json.at, reason: 'patch night' } });
    expect(approvedLines(lines)).toMatchObject([
      { vm: 'db-1', eventId: E(4), by: 'alice', client: '127.0.0.1', via: 'arm', group: 'db', forced: false },
    ]);

    const third = await approve(r, { vm: vmId('db-1'), eventId: E(4), approver: 'bob' });
    expect(third).toMatchObject({ status: 200, json: { status: 'already-approved', approvedBy: 'alice', at: again.json.at } });
    expect(arm.acknowledged.filter((x) => x.eventId === E(4))).toHaveLength(1);
  }, 60_000);
  it("no token from the relay's identity within arm.timeoutMs: 503, nothing sent, so the slot is given back", async () => {
    const container = 'arm-no-token';
    await writeRecord(store(container), 'mq', { name: 'mq-1', resourceId: vmId('mq-1'), events: [{ eventId: E(6) }], maxUnavailable: 1 });
    arm.rows = [scheduledEventOf({ resourceId: vmId('mq-1'), eventId: E(6) })];
    // a user-assigned identity of its own: no token of the other tests' identity is at hand
    const { r, lines } = await relay(container, { timeoutMs: 1000, clientId: '44444444-4444-4444-8444-444444444444' });
    const sent = arm.peer.requests.length;
    identity.injectFault({ kind: 'hang', target: 'token', count: 100 });
    try {
      const a = await approve(r, { vm: 'mq-1', eventId: E(6) });
      expect(a).toMatchObject({
        status: 503,
        json: { error: { code: 'ARM_UNAVAILABLE', message: /no token for Resource Manager.*given back/ } },
      });
    } finally {
      identity.clearFaults();
    }
    expect(arm.peer.requests.length).toBe(sent);
    expect(await slotsOf(container, 'mq')).toEqual([]);
    expect(refusedLines(lines).map((l) => [l.code, l.status])).toEqual([['ARM_UNAVAILABLE', 503]]);
  }, 60_000);
});

describe('approval via arm: a store that cannot be read', () => {
  it('stops the approval, forced or not: 503 FLEET_STORE_UNAVAILABLE, nothing sent to Resource Manager', async () => {
    const container = 'arm-unread';
    await writeRecord(store(container), 'kv', { name: 'kv-1', resourceId: vmId('kv-1'), events: [{ eventId: E(5) }], maxUnavailable: 1 });
    arm.rows = [scheduledEventOf({ resourceId: vmId('kv-1'), eventId: E(5) })];
    const { r, lines } = await relay(container);
    const sent = arm.peer.requests.length;
    stores.gates.blob.close();
    for (const body of [
      { vm: vmId('kv-1'), eventId: E(5) },
      { vm: vmId('kv-1'), eventId: E(5), force: true, reason: 'the disk is failing' },
    ]) {
      const a = await approve(r, body);
      expect(a).toMatchObject({ status: 503, json: { error: { code: 'FLEET_STORE_UNAVAILABLE', message: /could not be read/ } } });
    }
    expect(arm.peer.requests.length).toBe(sent);
    expect(refusedLines(lines).map((l) => l.code)).toEqual(['FLEET_STORE_UNAVAILABLE', 'FLEET_STORE_UNAVAILABLE']);
    stores.gates.blob.open();
    expect(await slotsOf(container, 'kv')).toEqual([]);
  }, 60_000);
});
