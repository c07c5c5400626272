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
import { memberKey } from '../../src/fleet/budget/records.ts';
import { startRelay, type RunningRelay } from '../../src/relay/relay.ts';
import type { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { ArmStandIn, scheduledEventOf, SUBSCRIPTION, vmId, type ArmRefusal } from '../../testkit/azure-feed.ts';
import { API_SECRET, fleetKeys, relayConfig } from '../../testkit/fleet.ts';
import { FleetStores } from '../../testkit/fleet-stores.ts';
import { ArmRelayPeers, liveSlots, writeRecord } from '../../testkit/hostile-fleet.ts';
import { refusal as kubeRefusal } from '../../testkit/kube-faults.ts';
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
async function relay(
  container: string,
  o: {
    feed?: boolean;
    timeoutMs?: number;
    clientId?: string;
    groups?: Record<string, unknown>;
    eventGrid?: boolean;
    subscriptions?: string[];
    store?: never;
  } = {},
) {
  const config = relayConfig(peer, KEYS, {
    fleet: { store: o.store ?? store(container), cacheMs: 0, storeTimeoutMs: 2000, ...(o.groups ? { groups: o.groups } : {}) },
    readKeys: [READ_KEY],
    azure: {
      subscriptions: o.subscriptions ?? [SUBSCRIPTION],
      ...(o.eventGrid ? { eventGrid: { key: 'event-grid-delivery-key-42' } } : {}),
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
  return (await rowsOf(r, eventId))[0]?.azure;
}

/** the rows of the relay's read API for an event, one per VM it lists it for */
async function rowsOf(r: RunningRelay, eventId: string): Promise<{ vm: string; azure?: Record<string, any> }[]> {
  const res = await fetch(`${r.url}/v1/fleet/events?limit=1000`, { headers: { authorization: `Bearer ${READ_KEY}` } });
  const events = ((await res.json()) as { events: { eventId: string; vm: string; azure?: Record<string, any> }[] }).events;
  return events.filter((e) => e.eventId === eventId);
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
    expect(unknown).toMatchObject({
      status: 404,
      json: { error: { code: 'UNKNOWN_EVENT', message: expect.stringMatching(/Resource Manager answered 404/) } },
    });
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
    expect(hung).toMatchObject({
      status: 503,
      json: { error: { code: 'ARM_UNAVAILABLE', message: expect.stringMatching(/did not answer.*slot is kept/) } },
    });
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
        json: { error: { code: 'ARM_UNAVAILABLE', message: expect.stringMatching(/no token for Resource Manager.*given back/) } },
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
      expect(a).toMatchObject({
        status: 503,
        json: { error: { code: 'FLEET_STORE_UNAVAILABLE', message: expect.stringMatching(/could not be read/) } },
      });
    }
    expect(arm.peer.requests.length).toBe(sent);
    expect(refusedLines(lines).map((l) => l.code)).toEqual(['FLEET_STORE_UNAVAILABLE', 'FLEET_STORE_UNAVAILABLE']);
    stores.gates.blob.open();
    expect(await slotsOf(container, 'kv')).toEqual([]);
  }, 60_000);
});

/** listedVm writes the record of one VM of `group` listing `eventId` (a budget of one), and gives Azure's row of the event */
async function listedVm(at: never, group: string, name: string, eventId: string) {
  await writeRecord(at, group, { name, resourceId: vmId(name), events: [{ eventId }], maxUnavailable: 1 });
  return scheduledEventOf({ resourceId: vmId(name), eventId });
}

/** a time `hours` from now, in whole seconds: a maintenance's NotBefore, so its recorded end is NotBefore and the margin */
const hoursOn = (hours: number) => new Date(Math.floor(Date.now() / 1000) * 1000 + hours * 3_600_000).toISOString();
const plusSeconds = (iso: string, seconds: number) => new Date(Date.parse(iso) + seconds * 1000).toISOString();

