/**
 * What a member writes where the relay keeps Azure's records, and what it writes of itself to lead
 * the relay to another VM, read as nothing. Every member may write every record of the fleet's
 * container, Azure's records included: the relay seals each record it writes with a key no member
 * holds, opens only those, and asks Resource Graph at an approval whether Azure lists the event.
 * The store is Azurite; Event Grid and Resource Manager are stand-ins written from their REST
 * references (no Azure service runs here), the relay runs in this process.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AZURE_GROUP } from '../../src/fleet/budget/config.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import { asSlot, SLOT_PREFIX } from '../../src/fleet/budget/records.ts';
import { azureRecordName, type AzureRecord } from '../../src/fleet/view/azure.ts';
import { startRelay, type RunningRelay } from '../../src/relay/relay.ts';
import type { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { ArmStandIn, EventGridDelivery, eventGridEvent, scheduledEventOf, SUBSCRIPTION, vmId } from '../../testkit/azure-feed.ts';
import { API_SECRET, fleetKeys, relayConfig } from '../../testkit/fleet.ts';
import { FleetStores } from '../../testkit/fleet-stores.ts';
import { ArmRelayPeers, writeRecord } from '../../testkit/hostile-fleet.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { postApproval, ROOT, waitFor } from '../helpers.ts';

const TLS = {
  key: readFileSync(join(ROOT, 'test/fixtures/tls/key.pem'), 'utf8'),
  cert: readFileSync(join(ROOT, 'test/fixtures/tls/cert.pem'), 'utf8'),
};
const EG_KEY = 'event-grid-delivery-key-42';
const READ_KEY = 'fleet-read-key-0123456789';
const KEYS = fleetKeys();
const E = (n: number) => `00000000-0000-4000-a000-${String(n).padStart(12, '0')}`;

let stores: FleetStores;
let peer: AmqpPeer;
let arm: ArmStandIn;
let hook: HttpPeer;
const relays: RunningRelay[] = [];

let peers: ArmRelayPeers;

beforeAll(async () => {
  peers = await ArmRelayPeers.start(TLS);
  ({ stores, peer, arm } = peers);
  hook = new HttpPeer();
  await hook.listen();
}, 60_000);
afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.close()));
  hook.requests.length = 0;
  arm.rows = [];
});
afterAll(async () => {
  await hook?.close();
  await peers?.stop();
});

const store = (container: string) => ({ ...stores.config('blob'), container }) as never;

async function relay(container: string, azure: Record<string, unknown> = {}, fleet: Record<string, unknown> = {}): Promise<RunningRelay> {
  const config = relayConfig(peer, KEYS, {
    fleet: { store: store(container), cacheMs: 0, ...fleet },
    readKeys: [READ_KEY],
    azure: {
      subscriptions: [SUBSCRIPTION],
      checkSeconds: 3600,
      unwatchedAfterSeconds: 5,
      eventGrid: { key: EG_KEY },
      arm: { endpoint: arm.peer.url, caFile: join(ROOT, 'test/fixtures/tls/cert.pem'), timeoutMs: 5000 },
      ...azure,
    },
    sinks: [{ name: 'ops', type: 'webhook', mode: 'structured', url: `${hook.url}/unwatched`, delivery: { initialBackoffMs: 50 } }],
  });
  const r = await startRelay(config, pino({ level: 'silent' }), { host: '127.0.0.1', port: 0 });
  relays.push(r);
  return r;
}

/** forge writes a record where the relay keeps Azure's, as any member can: the shape is right, the seal is not there. */
async function forge(container: string, r: Partial<AzureRecord> & { eventId: string; resourceId: string }, seal?: string): Promise<void> {
  const s = await openFleetStore(store(container), AZURE_GROUP);
  const at = new Date().toISOString();
  const record = {
    ...{ subscriptionId: SUBSCRIPTION.toLowerCase(), resources: [r.resourceId.slice(r.resourceId.lastIndexOf('/') + 1)] },
    ...{ eventType: 'Reboot', status: 'Scheduled', notBefore: new Date(Date.now() + 900_000).toISOString(), durationInSeconds: -1 },
    ...{ description: '', source: 'eventgrid', firstSeenAt: at, updatedAt: at, unwatched: [] },
    ...r,
    resourceId: r.resourceId.toLowerCase(),
    ...(seal === undefined ? {} : { seal }),
  };
  const name = azureRecordName(r.eventId, r.resourceId);
  const current = await s.get(name);
  await s.put(name, record, current?.version ?? null);
  await s.close();
}

const approve = (r: RunningRelay, body: Record<string, unknown>) =>
  postApproval(r.url, API_SECRET, { via: 'arm', approver: 'mallory', ...body });

