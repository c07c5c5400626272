/**
 * The relay trusts nothing a member writes. Every member may write every record of the fleet's
 * container, so a compromised one writes records by hand here (a URL for a resource id, another
 * action's path, another subscription, stale members of a budget of one, one fresh record that says
 * three) and the relay, run as a process from its configuration file, is asked to approve through
 * Resource Manager. Nothing may leave for any origin but `arm.endpoint`, for any path but an
 * acknowledgement; at most the group's budget is approved; every refusal is a JSON 4xx with a code,
 * logged with who asked. The store is Azurite; Resource Manager (Resource Graph and the
 * acknowledgement) is an HTTPS stand-in written from its REST reference, reached with a token of
 * the IMDS simulator's managed identity endpoint, and a plain listener stands for wherever a
 * hostile record points: it must get nothing. No Azure service runs here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { ArmClient } from '../../src/relay/arm.ts';
import { parseEventResource } from '../../src/azure/resource-id.ts';
import { ArmStandIn, scheduledEventOf, SUBSCRIPTION, vmId } from '../../testkit/azure-feed.ts';
import { API_SECRET, fleetKeys, fleetPeer, relayInput } from '../../testkit/fleet.ts';
import { FleetStores } from '../../testkit/fleet-stores.ts';
import { liveSlots, RelayProcess, writeRecord } from '../../testkit/hostile-fleet.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { postApproval, ROOT, tempDir, waitFor } from '../helpers.ts';

/** The fleet's keys, one set for every replica of the file's relays (as a fleet's replicas share them). */
const KEYS = fleetKeys();
const TLS = {
  key: readFileSync(join(ROOT, 'test/fixtures/tls/key.pem'), 'utf8'),
  cert: readFileSync(join(ROOT, 'test/fixtures/tls/cert.pem'), 'utf8'),
};
const CA_FILE = join(ROOT, 'test/fixtures/tls/cert.pem');
const OTHER_SUBSCRIPTION = '11111111-1111-1111-1111-111111111111';
const READ_KEY = 'fleet-read-key-0123456789';
/** A scheduled event's id: a GUID, as Resource Manager takes it. */
const E = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

let stores: FleetStores;
let peer: AmqpPeer;
let identity: ImdsSimulator;
let identityUrl: string;
let arm: ArmStandIn;
let trap: HttpPeer;
let dir: ReturnType<typeof tempDir>;
const relays: RelayProcess[] = [];

beforeAll(async () => {
  stores = await FleetStores.start();
  peer = await fleetPeer();
  identity = new ImdsSimulator({ vmName: 'relay-vm', tickMs: 10 });
  identityUrl = await identity.listen();
  arm = new ArmStandIn(TLS, 50);
  await arm.peer.listen();
  trap = new HttpPeer();
  await trap.listen();
  dir = tempDir();
}, 60_000);
afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.stop()));
  arm.rows = [];
  arm.refusals.length = 0;
});
afterAll(async () => {
  await trap?.close();
  await arm?.peer.close();
  await identity?.close();
  await peer?.close();
  await stores?.stop();
  dir?.cleanup();
});

const store = (container: string) => ({ ...stores.config('blob'), container }) as never;

/** relay starts the relay as a process over `container`; `feed`: Azure's feed (Resource Graph) configured. */
async function relay(container: string, o: { feed: boolean; groups?: Record<string, unknown> }): Promise<RelayProcess> {
  const config = relayInput(peer, KEYS, {
    fleet: { store: store(container), cacheMs: 0, ...(o.groups ? { groups: o.groups } : {}) },
    readKeys: [READ_KEY],
    azure: {
      subscriptions: [SUBSCRIPTION],
      checkSeconds: 3600,
      arm: { endpoint: arm.peer.url, caFile: CA_FILE, timeoutMs: 3000 },
      ...(o.feed ? { resourceGraph: { intervalSeconds: 3600 } } : {}),
    },
  });
  const env = { AZURE_POD_IDENTITY_AUTHORITY_HOST: identityUrl };
  const r = await RelayProcess.start(dir.path, `${container}-${relays.length}`, config, env);
  relays.push(r);
  return r;
}