describe("approval via arm: the group's budget, as the relay counts it", () => {
  it("a group whose bridges are all gone keeps the budget its records state: the first in its member's slot, until the maintenance's recorded end, the next HELD", async () => {
    const container = 'arm-budget';
    const from = arm.acknowledged.length;
    const notBefore = hoursOn(2);
    const gone = ['db-1', 'db-2', 'db-3'];
    for (const [i, name] of gone.entries())
      await writeRecord(store(container), 'stale', {
        ...{ name, resourceId: vmId(name), events: [{ eventId: E(10 + i), notBefore }], maxUnavailable: 1, agoSeconds: 30 * 86_400 },
        ...(i === 0 ? { zone: '2' } : {}),
      });
    // a member that says it beats hourly: its slot's margin is three of its beats
    await writeRecord(store(container), 'slow', {
      ...{ name: 'slow-1', resourceId: vmId('slow-1'), events: [{ eventId: E(13), notBefore }], maxUnavailable: 1 },
      heartbeatSeconds: 3600,
    });
    arm.rows = [...gone, 'slow-1'].map((n, i) => scheduledEventOf({ resourceId: vmId(n), eventId: E(10 + i) }));
    const { r, lines } = await relay(container);

    const first = await approve(r, { vm: 'db-1', eventId: E(10), approver: 'alice' });
    expect(first).toMatchObject({ status: 200, json: { status: 'approved', vm: 'db-1', approvedBy: 'alice', via: 'arm', eventId: E(10) } });
    expect(first.json).not.toHaveProperty('forced');
    // who asked, in the event's record the relay writes (no reason given, not forced: neither said)
    expect(await azureOf(r, E(10))).toEqual({
      status: 'Scheduled',
      source: 'relay',
      updatedAt: first.json.at,
      acknowledged: { by: 'alice', at: first.json.at },
    });
    const held = await approve(r, { vm: 'db-2', eventId: E(11) });
    expect(held).toMatchObject({
      status: 409,
      json: {
        status: 'held',
        eventId: E(11),
        holders: [{ vm: 'db-1', eventId: E(10) }],
        error: { code: 'HELD', message: expect.stringMatching(/held by db-1.*\(the budget from every record of the group \(3\)\)$/) },
      },
    });
    expect(await approve(r, { vm: 'db-3', eventId: E(12) })).toMatchObject({ status: 409, json: { error: { code: 'HELD' } } });
    // the slot in db-1's name, as its bridge would hold it, in its zone, until NotBefore and the margin (half an hour)
    expect(await slotsOf(container, 'stale')).toEqual([
      {
        ...{
          member: memberKey({ name: 'db-1', resourceId: vmId('db-1') }),
          vm: 'db-1',
          resourceId: expect.stringMatching(/virtualmachines\/db-1$/i),
        },
        ...{ eventIds: [E(10)], since: expect.any(String), until: plusSeconds(notBefore, 1800), mode: 'early', by: 'alice', zone: '2' },
        // the slot's first take, counted as a member counts it
        takes: 1,
      },
    ]);
    expect(arm.acknowledged.slice(from).map((a) => a.eventId)).toEqual([E(10)]);
    expect(refusedLines(lines).map((l) => [l.vm, l.code, l.status])).toEqual([
      ['db-2', 'HELD', 409],
      ['db-3', 'HELD', 409],
    ]);

    expect(await approve(r, { vm: 'slow-1', eventId: E(13) })).toMatchObject({ status: 200 });
    expect(await slotsOf(container, 'slow')).toMatchObject([{ vm: 'slow-1', until: plusSeconds(notBefore, 3 * 3600) }]);
  }, 60_000);

  it("records that disagree, or none that states a budget, refuse but a forced approval, which takes a slot on the record; the relay's fleet.groups decides over them", async () => {
    const container = 'arm-disagree';
    const from = arm.acknowledged.length;
    const liars = [
      { name: 'kv-1', maxUnavailable: 1, agoSeconds: 3600 },
      { name: 'kv-2', maxUnavailable: 1, agoSeconds: 3600 },
      { name: 'kv-3', maxUnavailable: 3, agoSeconds: 0 },
    ];
    for (const [i, m] of liars.entries())
      await writeRecord(store(container), 'liar', { ...m, resourceId: vmId(m.name), events: [{ eventId: E(20 + i) }] });
    await writeRecord(store(container), 'open', { name: 'ui-1', resourceId: vmId('ui-1'), events: [{ eventId: E(24) }] });
    arm.rows = [...liars.map((m, i) => scheduledEventOf({ resourceId: vmId(m.name), eventId: E(20 + i) }))];
    arm.rows.push(scheduledEventOf({ resourceId: vmId('ui-1'), eventId: E(24) }));
    const { r, lines } = await relay(container);

    const disagree = await approve(r, { vm: 'kv-1', eventId: E(20) });
    expect(disagree).toMatchObject({
      status: 409,
      json: { error: { code: 'FLEET_BUDGET_DISAGREES', message: expect.stringMatching(/kv-1: 1, kv-2: 1, kv-3: 3/) } },
    });
    const unknown = await approve(r, { vm: 'ui-1', eventId: E(24) });
    expect(unknown).toMatchObject({
      status: 409,
      json: { error: { code: 'FLEET_BUDGET_UNKNOWN', message: expect.stringMatching(/\(members: ui-1\)/) } },
    });
    expect(arm.acknowledged.slice(from)).toEqual([]);
    expect(await slotsOf(container, 'liar')).toEqual([]);

    const forced = await approve(r, { vm: 'ui-1', eventId: E(24), approver: 'carol', force: true, reason: 'its bridge is gone' });
    expect(forced).toMatchObject({ status: 200, json: { status: 'approved', forced: true, approvedBy: 'carol', vm: 'ui-1' } });
    expect(await slotsOf(container, 'open')).toMatchObject([{ vm: 'ui-1', mode: 'forced', by: 'carol', reason: 'its bridge is gone' }]);
    expect(await azureOf(r, E(24))).toMatchObject({
      source: 'relay',
      status: 'Scheduled',
      acknowledged: { by: 'carol', at: forced.json.at, reason: 'its bridge is gone', forced: true },
    });
    expect(approvedLines(lines)).toMatchObject([{ vm: 'ui-1', group: 'open', forced: true, by: 'carol' }]);

    // the relay's own statement of the group's budget decides, whatever its records say
    const stated = await relay(container, { groups: { liar: { maxUnavailable: 1 } } });
    expect(await approve(stated.r, { vm: 'kv-3', eventId: E(22) })).toMatchObject({ status: 200, json: { status: 'approved' } });
    expect(await approve(stated.r, { vm: 'kv-1', eventId: E(20) })).toMatchObject({
      status: 409,
      json: { error: { code: 'HELD', message: expect.stringMatching(/\(the budget from the relay's fleet\.groups\)$/) } },
    });
    expect((await slotsOf(container, 'liar')).map((x) => x.vm)).toEqual(['kv-3']);
  }, 60_000);

  it('the rate its fleet.groups states holds an approval past it, saying when the next may come; a forced one goes past it, stamped', async () => {
    const container = 'arm-rate';
    const names = ['q-1', 'q-2', 'q-3'];
    for (const [i, name] of names.entries())
      await writeRecord(store(container), 'paced', { name, resourceId: vmId(name), events: [{ eventId: E(30 + i) }] });
    arm.rows = names.map((n, i) => scheduledEventOf({ resourceId: vmId(n), eventId: E(30 + i) }));
    const { r } = await relay(container, { groups: { paced: { maxUnavailable: 3, rate: { approvals: 1, perSeconds: 3600 } } } });
    expect(await approve(r, { vm: 'q-1', eventId: E(30) })).toMatchObject({ status: 200, json: { status: 'approved' } });
    expect(await approve(r, { vm: 'q-2', eventId: E(31) })).toMatchObject({
      status: 409,
      json: {
        error: {
          code: 'HELD',
          message: expect.stringMatching(/allows 1 early approval in any 3600 s, and gave 1 .*; the next may come at /),
        },
      },
    });
    const forced = await approve(r, { vm: 'q-3', eventId: E(32), approver: 'carol', force: true, reason: 'cannot wait' });
    expect(forced).toMatchObject({ status: 200, json: { status: 'approved' } });
    // two slots taken, each stamped with its approval: the held one took none
    const slots = await slotsOf(container, 'paced');
    expect(slots.map((x) => x.vm).sort()).toEqual(['q-1', 'q-3']);
    expect(slots.flatMap((x) => (x.approvals ?? []).map((a) => a.eventId)).sort()).toEqual([E(30), E(32)]);
  }, 60_000);

  it("a member not healthy counts against the budget for as long as the longest bound its group's records state; a blackout holds all but a forced approval", async () => {
    const container = 'arm-held';
    const from = arm.acknowledged.length;
    const twoHoursAgo = new Date(Date.now() - 7_200_000).toISOString();
    const soon = hoursOn(1);
    const sick = (name: string, since: string, bound?: number) => ({
      ...{ name, resourceId: vmId(name), events: [], maxUnavailable: 1 },
      health: { healthy: false, since, detail: 'the queue is not consuming' },
      ...(bound === undefined ? {} : { unhealthyCountsForSeconds: bound }),
    });
    await writeRecord(store(container), 'sick', sick('mq-1', new Date().toISOString()));
    await writeRecord(store(container), 'sick', {
      name: 'mq-2',
      resourceId: vmId('mq-2'),
      events: [{ eventId: E(30) }],
      maxUnavailable: 1,
    });
    await writeRecord(store(container), 'long', sick('lq-1', twoHoursAgo, 86_400));
    await writeRecord(store(container), 'long', {
      name: 'lq-2',
      resourceId: vmId('lq-2'),
      events: [{ eventId: E(31) }],
      maxUnavailable: 1,
    });
    await writeRecord(store(container), 'was', sick('wq-1', twoHoursAgo));
    await writeRecord(store(container), 'was', { name: 'wq-2', resourceId: vmId('wq-2'), events: [{ eventId: E(32) }], maxUnavailable: 1 });
    await writeRecord(store(container), 'frozen', {
      ...{ name: 'ledger-1', resourceId: vmId('ledger-1'), events: [{ eventId: E(33) }], maxUnavailable: 1 },
      calendar: { digest: 'x', timeZone: 'UTC', open: false, inWindow: false, blackout: 'year-end', until: soon },
    });
    await writeRecord(store(container), 'cal', { name: 'cal-1', resourceId: vmId('cal-1'), events: [{ eventId: E(34) }] });
    await writeRecord(store(container), 'z', { name: 'z1-a', resourceId: vmId('z1-a'), events: [{ eventId: E(35) }], zone: '1' });
    await writeRecord(store(container), 'z', { name: 'z2-a', resourceId: vmId('z2-a'), events: [{ eventId: E(36) }], zone: '2' });
    arm.rows = ['mq-2', 'lq-2', 'wq-2', 'ledger-1', 'cal-1', 'z1-a', 'z2-a'].map((n, i) =>
      scheduledEventOf({ resourceId: vmId(n), eventId: E(30 + i) }),
    );
    const day = (d: number) => new Date(Date.now() + d * 86_400_000).toISOString().slice(0, 10);
    const calendar = { timeZone: 'UTC', blackouts: [{ name: 'freeze', from: day(-1), to: day(1) }] };
    const { r } = await relay(container, {
      groups: { cal: { maxUnavailable: 1, calendar }, z: { maxUnavailable: 2, zones: 'one-at-a-time' } },
    });

    expect(await approve(r, { vm: 'mq-2', eventId: E(30) })).toMatchObject({
      status: 409,
      json: { status: 'held', error: { code: 'HELD', message: expect.stringMatching(/mq-1 is not healthy/) } },
    });
    expect(await approve(r, { vm: 'lq-2', eventId: E(31) })).toMatchObject({
      status: 409,
      json: { error: { code: 'HELD', message: expect.stringMatching(/lq-1 is not healthy/) } },
    });
    // not healthy for longer than any record's bound (an hour): left out
    expect(await approve(r, { vm: 'wq-2', eventId: E(32) })).toMatchObject({ status: 200, json: { status: 'approved' } });

    const closed = await approve(r, { vm: 'ledger-1', eventId: E(33) });
    expect(closed).toMatchObject({
      status: 409,
      json: {
        status: 'held',
        eventId: E(33),
        error: {
          code: 'BLACKOUT',
          message: `group frozen's early approvals are held by the blackout year-end until ${soon}, as ledger-1's record says; force with a reason`,
        },
      },
    });
    expect(await approve(r, { vm: 'cal-1', eventId: E(34) })).toMatchObject({
      status: 409,
      json: { error: { code: 'BLACKOUT', message: expect.stringMatching(/the blackout freeze of the group's calendar/) } },
    });
    expect(await slotsOf(container, 'frozen')).toEqual([]);
    expect(arm.acknowledged.slice(from).map((a) => a.eventId)).toEqual([E(32)]);
    const forced = await approve(r, { vm: 'ledger-1', eventId: E(33), force: true, reason: 'the disk is failing' });
    expect(forced).toMatchObject({ status: 200, json: { forced: true } });
    // one zone at a time, as the relay's fleet.groups says: a second zone waits, though a slot is free
    expect(await approve(r, { vm: 'z1-a', eventId: E(35) })).toMatchObject({ status: 200 });
    expect(await approve(r, { vm: 'z2-a', eventId: E(36) })).toMatchObject({
      status: 409,
      json: { error: { code: 'HELD', message: expect.stringMatching(/zone/) } },
    });
    expect(await slotsOf(container, 'z')).toMatchObject([{ vm: 'z1-a', zone: '1' }]);
    // a slot free within the budget is taken as any other, with who forced it and why
    expect(await slotsOf(container, 'frozen')).toMatchObject([{ vm: 'ledger-1', mode: 'early', reason: 'the disk is failing' }]);
  }, 60_000);
});

describe('approval via arm: what the request names', () => {
  it('an eventId that is no GUID, or a VM outside azure.subscriptions, is refused before anything is sent; a subscription is matched in any case', async () => {
    const container = 'arm-names';
    const from = arm.acknowledged.length;
    const other = 'abcdef01-2345-4678-9abc-def012345678';
    const outside = 'fedcba98-7654-4321-8fed-cba987654321';
    const inOther = vmId('far-1').replace(SUBSCRIPTION, other);
    await writeRecord(store(container), 'n', { name: 'far-1', resourceId: inOther, events: [{ eventId: E(40) }], maxUnavailable: 2 });
    await writeRecord(store(container), 'n', {
      ...{ name: 'out-1', resourceId: vmId('out-1').replace(SUBSCRIPTION, outside), events: [{ eventId: E(41) }], maxUnavailable: 2 },
    });
    arm.rows = [scheduledEventOf({ resourceId: inOther, eventId: E(40) })];
    const { r, lines } = await relay(container, { subscriptions: [SUBSCRIPTION, other.toUpperCase()] });
    const sent = arm.peer.requests.length;
    expect(await approve(r, { vm: 'far-1', eventId: 'not-a-guid' })).toMatchObject({ status: 400, json: { error: { code: 'NOT_A_VM' } } });
    expect(await approve(r, { vm: 'out-1', eventId: E(41), force: true, reason: 'outside' })).toMatchObject({
      status: 403,
      json: { error: { code: 'SUBSCRIPTION_NOT_ALLOWED', message: `out-1 is in subscription ${outside}, outside azure.subscriptions` } },
    });
    expect(arm.peer.requests.length).toBe(sent);
    expect(refusedLines(lines).map((l) => [l.code, l.eventId, l.force])).toEqual([
      ['NOT_A_VM', 'not-a-guid', false],
      ['SUBSCRIPTION_NOT_ALLOWED', E(41), true],
    ]);
    expect(await approve(r, { vm: 'far-1', eventId: E(40) })).toMatchObject({ status: 200, json: { status: 'approved' } });
    expect(arm.acknowledged.slice(from)).toMatchObject([{ resourceId: inOther.toLowerCase(), eventId: E(40) }]);
  }, 60_000);

  it("without Azure's feed, an event other records list too, or a scale-set instance's, goes only when forced", async () => {
    const container = 'arm-unsure';
    const from = arm.acknowledged.length;
    const set = vmId('x').replace('/virtualMachines/x', '/virtualMachineScaleSets/pool');
    await writeRecord(store(container), 'u', { name: 'a-1', resourceId: vmId('a-1'), events: [{ eventId: E(50) }], maxUnavailable: 5 });
    await writeRecord(store(container), 'u', { name: 'a-2', resourceId: vmId('a-2'), events: [{ eventId: E(50) }], maxUnavailable: 5 });
    await writeRecord(store(container), 'u', {
      name: 'pool_3',
      resourceId: `${set}/virtualMachines/3`,
      events: [{ eventId: E(51) }],
      maxUnavailable: 5,
    });
    arm.rows = [
      scheduledEventOf({ resourceId: vmId('a-1'), eventId: E(50) }),
      scheduledEventOf({ resourceId: set, eventId: E(51), resources: ['pool_3'] }),
    ];
    const { r } = await relay(container);
    expect(await approve(r, { vm: 'a-1', eventId: E(50) })).toMatchObject({
      status: 409,
      json: {
        error: {
          code: 'MANY_VMS',
          message: `event ${E(50)} takes down 2 VMs at once (a-1, a-2): approving it approves every one of them, past any one member's slot; force with a reason`,
        },
      },
    });
    expect(await approve(r, { vm: 'pool_3', eventId: E(51) })).toMatchObject({
      status: 409,
      json: {
        error: { code: 'MANY_VMS', message: expect.stringMatching(/^pool_3 is an instance of scale set pool: .*; force with a reason$/) },
      },
    });
    expect(arm.acknowledged.slice(from)).toEqual([]);
    for (const [vm, eventId] of [
      ['a-1', E(50)],
      ['pool_3', E(51)],
    ] as const)
      expect(await approve(r, { vm, eventId, force: true, reason: 'drained' })).toMatchObject({ status: 200, json: { forced: true } });
    expect(arm.acknowledged.slice(from).map((a) => [a.resourceId, a.eventId])).toEqual([
      [vmId('a-1').toLowerCase(), E(50)],
      [set.toLowerCase(), E(51)],
    ]);
    // the scale set's record, written by the relay, names the instance the event takes down: one row, the instance's
    expect((await rowsOf(r, E(51))).map((e) => [e.vm, e.azure?.acknowledged?.reason])).toEqual([['pool_3', 'drained']]);
  }, 60_000);
});

describe("approval via arm: Azure's feed", () => {
  it('with Event Grid alone configured, Resource Graph is still asked at the approval: what Azure does not list is refused, an event of several VMs needs force, and Resource Graph refusing is 503', async () => {
    const container = 'arm-eventgrid';
    const from = arm.acknowledged.length;
    await writeRecord(store(container), 'bare', { name: 'bare-1', resourceId: null, events: [{ eventId: E(63) }], maxUnavailable: 1 });
    for (const name of ['web-1', 'web-2'])
      await writeRecord(store(container), 'web', {
        name,
        resourceId: vmId(name),
        events: [{ eventId: E(name === 'web-1' ? 60 : 61) }],
        maxUnavailable: 2,
      });
    arm.rows = [
      scheduledEventOf({ resourceId: vmId('web-2'), eventId: E(61), resources: ['web-2', 'web-9'] }),
      scheduledEventOf({ resourceId: vmId('ghost-1'), eventId: E(62) }),
      scheduledEventOf({ resourceId: vmId('bare-1'), eventId: E(63) }),
    ];
    const { r, lines } = await relay(container, { eventGrid: true });
    expect(await approve(r, { vm: 'web-1', eventId: E(60) })).toMatchObject({
      status: 404,
      json: { error: { code: 'NOT_LISTED_BY_AZURE' } },
    });
    expect(await approve(r, { vm: 'web-2', eventId: E(61) })).toMatchObject({
      status: 409,
      json: { error: { code: 'MANY_VMS', message: expect.stringMatching(/^event \S+ takes down 2 VMs at once \(web-2, web-9\)/) } },
    });
    expect(await approve(r, { vm: 'ghost-1', eventId: E(62) })).toMatchObject({
      status: 409,
      json: { error: { code: 'FLEET_BUDGET_UNKNOWN' } },
    });
    expect(arm.acknowledged.slice(from)).toEqual([]);
    expect(await approve(r, { vm: 'web-2', eventId: E(61), force: true, reason: 'both drained' })).toMatchObject({ status: 200 });
    const ghost = await approve(r, { vm: 'ghost-1', eventId: E(62), approver: 'dave', force: true, reason: 'no bridge on it' });
    expect(ghost).toMatchObject({ status: 200, json: { status: 'approved', forced: true, vm: 'ghost-1', approvedBy: 'dave' } });
    expect(approvedLines(lines)).toMatchObject([
      { vm: 'web-2', group: 'web', forced: true },
      { vm: 'ghost-1', group: null, forced: true, by: 'dave' },
    ]);
    expect(await azureOf(r, E(62))).toMatchObject({ acknowledged: { by: 'dave', reason: 'no bridge on it', forced: true } });

    // Resource Graph refusing the question: nothing can be checked, so nothing is sent
    const answer = arm.peer.answer;
    arm.peer.answer = (req, i) =>
      req.url.startsWith('/providers/Microsoft.ResourceGraph/')
        ? { status: 403, body: '{"error":{"code":"AuthorizationFailed","message":"no"}}' }
        : answer(req, i);
    try {
      const refused = await approve(r, { vm: 'web-1', eventId: E(60) });
      expect(refused).toMatchObject({
        status: 503,
        json: {
          error: {
            code: 'ARM_UNAVAILABLE',
            message: expect.stringMatching(/^Resource Graph could not be asked whether Azure lists the event: .*; ask again$/),
          },
        },
      });
    } finally {
      arm.peer.answer = answer;
    }
    expect(arm.acknowledged.slice(from).map((a) => a.eventId)).toEqual([E(61), E(62)]);

    // a member whose record gives no resource id, found by its name in Azure's record: its slot says none
    expect(await approve(r, { vm: 'bare-1', eventId: E(63) })).toMatchObject({ status: 200, json: { status: 'approved', vm: 'bare-1' } });
    expect(await slotsOf(container, 'bare')).toEqual([expect.objectContaining({ vm: 'bare-1', resourceId: null })]);
  }, 60_000);
});

describe('approval via arm: a store that fails part way (Leases on the Kubernetes API stand-in, written from the API reference)', () => {
  it('a slot that cannot be written refuses with 503 and sends nothing; one that cannot be given back stays held, logged; who asked, not recorded, is logged and the approval stands', async () => {
    const namespace = 'arm-faults';
    const kube = { ...stores.config('kubernetes'), namespace } as never;
    const names = ['kf-1', 'kf-2', 'kf-3', 'kf-4'];
    for (const [i, name] of names.entries())
      await writeRecord(kube, 'kf', { name, resourceId: vmId(name), events: [{ eventId: E(70 + i) }], maxUnavailable: 3 });
    arm.rows = names.map((n, i) => scheduledEventOf({ resourceId: vmId(n), eventId: E(70 + i) }));
    const { r, lines } = await relay('unused', { store: kube });
    const from = arm.acknowledged.length;
    const leases = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
    // the API server refuses the one request `fail` picks (403), then answers as before
    let fail: ((method: string, path: string) => boolean) | null = null;
    stores.kube.gate = async (method, path) => {
      if (fail?.(method, path) !== true) return;
      fail = null;
      stores.kube.faults.next(path, kubeRefusal(403));
    };
    const logged = (msg: string) => lines.filter((l) => l.msg === msg);
    try {
      fail = (method, path) => method === 'POST' && path === leases;
      expect(await approve(r, { vm: 'kf-1', eventId: E(70) })).toMatchObject({
        status: 503,
        json: {
          error: { code: 'FLEET_STORE_UNAVAILABLE', message: expect.stringMatching(/^the fleet store of group kf could not be written: /) },
        },
      });
      expect(arm.acknowledged.slice(from)).toEqual([]);
      expect(await liveSlots(kube, 'kf')).toEqual([]);

      arm.refusals.push({ status: 400 });
      fail = (method, path) => method !== 'GET' && path.startsWith(`${leases}/`);
      expect(await approve(r, { vm: 'kf-2', eventId: E(71) })).toMatchObject({ status: 502, json: { error: { code: 'ARM_REFUSED' } } });
      expect(await liveSlots(kube, 'kf')).toMatchObject([{ vm: 'kf-2', eventIds: [E(71)] }]);
      expect(logged('relay: could not give back the slot of a refused approval')).toMatchObject([{ level: 40, eventId: E(71) }]);

      fail = (method, path) => method === 'GET' && path.startsWith(`${leases}/se-bridge-se-bridge-azure-`);
      const unrecorded = await approve(r, { vm: 'kf-3', eventId: E(72), approver: 'erin' });
      expect(unrecorded).toMatchObject({ status: 200, json: { status: 'approved', approvedBy: 'erin' } });
      expect(fail).toBeNull();
      expect(logged('relay: approved through Resource Manager, but could not record who asked')).toMatchObject([
        { level: 40, eventId: E(72) },
      ]);
      expect(await azureOf(r, E(72))).toBeUndefined();
      expect(arm.acknowledged.slice(from).map((a) => a.eventId)).toEqual([E(72)]);

      // the group's records unreadable between the fleet's read and the take (Resource Graph asked in between)
      const fed = await relay('unused', { store: kube, eventGrid: true });
      const answer = arm.peer.answer;
      arm.peer.answer = (req, i) => {
        if (req.url.startsWith('/providers/Microsoft.ResourceGraph/')) fail = (method, path) => method === 'GET' && path === leases;
        return answer(req, i);
      };
      try {
        expect(await approve(fed.r, { vm: 'kf-4', eventId: E(73) })).toMatchObject({
          status: 503,
          json: {
            error: { code: 'FLEET_STORE_UNAVAILABLE', message: expect.stringMatching(/^the records of group kf could not be read: /) },
          },
        });
      } finally {
        arm.peer.answer = answer;
      }
      expect(fail).toBeNull();
      expect(arm.acknowledged.slice(from).map((a) => a.eventId)).toEqual([E(72)]);
    } finally {
      stores.kube.gate = null;
    }
  }, 60_000);
});

describe("approval via arm: the event's record written over by others (Leases on the Kubernetes API stand-in)", () => {
  it("who asked, lost to another writer of the event's record at each of five tries, is logged as not recorded; the approval stands", async () => {
    const namespace = 'arm-conflicts';
    const kube = { ...stores.config('kubernetes'), namespace } as never;
    arm.rows = [await listedVm(kube, 'kc', 'kc-1', E(75))];
    const { r, lines } = await relay('unused', { store: kube });
    const leases = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
    // once Resource Manager took it, each create of the event's record finds one there already (409 AlreadyExists)
    let conflicts = 0;
    const answer = arm.peer.answer;
    arm.peer.answer = (req, i) => {
      if (req.url.includes('/acknowledge?')) conflicts = 5;
      return answer(req, i);
    };
    stores.kube.gate = async (method, path) => {
      if (conflicts === 0 || method !== 'POST' || path !== leases) return;
      conflicts--;
      stores.kube.faults.next(path, kubeRefusal(409));
    };
    try {
      const ok = await approve(r, { vm: 'kc-1', eventId: E(75), approver: 'frank' });
      expect(ok).toMatchObject({ status: 200, json: { status: 'approved', approvedBy: 'frank' } });
      expect(conflicts).toBe(0);
    } finally {
      stores.kube.gate = null;
      arm.peer.answer = answer;
    }
    expect(lines.filter((l) => l.msg === 'relay: approved through Resource Manager, but could not record who asked')).toMatchObject([
      { level: 40, eventId: E(75), code: 'FLEET_STORE_UNAVAILABLE', err: `the record of event ${E(75)} changed under each of 5 writes` },
    ]);
    expect(await azureOf(r, E(75))).toBeUndefined();
  }, 60_000);
});

describe("approval via arm: Azure's record of the event", () => {
  it("who asked is written into the record Resource Graph gave, which stays Azure's", async () => {
    const container = 'arm-record';
    arm.rows = [await listedVm(store(container), 'rec', 'rec-1', E(80))];
    const { r } = await relay(container, { feed: true });
    await r.graph!.poll();
    const listed = await azureOf(r, E(80));
    expect(listed).toMatchObject({ source: 'resourcegraph', status: 'Scheduled' });
    const ok = await approve(r, { vm: 'rec-1', eventId: E(80), reason: 'patch night' });
    expect(ok).toMatchObject({ status: 200, json: { status: 'approved' } });
    expect(await azureOf(r, E(80))).toEqual({
      ...{ source: 'resourcegraph', status: 'Scheduled', updatedAt: listed!.updatedAt },
      acknowledged: { by: 'oncall', at: ok.json.at, reason: 'patch night' },
    });
  }, 60_000);
});