async function listed(r: RunningRelay): Promise<Record<string, any>[]> {
  const res = await fetch(`${r.url}/v1/fleet/events?limit=1000`, { headers: { authorization: `Bearer ${READ_KEY}` } });
  return ((await res.json()) as { events: Record<string, any>[] }).events;
}

const alerts = () => hook.requests.map((q) => (JSON.parse(q.body) as { data: { eventId: string } }).data.eventId);

describe("Azure's records in a store every member may write", () => {
  it('a forged record neither lists an event, nor ends a real one for longer than until Azure speaks again, nor says it was approved, nor raises alerts', async () => {
    const container = 'forged-feed';
    arm.rows = [scheduledEventOf({ resourceId: vmId('real-1'), eventId: E(1) })];
    const r = await relay(container, { resourceGraph: { intervalSeconds: 3600 } });
    await r.graph!.poll();
    const azure = await openFleetStore(store(container), AZURE_GROUP);
    const sealed = (await azure.list(''))[0]!.value as { seal?: string };
    await azure.close();
    expect(sealed.seal).toEqual(expect.any(String));
    // a member ends the real event, as if Azure had said Completed; forges 40 events no Azure lists; copies a seal onto another record
    await forge(container, { resourceId: vmId('real-1'), eventId: E(1), status: 'Completed' });
    for (let i = 0; i < 40; i++) await forge(container, { resourceId: vmId(`ghost-${i}`), eventId: E(100 + i) });
    await forge(container, { resourceId: vmId('copy-1'), eventId: E(2) }, sealed.seal);
    // the real event, which no bridge watches, was said at once
    await waitFor(async () => (await r.feed!.check(0), alerts().length >= 1), 'the real event said');
    for (let i = 0; i < 3; i++) await r.feed!.check(0);
    // none of the forged is said or listed; the overwritten real record is none until Azure speaks again
    expect(alerts()).toEqual([E(1)]);
    expect(await listed(r)).toEqual([]);
    await r.graph!.poll();
    for (let i = 0; i < 3; i++) await r.feed!.check(0);
    // said again at most with the same CloudEvent id (its copies deduplicate), never a forged one
    expect(new Set(alerts())).toEqual(new Set([E(1)]));
    expect(new Set(hook.requests.map((q) => (JSON.parse(q.body) as { id: string }).id)).size).toBe(1);
    expect((await listed(r)).map((e) => [e.vm, e.eventId, e.status])).toEqual([['real-1', E(1), 'Scheduled']]);
    // Event Grid's delivery writes over what no relay sealed, too
    const grid = new EventGridDelivery(`${r.url}/v1/azure/eventgrid?code=${EG_KEY}`);
    expect(await grid.deliver([eventGridEvent({ resourceId: vmId('ghost-0'), eventId: E(100) })])).toMatchObject({
      status: 200,
      body: { kept: 1 },
    });
  }, 60_000);

  it('approval via arm asks Azure itself: a forged record lists nothing, and a forged acknowledgement approves nothing', async () => {
    const container = 'forged-arm';
    await writeRecord(store(container), 'g', { name: 'app-1', resourceId: vmId('app-1'), events: [{ eventId: E(11) }], maxUnavailable: 1 });
    await writeRecord(store(container), 'g', { name: 'app-2', resourceId: vmId('app-2'), events: [{ eventId: E(12) }], maxUnavailable: 1 });
    // Azure lists app-2's event only; a member forges Azure's record of app-1's, and an acknowledgement of app-2's
    arm.rows = [scheduledEventOf({ resourceId: vmId('app-2'), eventId: E(12) })];
    await forge(container, { resourceId: vmId('app-1'), eventId: E(11) });
    await forge(container, { resourceId: vmId('app-2'), eventId: E(12), acknowledged: { by: 'someone', at: new Date().toISOString() } });
    const r = await relay(container);
    expect(await approve(r, { vm: 'app-1', eventId: E(11) })).toMatchObject({
      status: 404,
      json: { error: { code: 'NOT_LISTED_BY_AZURE' } },
    });
    expect(await approve(r, { vm: 'app-2', eventId: E(12) })).toMatchObject({
      status: 200,
      json: { status: 'approved', approvedBy: 'mallory' },
    });
    expect(arm.acknowledged.filter((a) => [E(11), E(12)].includes(a.eventId)).map((a) => a.eventId)).toEqual([E(12)]);
    // a repeat finds the relay's own, sealed record
    expect(await approve(r, { vm: 'app-2', eventId: E(12) })).toMatchObject({ status: 200, json: { status: 'already-approved' } });
  }, 60_000);
});