/** approveAt: POST /v1/approvals to a relay, signed with the API secret as its clients sign it. */
const approveAt = (r: RelayProcess, body: Record<string, unknown>) => postApproval(r.url, API_SECRET, body);

/** the live slots of a group, as its store holds them */
const slotsOf = (container: string, group: string) => liveSlots(store(container), group);

/** every request Resource Manager's stand-in got, beside Resource Graph's queries */
const armRequests = () => arm.peer.requests.filter((r) => !r.url.startsWith('/providers/Microsoft.ResourceGraph/'));

/** the refusals the relay logged, each with its code and who asked */
const refusalsOf = (r: RelayProcess) => r.logged().filter((l) => String(l.msg).startsWith('relay: approval via arm refused'));

describe('approval via arm: a resource id is parsed, never concatenated', () => {
  it("a hostile record's URL, another action's path and another subscription send nothing anywhere; a VM's own id is acknowledged at its path alone", async () => {
    const container = 'hostile-ids';
    const path = `${vmId('web-32')}/restart?api-version=2024-07-01#`;
    await writeRecord(store(container), 'web', {
      name: 'web-31',
      resourceId: `${trap.url}${vmId('web-31')}`,
      events: [{ eventId: E(31) }],
      maxUnavailable: 1,
    });
    await writeRecord(store(container), 'web', { name: 'web-32', resourceId: path, events: [{ eventId: E(32) }], maxUnavailable: 1 });
    await writeRecord(store(container), 'web', {
      name: 'web-33',
      resourceId: vmId('web-33').replace(SUBSCRIPTION, OTHER_SUBSCRIPTION),
      events: [{ eventId: E(33) }],
      maxUnavailable: 1,
    });
    await writeRecord(store(container), 'web', {
      name: 'web-34',
      resourceId: vmId('web-34'),
      events: [{ eventId: E(34) }],
      maxUnavailable: 1,
    });
    // Azure knows of web-34's event (the relay reads no feed here: the member's record is its hint)
    arm.rows = [scheduledEventOf({ resourceId: vmId('web-34'), eventId: E(34) })];
    const before = armRequests().length;
    const r = await relay(container, { feed: false });

    const asked = [
      [{ vm: 'web-31', eventId: E(31) }, 400, 'NOT_A_VM'],
      [{ vm: `${trap.url}${vmId('web-31')}`, eventId: E(31) }, 400, 'NOT_A_VM'],
      [{ vm: 'web-32', eventId: E(32) }, 400, 'NOT_A_VM'],
      [{ vm: path, eventId: E(32) }, 400, 'NOT_A_VM'],
      [{ vm: `${vmId('web-34')}/../../web-32`, eventId: E(34) }, 400, 'NOT_A_VM'],
      [{ vm: 'web-33', eventId: E(33) }, 403, 'SUBSCRIPTION_NOT_ALLOWED'],
      [{ vm: vmId('web-34'), eventId: 'E-not-a-guid' }, 400, 'NOT_A_VM'],
    ] as const;
    for (const [body, status, code] of asked) {
      const a = await approveAt(r, { ...body, approver: 'mallory', via: 'arm' });
      expect({ body, status: a.status, code: a.json.error?.code }).toEqual({ body, status, code });
    }
    expect(trap.requests).toEqual([]);
    expect(armRequests().length).toBe(before);

    // the one VM whose record holds a VM's id: acknowledged at that VM's path, with the stable api-version
    const ok = await approveAt(r, { vm: 'web-34', eventId: E(34), approver: 'oncall', via: 'arm' });
    expect(ok).toMatchObject({ status: 200, json: { status: 'approved', vm: 'web-34', via: 'arm', approvedBy: 'oncall' } });
    expect(
      armRequests()
        .slice(before)
        .map((q) => `${q.method} ${q.url}`),
    ).toEqual([`POST ${vmId('web-34')}/providers/Microsoft.Maintenance/scheduledevents/${E(34)}/acknowledge?api-version=2025-11-01`]);
    expect(trap.requests).toEqual([]);
    // each refusal said once, with its code and who asked
    await waitFor(() => refusalsOf(r).length >= asked.length, 'the refusals logged');
    expect(refusalsOf(r).map((l) => [l.code, l.by])).toEqual(asked.map(([, , code]) => [code, 'mallory']));
    expect(refusalsOf(r).every((l) => typeof l.client === 'string')).toBe(true);
  }, 90_000);
});