describe('a record that names another VM', () => {
  it("a name leads to a resource id, and every record of that id decides: a record in another group with db-1's id makes db-1 ambiguous", async () => {
    const container = 'forged-name';
    await writeRecord(store(container), 'db', { name: 'db-1', resourceId: vmId('db-1'), events: [{ eventId: E(21) }], maxUnavailable: 1 });
    await writeRecord(store(container), 'mine', {
      name: 'web-1',
      resourceId: vmId('db-1'),
      events: [{ eventId: E(21) }],
      maxUnavailable: 100,
    });
    arm.rows = [scheduledEventOf({ resourceId: vmId('db-1'), eventId: E(21) })];
    const r = await relay(container);
    for (const vm of ['web-1', vmId('db-1'), 'db-1'])
      expect(await approve(r, { vm, eventId: E(21) })).toMatchObject({ status: 409, json: { error: { code: 'VM_AMBIGUOUS' } } });
    expect(arm.acknowledged.filter((a) => a.eventId === E(21))).toEqual([]);
  }, 60_000);

  it("without Azure's feed, an event other records list too, or a scale set's, goes only when forced; a folder named __proto__ is no group", async () => {
    const container = 'forged-nofeed';
    const instance = `/subscriptions/${SUBSCRIPTION}/resourceGroups/rg-fleet/providers/Microsoft.Compute/virtualMachineScaleSets/pool/virtualMachines/3`;
    await writeRecord(store(container), 'g', { name: 'a-1', resourceId: vmId('a-1'), events: [{ eventId: E(31) }], maxUnavailable: 2 });
    await writeRecord(store(container), 'g', { name: 'a-2', resourceId: vmId('a-2'), events: [{ eventId: E(31) }], maxUnavailable: 2 });
    await writeRecord(store(container), 'g', { name: 'pool_3', resourceId: instance, events: [{ eventId: E(32) }], maxUnavailable: 2 });
    await writeRecord(store(container), '__proto__', {
      name: 'odd-1',
      resourceId: vmId('odd-1'),
      events: [{ eventId: E(33) }],
      maxUnavailable: 1,
    });
    arm.rows = [
      scheduledEventOf({ resourceId: vmId('a-1'), eventId: E(31) }),
      scheduledEventOf({ resourceId: vmId('odd-1'), eventId: E(33) }),
      scheduledEventOf({ resourceId: instance.replace('/virtualMachines/3', ''), eventId: E(32), resources: ['pool_3'] }),
    ];
    const r = await relay(container, { eventGrid: undefined });
    const many = await approve(r, { vm: 'a-1', eventId: E(31) });
    expect(many).toMatchObject({ status: 409, json: { error: { code: 'MANY_VMS', message: expect.stringMatching(/a-1, a-2/) } } });
    expect(await approve(r, { vm: 'pool_3', eventId: E(32) })).toMatchObject({ status: 409, json: { error: { code: 'MANY_VMS' } } });
    // a folder no member could name as its group is none: its records list nothing (and break nothing)
    expect(await approve(r, { vm: 'odd-1', eventId: E(33) })).toMatchObject({ status: 404, json: { error: { code: 'UNKNOWN_EVENT' } } });
    const forced = await approve(r, { vm: 'pool_3', eventId: E(32), force: true, reason: 'the pool is drained' });
    expect(forced).toMatchObject({ status: 200, json: { forced: true } });
    expect(arm.acknowledged.filter((a) => a.eventId === E(32)).map((a) => a.resourceId)).toEqual([
      instance.replace('/virtualMachines/3', '').toLowerCase(),
    ]);
  }, 60_000);

  it('the relay takes a group one zone at a time when its fleet.groups says so, and writes the zone into the slot', async () => {
    const container = 'zones';
    await writeRecord(store(container), 'z', { name: 'z1-a', resourceId: vmId('z1-a'), events: [{ eventId: E(41) }], zone: '1' });
    await writeRecord(store(container), 'z', { name: 'z2-a', resourceId: vmId('z2-a'), events: [{ eventId: E(42) }], zone: '2' });
    arm.rows = [E(41), E(42)].map((eventId, i) => scheduledEventOf({ resourceId: vmId(i === 0 ? 'z1-a' : 'z2-a'), eventId }));
    const r = await relay(container, { eventGrid: undefined }, { groups: { z: { maxUnavailable: 2, zones: 'one-at-a-time' } } });
    expect(await approve(r, { vm: 'z1-a', eventId: E(41) })).toMatchObject({ status: 200 });
    const held = await approve(r, { vm: 'z2-a', eventId: E(42) });
    expect(held).toMatchObject({ status: 409, json: { error: { code: 'HELD', message: expect.stringMatching(/zone/) } } });
    const slots = await openFleetStore(store(container), 'z');
    expect((await slots.list(SLOT_PREFIX)).map((x) => asSlot(x.value))).toMatchObject([{ vm: 'z1-a', zone: '1' }]);
    await slots.close();
  }, 60_000);
});