describe("approval via arm: Azure's record is the authority where the feed is configured", () => {
  it('approves only what Azure lists as Scheduled for that resource, at the resource Azure names; a VM no record names only when forced', async () => {
    const container = 'hostile-feed';
    for (const [n, e] of [
      [41, 41],
      [42, 42],
      [43, 43],
      [44, 44],
      [45, 45],
    ] as const)
      await writeRecord(store(container), 'feed', {
        name: `web-${n}`,
        resourceId: vmId(`web-${n}`),
        events: [{ eventId: E(e) }],
        maxUnavailable: 5,
      });
    arm.rows = [
      // E(41): the member's word alone
      scheduledEventOf({ resourceId: vmId('web-42'), eventId: E(42) }),
      scheduledEventOf({ resourceId: vmId('web-43'), eventId: E(43), status: 'Started' }),
      // the member says E(44) is its own; Azure lists it for another VM
      scheduledEventOf({ resourceId: vmId('other-44'), eventId: E(44) }),
      // one event for two VMs: acknowledging it starts both
      scheduledEventOf({ resourceId: vmId('web-45'), eventId: E(45), resources: ['web-45', 'web-46'] }),
      // a VM with no bridge and no record
      scheduledEventOf({ resourceId: vmId('ghost-47'), eventId: E(47) }),
    ];
    const r = await relay(container, { feed: true });
    await waitFor(async () => {
      const res = await fetch(`${r.url}/v1/fleet/events?limit=1000`, { headers: { authorization: `Bearer ${READ_KEY}` } });
      const listed = ((await res.json()) as { events?: { eventId: string; azure?: unknown }[] }).events ?? [];
      return listed.filter((e) => e.azure !== undefined).length >= 4;
    }, "Azure's records kept from Resource Graph");
    const before = armRequests().length;

    expect(await approveAt(r, { vm: 'web-41', eventId: E(41), via: 'arm' })).toMatchObject({
      status: 404,
      json: { error: { code: 'NOT_LISTED_BY_AZURE' } },
    });
    expect(await approveAt(r, { vm: 'web-43', eventId: E(43), via: 'arm' })).toMatchObject({
      status: 409,
      json: { error: { code: 'NOT_APPROVABLE' } },
    });
    expect(await approveAt(r, { vm: 'web-44', eventId: E(44), via: 'arm' })).toMatchObject({
      status: 404,
      json: { error: { code: 'NOT_LISTED_BY_AZURE' } },
    });
    expect(await approveAt(r, { vm: 'web-45', eventId: E(45), via: 'arm' })).toMatchObject({
      status: 409,
      json: { error: { code: 'MANY_VMS' } },
    });
    expect(await approveAt(r, { vm: 'ghost-47', eventId: E(47), via: 'arm' })).toMatchObject({
      status: 409,
      json: { error: { code: 'FLEET_BUDGET_UNKNOWN' } },
    });
    expect(await approveAt(r, { vm: 'ghost-47', eventId: E(47), via: 'arm', force: true })).toMatchObject({
      status: 400,
      json: { error: { code: 'MALFORMED' } },
    });
    expect(armRequests().length).toBe(before);

    expect(await approveAt(r, { vm: vmId('web-42'), eventId: E(42), via: 'arm', approver: 'oncall' })).toMatchObject({
      status: 200,
      json: { status: 'approved' },
    });
    const forced = await approveAt(r, {
      vm: vmId('ghost-47'),
      eventId: E(47),
      via: 'arm',
      approver: 'oncall',
      force: true,
      reason: 'no bridge on it',
    });
    expect(forced).toMatchObject({ status: 200, json: { status: 'approved', forced: true, vm: 'ghost-47' } });
    expect(
      armRequests()
        .slice(before)
        .map((q) => q.url.split('?')[0]),
    ).toEqual([
      `${vmId('web-42')}/providers/Microsoft.Maintenance/scheduledevents/${E(42)}/acknowledge`,
      `${vmId('ghost-47')}/providers/Microsoft.Maintenance/scheduledevents/${E(47)}/acknowledge`,
    ]);
    expect(trap.requests).toEqual([]);
  }, 90_000);
});

describe('approval via arm: the budget is never unknown', () => {
  it("a group whose bridges are all gone keeps its budget of one; one fresh record that says three is refused as a disagreement; the relay's own statement decides", async () => {
    const container = 'hostile-budget';
    const gone = ['db-1', 'db-2', 'db-3'];
    for (const [i, name] of gone.entries())
      await writeRecord(store(container), 'stale', {
        ...{ name, resourceId: vmId(name), events: [{ eventId: E(51 + i) }], maxUnavailable: 1, agoSeconds: 30 * 86_400 },
      });
    const liars = [
      { name: 'kv-1', maxUnavailable: 1, agoSeconds: 3600 },
      { name: 'kv-2', maxUnavailable: 1, agoSeconds: 3600 },
      { name: 'kv-3', maxUnavailable: 3, agoSeconds: 0 },
    ];
    for (const [i, m] of liars.entries())
      await writeRecord(store(container), 'liar', { ...m, resourceId: vmId(m.name), events: [{ eventId: E(61 + i) }] });
    await writeRecord(store(container), 'open', { name: 'ui-1', resourceId: vmId('ui-1'), events: [{ eventId: E(71) }] });
    arm.rows = [...gone, ...liars.map((m) => m.name), 'ui-1'].map((n, i) =>
      scheduledEventOf({ resourceId: vmId(n), eventId: E(i < 3 ? 51 + i : i < 6 ? 58 + i : 71) }),
    );
    const r = await relay(container, { feed: false });

    // three of three asked, one approved: the stale records' budget of one holds the rest
    const answers = [];
    for (const [i, name] of gone.entries()) answers.push(await approveAt(r, { vm: name, eventId: E(51 + i), via: 'arm' }));
    expect(answers.map((a) => a.status)).toEqual([200, 409, 409]);
    expect(answers[1]!.json).toMatchObject({ status: 'held', error: { code: 'HELD', message: expect.stringMatching(/held by db-1/) } });
    expect(await slotsOf(container, 'stale')).toMatchObject([{ vm: 'db-1', eventIds: [E(51)] }]);

    // records that disagree name every member's budget, and nothing is sent
    const acked = arm.acknowledged.length;
    const disagree = await approveAt(r, { vm: 'kv-1', eventId: E(61), via: 'arm' });
    expect(disagree).toMatchObject({ status: 409, json: { error: { code: 'FLEET_BUDGET_DISAGREES' } } });
    expect(disagree.json.error.message).toMatch(/kv-1: 1, kv-2: 1, kv-3: 3/);
    // none that states one
    const unknown = await approveAt(r, { vm: 'ui-1', eventId: E(71), via: 'arm' });
    expect(unknown).toMatchObject({
      status: 409,
      json: { error: { code: 'FLEET_BUDGET_UNKNOWN', message: expect.stringMatching(/ui-1/) } },
    });
    expect(arm.acknowledged.length).toBe(acked);
    // past an unknown budget only when forced, with a reason, on the record: counted as down for the others
    const forced = await approveAt(r, { vm: 'ui-1', eventId: E(71), via: 'arm', force: true, reason: 'its bridge is gone' });
    expect(forced).toMatchObject({ status: 200, json: { status: 'approved', forced: true } });
    expect(await slotsOf(container, 'open')).toMatchObject([{ vm: 'ui-1', mode: 'forced', reason: 'its bridge is gone' }]);
    await r.stop();

    // the relay's own statement of the group's budget decides over what its records say
    const stated = await relay(container, { feed: false, groups: { liar: { maxUnavailable: 1 } } });
    const first = await approveAt(stated, { vm: 'kv-3', eventId: E(63), via: 'arm' });
    expect(first).toMatchObject({ status: 200, json: { status: 'approved' } });
    expect(await approveAt(stated, { vm: 'kv-1', eventId: E(61), via: 'arm' })).toMatchObject({
      status: 409,
      json: { error: { code: 'HELD' } },
    });
    expect((await slotsOf(container, 'liar')).map((s) => s.vm)).toEqual(['kv-3']);
    // and the read API counts the group as the relay does
    const fleet = await fetch(`${stated.url}/v1/fleet`, { headers: { authorization: `Bearer ${READ_KEY}` } });
    const groups = ((await fleet.json()) as { groups: { group: string; maxUnavailable: number | null }[] }).groups;
    expect(groups.find((g) => g.group === 'liar')).toMatchObject({ maxUnavailable: 1 });
  }, 90_000);

  it('an unhealthy member counts against the budget, and a blackout a record says holds all but a forced approval', async () => {
    const container = 'hostile-held';
    const soon = new Date(Date.now() + 3_600_000).toISOString();
    await writeRecord(store(container), 'sick', {
      ...{ name: 'mq-1', resourceId: vmId('mq-1'), events: [], maxUnavailable: 1 },
      health: { healthy: false, since: new Date().toISOString(), detail: 'the queue is not consuming' },
    });
    await writeRecord(store(container), 'sick', {
      name: 'mq-2',
      resourceId: vmId('mq-2'),
      events: [{ eventId: E(81) }],
      maxUnavailable: 1,
    });
    await writeRecord(store(container), 'frozen', {
      ...{ name: 'ledger-1', resourceId: vmId('ledger-1'), events: [{ eventId: E(82) }], maxUnavailable: 1 },
      calendar: { digest: 'x', timeZone: 'UTC', open: false, inWindow: false, blackout: 'year-end', until: soon },
    });
    arm.rows = [
      scheduledEventOf({ resourceId: vmId('mq-2'), eventId: E(81) }),
      scheduledEventOf({ resourceId: vmId('ledger-1'), eventId: E(82) }),
    ];
    const r = await relay(container, { feed: false });
    const sick = await approveAt(r, { vm: 'mq-2', eventId: E(81), via: 'arm' });
    expect(sick).toMatchObject({ status: 409, json: { error: { code: 'HELD', message: expect.stringMatching(/mq-1 is not healthy/) } } });
    const closed = await approveAt(r, { vm: 'ledger-1', eventId: E(82), via: 'arm' });
    expect(closed).toMatchObject({
      status: 409,
      json: { status: 'held', error: { code: 'BLACKOUT', message: expect.stringMatching(/year-end/) } },
    });
    expect(arm.acknowledged.filter((a) => [E(81), E(82)].includes(a.eventId))).toEqual([]);
    const forced = await approveAt(r, { vm: 'ledger-1', eventId: E(82), via: 'arm', force: true, reason: 'the disk is failing' });
    expect(forced).toMatchObject({ status: 200, json: { forced: true } });
  }, 90_000);
});

describe("approval via arm: Resource Manager's refusals", () => {
  it('a refusal gives the slot back and says why; no answer at all keeps it, and the repeat is acknowledged in the same slot', async () => {
    const container = 'hostile-refusals';
    await writeRecord(store(container), 'r', { name: 'app-1', resourceId: vmId('app-1'), events: [{ eventId: E(91) }], maxUnavailable: 1 });
    arm.rows = [scheduledEventOf({ resourceId: vmId('app-1'), eventId: E(91) })];
    const r = await relay(container, { feed: false });
    const ask = () => approveAt(r, { vm: 'app-1', eventId: E(91), via: 'arm' });
    const table = [
      [{ status: 400 }, 502, 'ARM_REFUSED'],
      [{ status: 401 }, 502, 'ARM_FORBIDDEN'],
      [{ status: 403 }, 502, 'ARM_FORBIDDEN'],
      [{ status: 409 }, 409, 'ARM_CONFLICT'],
      [{ status: 429, retryAfter: 7 }, 503, 'ARM_UNAVAILABLE'],
      [{ status: 500 }, 503, 'ARM_UNAVAILABLE'],
      [{ status: 503 }, 503, 'ARM_UNAVAILABLE'],
    ] as const;
    for (const [refusal, status, code] of table) {
      arm.refusals.push(refusal);
      const a = await ask();
      expect({ refusal, status: a.status, code: a.json.error?.code }).toEqual({ refusal, status, code });
      // refused: nothing approved, and the group's slot free again
      expect(await slotsOf(container, 'r')).toEqual([]);
    }
    arm.refusals.push({ status: 429, retryAfter: 7 });
    expect((await ask()).json).toMatchObject({ retryAfterSeconds: 7 });
    expect(arm.acknowledged.filter((a) => a.eventId === E(91))).toEqual([]);

    // no answer within the deadline: Azure may have taken it, so the slot stays
    arm.refusals.push('hang');
    expect(await ask()).toMatchObject({ status: 503, json: { error: { code: 'ARM_UNAVAILABLE' } } });
    expect(await slotsOf(container, 'r')).toMatchObject([{ vm: 'app-1', eventIds: [E(91)] }]);
    const again = await ask();
    expect(again).toMatchObject({ status: 200, json: { status: 'approved' } });
    expect(arm.acknowledged.filter((a) => a.eventId === E(91))).toHaveLength(1);
    expect(await slotsOf(container, 'r')).toHaveLength(1);
  }, 90_000);
});

describe("ArmClient: Resource Manager's origin, fixed paths", () => {
  it('acknowledges several events of one resource in one call of the list form, and sends nothing to a path that would leave the origin', async () => {
    process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = identityUrl;
    const client = new ArmClient({ endpoint: arm.peer.url, caFile: CA_FILE, timeoutMs: 5000 });
    try {
      arm.rows = [E(101), E(102)].map((eventId) => scheduledEventOf({ resourceId: vmId('batch-1'), eventId }));
      const before = armRequests().length;
      const answer = await client.acknowledge(parseEventResource(vmId('batch-1'))!, [E(101), E(102)]);
      expect(answer).toMatchObject({ status: 200, json: { value: 'Successfully Approved' } });
      const sent = armRequests().slice(before);
      expect(sent.map((q) => `${q.method} ${q.url} ${q.body}`)).toEqual([
        `POST ${vmId('batch-1')}/providers/Microsoft.Maintenance/scheduledevents?api-version=2025-11-01 {"value":["${E(101)}","${E(102)}"]}`,
      ]);
      for (const path of [`//127.0.0.1:${new URL(trap.url).port}/x`, `${trap.url}/x`, 'relative', `/a/../../b`, '/x#y'])
        await expect(client.post(path, '{}')).rejects.toThrow(/refused to send/);
      expect(() => client.acknowledge(parseEventResource(vmId('batch-1'))!, ['../restart'])).toThrow(/GUID/);
      expect(trap.requests).toEqual([]);
      expect(armRequests().length).toBe(before + 1);
    } finally {
      client.close();
      delete process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST;
    }
  });
});
