/**
 * Azure's own feed beside the fleet's records: the real relay takes Event Grid deliveries (the
 * subscription handshake, then events, from a stand-in written from Event Grid's webhook
 * reference), polls Resource Graph (an HTTPS stand-in of the query API, reached with a token from
 * the IMDS simulator's managed identity endpoint), and verifies Entra ID-protected deliveries (a
 * stand-in of the tenant's signing keys). The fleet store is Blob Storage served by Azurite; the
 * members are whole bridges. No Azure service runs here: Event Grid, Resource Graph and Entra ID
 * are stand-ins, and say so.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import { memberKey, memberName } from '../../src/fleet/budget/records.ts';
import { AZURE_GROUP } from '../../src/fleet/budget/config.ts';
import { startRelay, type RunningRelay } from '../../src/relay/relay.ts';
import { MAX_DELIVERY } from '../../src/relay/fleet-routes.ts';
import type { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { API_SECRET, fleetKeys, fleetPeer, relayConfig, relayInput } from '../../testkit/fleet.ts';
import { cli } from '../e2e/process.ts';
import { secretKey, signatureHeaders } from '../../src/lib/standard-webhooks.ts';
import { FleetStores } from '../../testkit/fleet-stores.ts';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { EventGridDelivery, eventGridEvent, ArmStandIn, scheduledEventOf, SUBSCRIPTION, vmId } from '../../testkit/azure-feed.ts';
import { EntraTenant, TENANT } from '../../testkit/entra-tenant.ts';
import { ROOT, tempDir, waitFor } from '../helpers.ts';

/** The fleet's keys, one set for every replica of the file's relays (as a fleet's replicas share them). */
const KEYS = fleetKeys();
const READ_KEY = 'fleet-read-key-0123456789';
const EG_KEY = 'event-grid-delivery-key-42';
const TLS = {
  key: readFileSync(join(ROOT, 'test/fixtures/tls/key.pem'), 'utf8'),
  cert: readFileSync(join(ROOT, 'test/fixtures/tls/cert.pem'), 'utf8'),
};
let stores: FleetStores;
let peer: AmqpPeer;
let hook: HttpPeer;
let identity: ImdsSimulator;
let dir: ReturnType<typeof tempDir>;
const relays: RunningRelay[] = [];
const relayLines: string[] = [];

/** EntraDelivery: Event Grid's deliveries to the relay, each with the bearer token of an Entra-protected subscription. */
class EntraDelivery extends EventGridDelivery {
  constructor(url: string, token: string) {
    super(`${url}/v1/azure/eventgrid`, { authorization: `Bearer ${token}` });
  }
}

/** waitFor, saying what the relays logged when it times out. */
const waitSaying: typeof waitFor = (check, what, ms, every) =>
  waitFor(check, what, ms, every).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; the relays said:\n${relayLines.join('')}`);
  });

beforeAll(async () => {
  stores = await FleetStores.start();
  peer = await fleetPeer();
  hook = new HttpPeer();
  await hook.listen();
  dir = tempDir();
  // the relay's managed identity: the simulator's token endpoint
  identity = new ImdsSimulator({ vmName: 'relay-vm', tickMs: 10 });
  process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = await identity.listen();
}, 60_000);
afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.close()));
  await stopAll();
  hook.requests.length = 0;
  relayLines.length = 0;
});
afterAll(async () => {
  delete process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST;
  await identity?.close();
  await hook?.close();
  await peer?.close();
  await stores?.stop();
  dir?.cleanup();
});

const store = (container: string) => ({ ...stores.config('blob'), container });

/** the relay's configuration as its file says it */
const relayFile = (container: string, azure: Record<string, unknown>) => relayInput(peer, KEYS, relayOver(container, azure));

const relayOver = (container: string, azure: Record<string, unknown>) => ({
  fleet: { store: store(container), cacheMs: 0 },
  readKeys: [READ_KEY],
  azure: { subscriptions: [SUBSCRIPTION], checkSeconds: 3600, ...azure },
  sinks: [
    {
      name: 'ops',
      type: 'webhook',
      mode: 'structured',
      url: `${hook.url}/unwatched`,
      delivery: { initialBackoffMs: 50, maxBackoffMs: 100 },
    },
  ],
});

async function relay(container: string, azure: Record<string, unknown>): Promise<RunningRelay> {
  const config = relayConfig(peer, KEYS, relayOver(container, azure));
  // what the relays say of trouble (warn and above), shown when a wait times out
  const logger = pino({ level: 'warn' }, { write: (line: string) => void relayLines.push(line) });
  const r = await startRelay(config, logger, { host: '127.0.0.1', port: 0 });
  relays.push(r);
  return r;
}

async function events(r: RunningRelay, query = ''): Promise<Record<string, any>[]> {
  const res = await fetch(`${r.url}/v1/fleet/events?limit=1000${query}`, { headers: { authorization: `Bearer ${READ_KEY}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { events: Record<string, any>[] }).events;
}

/** the CloudEvents the relays' sink received */
const said = () => hook.requests.map((q) => JSON.parse(q.body) as Record<string, any>);

function member(container: string, vm: string, fleet: Record<string, unknown> = {}, rules: unknown[] = []): Promise<Harness> {
  return startBridge({
    sim: { vmName: vm, peers: [], tickMs: 10 },
    config: { approval: { rules }, fleet: { group: 'az', store: store(container), heartbeatSeconds: 5, ...fleet } },
  });
}

/** POST /v1/approvals to the relay, signed with the API secret. */
async function approve(r: RunningRelay, body: Record<string, unknown>) {
  const text = JSON.stringify(body);
  const res = await fetch(`${r.url}/v1/approvals`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...signatureHeaders([secretKey(API_SECRET)!], `msg_${Math.random().toString(36).slice(2)}`, text),
    },
    body: text,
    signal: AbortSignal.timeout(15_000),
  });
  return { status: res.status, json: (await res.json()) as Record<string, any> };
}

/** a member whose bridge stopped long ago: its record, written as the bridge wrote it, three heartbeats old and more */
async function stoppedMember(container: string, name: string, eventId: string, group = 'az'): Promise<void> {
  const s = await openFleetStore(store(container) as never, group);
  const resourceId = vmId(name);
  const key = memberKey({ name, resourceId });
  const at = new Date(Date.now() - 3_600_000).toISOString();
  const event = { eventId, eventType: 'Reboot', status: 'Scheduled', notBefore: at, durationInSeconds: -1, approved: false };
  await s.put(
    memberName(key),
    { member: key, vm: name, resourceId, heartbeatAt: at, heartbeatSeconds: 5, events: [event], slot: null },
    null,
  );
}

/** dated: an Event Grid event whose own times (eventTime, resourceEventTime) say `at`. */
function dated(e: Record<string, any>, at: string): Record<string, unknown> {
  return { ...e, eventTime: at, data: { ...e.data, operationalInfo: { resourceEventTime: at } } };
}

/** Azure's records in the store, by EventId and status. */
async function kept(container: string): Promise<string[]> {
  const s = await openFleetStore(store(container) as never, AZURE_GROUP);
  try {
    return (await s.list('')).map((r) => `${(r.value as any).eventId}:${(r.value as any).status}`).sort();
  } finally {
    await s.close();
  }
}

describe("Azure's feed: what one report may decide", () => {
  it("a report's own time counts no later than its receipt: a Canceled dated 9999 does not outlive Resource Graph listing the event, nor a Scheduled dated 9999 hold back a Started", async () => {
    const graph = new ArmStandIn(TLS, 50);
    await graph.peer.listen();
    try {
      const container = 'azure-clamp';
      const caFile = join(ROOT, 'test/fixtures/tls/cert.pem');
      const r = await relay(container, {
        eventGrid: { key: EG_KEY },
        resourceGraph: { intervalSeconds: 3600 },
        arm: { endpoint: graph.peer.url, caFile },
      });
      await waitSaying(() => graph.asked.length >= 1, 'the first Resource Graph query (none listed)');
      const grid = new EventGridDelivery(`${r.url}/v1/azure/eventgrid?code=${EG_KEY}`);
      const far = '9999-12-31T00:00:00.000Z';
      // Event Grid says the event was canceled, in the year 9999; Resource Graph, read later, still lists it
      const canceled = dated(eventGridEvent({ resourceId: vmId('ghostR'), eventId: 'E-R', status: 'Canceled' }), far);
      expect(await grid.deliver([canceled])).toMatchObject({ status: 200, body: { kept: 1 } });
      expect(await events(r)).toEqual([]);
      graph.rows = [scheduledEventOf({ resourceId: vmId('ghostR'), eventId: 'E-R' })];
      await r.graph!.poll();
      expect((await events(r)).map((e) => `${e.eventId}:${e.status}:${e.azure.source}`)).toEqual(['E-R:Scheduled:resourcegraph']);
      await waitSaying(async () => (await r.feed!.check(0), said().length >= 1), "ghostR's unwatched");
      expect(said().map((e) => `${e.data.vm.name}:${e.data.eventId}`)).toEqual(['ghostR:E-R']);

      // a Scheduled dated 9999 counts as now: the Started that follows it is taken
      const scheduled = dated(eventGridEvent({ resourceId: vmId('ghostS'), eventId: 'E-S' }), far);
      expect(await grid.deliver([scheduled])).toMatchObject({ status: 200, body: { kept: 1 } });
      const s = (await events(r)).find((e) => e.eventId === 'E-S')!;
      expect(Date.parse(s.azure.updatedAt)).toBeLessThanOrEqual(Date.now());
      expect(await grid.deliver([eventGridEvent({ resourceId: vmId('ghostS'), eventId: 'E-S', status: 'Started' })])).toMatchObject({
        status: 200,
        body: { kept: 1 },
      });
      expect((await events(r)).find((e) => e.eventId === 'E-S')).toMatchObject({ status: 'Started' });
      // an event Event Grid and Resource Graph both say is over stays over
      graph.rows = [scheduledEventOf({ resourceId: vmId('ghostR'), eventId: 'E-R', status: 'Completed' })];
      await r.graph!.poll();
      graph.rows = [scheduledEventOf({ resourceId: vmId('ghostR'), eventId: 'E-R' })];
      await r.graph!.poll();
      expect((await events(r)).map((e) => e.eventId)).toEqual(['E-S']);
    } finally {
      await graph.peer.close();
    }
  });

  it('the records of events that ended are deleted once forgetEndedAfterSeconds has passed; pending ones and those ended since stay', async () => {
    const container = 'azure-forget';
    const r = await relay(container, { eventGrid: { key: EG_KEY } });
    const grid = new EventGridDelivery(`${r.url}/v1/azure/eventgrid?code=${EG_KEY}`);
    const longAgo = new Date(Date.now() - 3 * 86_400_000).toISOString();
    const batch = [
      dated(eventGridEvent({ resourceId: vmId('old'), eventId: 'E-OLD', status: 'Completed' }), longAgo),
      dated(eventGridEvent({ resourceId: vmId('gone'), eventId: 'E-GONE', status: 'Canceled' }), longAgo),
      eventGridEvent({ resourceId: vmId('new'), eventId: 'E-NEW', status: 'Completed' }),
      dated(eventGridEvent({ resourceId: vmId('pend'), eventId: 'E-PEND' }), longAgo),
    ];
    expect(await grid.deliver(batch)).toMatchObject({ status: 200, body: { kept: 4 } });
    // the check a delivery starts, or the next one
    await waitSaying(async () => (await r.feed!.check(0), (await kept(container)).length === 2), 'the old records deleted');
    expect(await kept(container)).toEqual(['E-NEW:Completed', 'E-PEND:Scheduled']);
    // a late copy of the old cancel makes an ended record again: no alert, deleted at the next check
    expect(await grid.deliver([batch[1]!])).toMatchObject({ status: 200, body: { kept: 1 } });
    await waitSaying(async () => (await r.feed!.check(0), (await kept(container)).length === 2), 'the late copy deleted');
    expect(said().map((e) => e.data.eventId)).toEqual(['E-PEND']);
  });

  it('one delivery adds at most maxNewPerDelivery new events (a scale set counts each instance): past it, 413, nothing kept, no alert', async () => {
    const container = 'azure-cap';
    const r = await relay(container, { eventGrid: { key: EG_KEY, maxNewPerDelivery: 5 } });
    const grid = new EventGridDelivery(`${r.url}/v1/azure/eventgrid?code=${EG_KEY}`);
    const ghost = (i: number) => eventGridEvent({ resourceId: vmId(`cap${i}`), eventId: `E-CAP-${i}` });
    const six = [0, 1, 2, 3, 4, 5].map(ghost);
    expect(await grid.deliver(six)).toMatchObject({
      status: 413,
      attempts: 1,
      body: { error: { code: 'TOO_MANY_EVENTS', message: expect.stringMatching(/6 new events, more than .*maxNewPerDelivery \(5\)/) } },
    });
    expect(await kept(container)).toEqual([]);
    // one event two hundred times is one record
    const five = [...Array.from({ length: 200 }, () => ghost(0)), ...[1, 2, 3, 4].map(ghost)];
    expect(await grid.deliver(five)).toMatchObject({ status: 200, body: { received: 204, kept: 5 } });
    // what is kept already adds nothing
    expect(await grid.deliver(six)).toMatchObject({ status: 200, body: { kept: 1 } });
    // a scale set's event naming six instances adds six
    const vmss = `/subscriptions/${SUBSCRIPTION}/resourceGroups/rg-fleet/providers/Microsoft.Compute/virtualMachineScaleSets/web`;
    const set = eventGridEvent({ resourceId: vmss, eventId: 'E-SET', resources: ['web_0', 'web_1', 'web_2', 'web_3', 'web_4', 'web_5'] });
    expect(await grid.deliver([set])).toMatchObject({ status: 413, body: { error: { code: 'TOO_MANY_EVENTS' } } });
    await waitSaying(async () => (await r.feed!.check(0), said().length >= 6), 'six unwatched');
    for (let i = 0; i < 3; i++) await r.feed!.check(0);
    expect(said()).toHaveLength(6);

    // with the default bound, the hostile megabyte: as many events of as many VMs as fit in it, refused whole
    const open = await relay('azure-cap-default', { eventGrid: { key: EG_KEY } });
    const fit = Math.floor((0.95 * MAX_DELIVERY) / Buffer.byteLength(JSON.stringify(ghost(1000))));
    const many = Array.from({ length: fit }, (_, i) => eventGridEvent({ resourceId: vmId(`h${i}`), eventId: `H-${i}` }));
    expect(many.length).toBeGreaterThan(500);
    expect(Buffer.byteLength(JSON.stringify(many))).toBeLessThan(MAX_DELIVERY);
    const big = await new EventGridDelivery(`${open.url}/v1/azure/eventgrid?code=${EG_KEY}`).deliver(many);
    expect(big).toMatchObject({ status: 413, attempts: 1, body: { error: { code: 'TOO_MANY_EVENTS' } } });
    expect(await kept('azure-cap-default')).toEqual([]);
    for (let i = 0; i < 3; i++) await open.feed!.check(0);
    expect(said()).toHaveLength(6);
  }, 60_000);
});

describe("Azure's feed: nothing unwatched", () => {
  it("Event Grid: the handshakes, then one unwatched per VM with no bridge or a stopped one, across two replicas; none for watched events; Completed ends a silent member's event", async () => {
    const container = 'azure-eventgrid';
    const live = await Promise.all([member(container, 'live1'), member(container, 'live2')]);
    const liveEvents = live.map((h) => h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 }));
    await stoppedMember(container, 'halted', 'E-HALTED');
    const [r1, r2] = [
      await relay(container, { eventGrid: { key: EG_KEY }, unwatchedAfterSeconds: 5 }),
      await relay(container, { eventGrid: { key: EG_KEY }, unwatchedAfterSeconds: 5 }),
    ];
    await waitFor(async () => (await events(r1)).length === 3, 'the members list their events');

    const grid = new EventGridDelivery(`${r1.url}/v1/azure/eventgrid?code=${EG_KEY}`);
    expect(await grid.validate()).toEqual({ status: 200, echoed: true });
    expect(await grid.abuseProtection()).toEqual({ status: 200, allowed: 'eventgrid.azure.net' });

    const ghosts = ['ghost1', 'ghost2', 'ghost3'].map((n, i) => ({ resourceId: vmId(n), eventId: `E-GHOST-${i}` }));
    const batch = [
      ...ghosts.map((g) => eventGridEvent(g)),
      eventGridEvent({ resourceId: vmId('halted'), eventId: 'E-HALTED' }),
      // the events the live members list, as Azure lists them: watched, so nothing is said
      ...live.map((h, i) => eventGridEvent({ resourceId: h.bridge.identity.resourceId!, eventId: liveEvents[i]!.eventId })),
      // a type of another topic: counted and ignored
      eventGridEvent(
        { resourceId: vmId('other'), eventId: 'E-OTHER' },
        'Microsoft.ResourceNotifications.HealthResources.AvailabilityStatusChanged',
      ),
    ];
    const first = await grid.deliver(batch);
    expect(first).toMatchObject({ status: 200, body: { received: 6, kept: 6, ignored: 1 }, attempts: 1 });
    // the same delivery again, to the other replica (Event Grid delivers at least once): nothing new
    const again = await new EventGridDelivery(`${r2.url}/v1/azure/eventgrid?code=${EG_KEY}`).deliver(batch);
    expect(again).toMatchObject({ status: 200, body: { kept: 0 } });

    // both replicas look, again and again: each unwatched VM is said once between them (the store decides who)
    const both = async () => {
      await Promise.all([r1.feed!.check(0), r2.feed!.check(0)]);
      return said();
    };
    await waitSaying(async () => (await both()).length >= 4, 'four unwatched CloudEvents', 20_000, 200);
    for (let i = 0; i < 5; i++) await both();
    const out = said();
    expect(out.map((e) => e.data.vm.name).sort()).toEqual(['ghost1', 'ghost2', 'ghost3', 'halted']);
    expect(new Set(out.map((e) => e.id)).size).toBe(4);
    expect(out.every((e) => e.type === 'azure.scheduledevent.unwatched' && e.specversion === '1.0')).toBe(true);
    expect(out.find((e) => e.data.vm.name === 'halted')!.data.unwatched).toMatchObject({
      why: 'stale-member',
      group: 'az',
      source: 'eventgrid',
    });
    expect(out.find((e) => e.data.vm.name === 'ghost1')!.data.unwatched).toMatchObject({ why: 'no-member', group: null });
    expect(out.find((e) => e.data.vm.name === 'ghost1')!.source).toBe(vmId('ghost1').toLowerCase());

    // the read API lists them, why, and Azure's record beside the watched ones
    const listed = await events(r2);
    expect(
      listed
        .filter((e) => e.unwatched !== undefined)
        .map((e) => `${e.vm}:${e.unwatched.why}`)
        .sort(),
    ).toEqual(['ghost1:no-member', 'ghost2:no-member', 'ghost3:no-member', 'halted:stale-member']);
    for (const h of live)
      expect(listed.find((e) => e.vm === h.sim.vmName)).toMatchObject({
        member: 'fresh',
        azure: { status: 'Scheduled', source: 'eventgrid' },
      });
    expect(await events(r1, '&status=unwatched')).toHaveLength(4);

    // Azure says the silent member's event is over: it is no longer pending, though its stale record still lists it
    expect((await grid.deliver([eventGridEvent({ resourceId: vmId('halted'), eventId: 'E-HALTED', status: 'Completed' })])).status).toBe(
      200,
    );
    await waitFor(async () => !(await events(r1)).some((e) => e.eventId === 'E-HALTED'), "halted's event ended by Azure's Completed");
    expect(said()).toHaveLength(4);
  }, 60_000);

  it('refuses a delivery without the key (401), a malformed batch whole (400), and a topic outside the subscriptions (403): nothing of them is kept', async () => {
    const container = 'azure-refusals';
    const r = await relay(container, { eventGrid: { key: EG_KEY } });
    const keyless = new EventGridDelivery(`${r.url}/v1/azure/eventgrid`);
    const wrong = new EventGridDelivery(`${r.url}/v1/azure/eventgrid?code=not-the-delivery-key`);
    const good = new EventGridDelivery(`${r.url}/v1/azure/eventgrid?code=${EG_KEY}`);
    const one = eventGridEvent({ resourceId: vmId('ghost9'), eventId: 'E-9' });
    expect(await keyless.deliver([one])).toMatchObject({ status: 401, attempts: 1, body: { error: { code: 'UNAUTHORIZED' } } });
    expect(await wrong.deliver([one])).toMatchObject({ status: 401 });
    expect(await keyless.validate()).toMatchObject({ status: 401, echoed: false });
    // one event without data: the whole batch is refused, the good one beside it too
    const broken = { ...eventGridEvent({ resourceId: vmId('ghost8'), eventId: 'E-8' }), data: undefined };
    expect(await good.deliver([one, broken])).toMatchObject({ status: 400, attempts: 1, body: { error: { code: 'MALFORMED' } } });
    expect(await good.deliver({ not: 'an array' } as never)).toMatchObject({ status: 400 });
    const outsider = eventGridEvent({ resourceId: vmId('ghost7'), eventId: 'E-7' }, undefined, '11111111-1111-1111-1111-111111111111');
    expect(await good.deliver([one, outsider])).toMatchObject({ status: 403, body: { error: { code: 'TOPIC_NOT_ALLOWED' } } });
    expect(await good.validate('/subscriptions/11111111-1111-1111-1111-111111111111')).toMatchObject({ status: 403, echoed: false });
    expect(await events(r)).toEqual([]);
    await r.feed!.check(0);
    expect(said()).toEqual([]);
    // the same event alone is taken
    expect(await good.deliver([one])).toMatchObject({ status: 200, body: { kept: 1 } });
    expect((await events(r)).map((e) => e.vm)).toEqual(['ghost9']);
  });

  it('Resource Graph: maintenanceresources queried with the managed identity, every page read, an unwatched VM said', async () => {
    const graph = new ArmStandIn(TLS, 2);
    await graph.peer.listen();
    try {
      graph.rows = ['rg1', 'rg2', 'rg3'].map((n, i) => scheduledEventOf({ resourceId: vmId(n), eventId: `E-RG-${i}` }));
      const caFile = join(ROOT, 'test/fixtures/tls/cert.pem');
      const r = await relay('azure-graph', { resourceGraph: { intervalSeconds: 3600 }, arm: { endpoint: graph.peer.url, caFile } });
      await waitSaying(async () => (await events(r)).length === 3, 'the three rows kept', 20_000, 100);
      // two pages, each with a token for Resource Manager's own origin, naming the subscriptions
      expect(graph.asked.map((a) => a.skipToken)).toEqual([undefined, '2']);
      expect(graph.asked.every((a) => a.aud === graph.peer.url && JSON.stringify(a.subscriptions) === JSON.stringify([SUBSCRIPTION]))).toBe(
        true,
      );
      await waitSaying(async () => (await r.feed!.check(0), said().length >= 3), 'three unwatched', 20_000, 100);
      expect(
        said()
          .map((e) => `${e.data.vm.name}:${e.data.unwatched.source}`)
          .sort(),
      ).toEqual(['rg1:resourcegraph', 'rg2:resourcegraph', 'rg3:resourcegraph']);
    } finally {
      await graph.peer.close();
    }
  });

  it("Entra ID-protected delivery: only the tenant's token issued to Event Grid, with the role, for the audience, within a bounded life; every other refused 401 and logged without it", async () => {
    const tenant = new EntraTenant();
    await tenant.listen();
    try {
      const audience = 'api://se-bridge-relay';
      const role = 'AzureEventGridSecureWebhookSubscriber';
      const r = await relay('azure-entra', { eventGrid: { entra: { tenantId: TENANT, audience, role, jwksUrl: tenant.jwksUrl } } });
      const now = Math.floor(Date.now() / 1000);
      const token = (claims: Record<string, unknown> = {}, o: { v?: 1 | 2; kid?: string | null } = {}) =>
        tenant.token(audience, { roles: [role], ...claims }, o);
      const deliver = (t: string, eventId = 'E-5') =>
        new EntraDelivery(r.url, t).deliver([eventGridEvent({ resourceId: vmId('ghost5'), eventId })]);
      const refusals: [string, string, RegExp][] = [
        ['another audience', token({ aud: 'api://another' }), /another audience/],
        ['an audience array', token({ aud: [audience, 'api://another'] }), /more than one audience/],
        ['another tenant', token({ tid: '11111111-1111-1111-1111-111111111111' }), /another tenant/],
        ["another tenant's issuer", token({ iss: 'https://sts.windows.net/11111111-1111-1111-1111-111111111111/' }), /issuer/],
        ['expired', token({ exp: now - 3600, iat: now - 7200, nbf: now - 7200 }), /expired/],
        ['no exp', token({ exp: undefined }), /no exp claim/],
        ['ten years long', token({ exp: now + 10 * 365 * 86_400 }), /lives \d+ s, longer than maxLifetimeSeconds \(86400\)/],
        ['issued a year ago', token({ iat: now - 365 * 86_400, nbf: now - 365 * 86_400 }), /lives|issued too long ago/],
        ['a future nbf', token({ nbf: now + 3600, exp: now + 7200 }), /not valid yet/],
        ['another appid (v1)', token({ appid: '22222222-2222-2222-2222-222222222222' }), /issued to 22222222-/],
        ['another azp (v2)', token({ azp: '33333333-3333-3333-3333-333333333333' }, { v: 2 }), /issued to 33333333-/],
        ['no client', token({ appid: undefined }), /names no client/],
        ['no roles', token({ roles: undefined }), new RegExp(`does not carry the role ${role}`)],
        ['another role', token({ roles: ['Reader'] }), /does not carry the role/],
        ['alg none', tenant.forged(audience, 'none'), /not signed with RS256/],
        ['HS256 keyed with the public key', tenant.forged(audience, 'hs256-public-key'), /not signed with RS256/],
        ["a key not the tenant's", token({}, { kid: 'k-unknown' }), /not one of the tenant's/],
        ['no key named', token({}, { kid: null }), /names no key/],
        ['a broken signature', `${token().slice(0, -6)}AAAAAA`, /signature does not verify/],
        ['no JWT at all', 'not.a.jwt', /well-formed/],
      ];
      for (const [what, t, why] of refusals)
        expect(await deliver(t), what).toMatchObject({
          status: 401,
          attempts: 1,
          body: { error: { code: 'UNAUTHORIZED', message: expect.stringMatching(why) } },
        });
      expect(await events(r)).toEqual([]);
      // each refusal logged with why, never with the token
      const refused = relayLines.filter((l) => l.includes('RELAY_DELIVERY_REFUSED'));
      expect(refused).toHaveLength(refusals.length);
      for (const [what, t] of refusals.filter(([, t]) => t.length > 100))
        expect(relayLines.join('').includes(t.split('.')[1]!), what).toBe(false);
      // the tenant's own tokens for Event Grid, in either version, with the role: taken
      expect(await deliver(token())).toMatchObject({ status: 200, body: { kept: 1 } });
      expect(await deliver(token({}, { v: 2 }), 'E-6')).toMatchObject({ status: 200, body: { kept: 1 } });
      expect((await events(r)).map((e) => e.eventId).sort()).toEqual(['E-5', 'E-6']);
      // the key set was read once, and once more for the unknown key: never per token
      expect(tenant.fetches).toBeLessThanOrEqual(2);
    } finally {
      await tenant.close();
    }
  });

  it("Entra ID-protected delivery while the tenant's key set is down or throttled: 503, which Event Grid delivers again, without a request storm", async () => {
    for (const mode of ['down', 'throttled'] as const) {
      const tenant = new EntraTenant();
      await tenant.listen();
      try {
        tenant.mode = mode;
        const audience = 'api://se-bridge-relay';
        const r = await relay(`azure-entra-${mode}`, { eventGrid: { entra: { tenantId: TENANT, audience, jwksUrl: tenant.jwksUrl } } });
        const grid = new EntraDelivery(r.url, tenant.token(audience));
        // Event Grid retries a 503 on its schedule (scaled): every attempt answered at once, the keys asked once
        const d = await grid.deliver([eventGridEvent({ resourceId: vmId('ghost6'), eventId: 'E-6' })]);
        expect(d, mode).toMatchObject({ status: 503, attempts: 6, body: { error: { code: 'ENTRA_KEYS_UNAVAILABLE' } } });
        expect(d.body.error.message).toMatch(mode === 'down' ? /answered 503/ : /answered 429/);
        expect(tenant.fetches, mode).toBe(1);
        expect(await events(r)).toEqual([]);
      } finally {
        await tenant.close();
      }
    }
  });

  it("approval via arm: VMs with no bridge approved through Resource Manager when forced; a stopped member waits for its group's slot, then is approved in its name; who asked is kept", async () => {
    // Resource Manager takes a scheduled event's id as a GUID
    const G = (n: number) => `00000000-0000-4000-9000-${String(n).padStart(12, '0')}`;
    const id = { ghostA: G(1), ghostB: G(2), ghostC: G(3), H2: G(4), none: G(5) };
    const arm = new ArmStandIn(TLS, 50);
    await arm.peer.listen();
    try {
      const container = 'azure-arm';
      // keeper holds its group's one slot: approved by policy, its maintenance Started until the test ends it
      const keeper = await member(container, 'keeper', { group: 'arm', maxUnavailable: 1, retryMs: 200 }, [
        { match: {}, action: 'approve' },
      ]);
      const ek = keeper.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 600_000 });
      await waitFor(() => keeper.sim.startRequests.length === 1, "keeper's approval");
      await stoppedMember(container, 'halted2', id.H2, 'arm');
      const ghosts = ['ghostA', 'ghostB', 'ghostC'];
      arm.rows = [
        ...ghosts.map((n) => scheduledEventOf({ resourceId: vmId(n), eventId: id[n as 'ghostA'] })),
        scheduledEventOf({ resourceId: vmId('halted2'), eventId: id.H2 }),
        scheduledEventOf({ resourceId: keeper.bridge.identity.resourceId!, eventId: ek.eventId, status: 'Started' }),
      ];
      const caFile = join(ROOT, 'test/fixtures/tls/cert.pem');
      const r = await relay(container, {
        resourceGraph: { intervalSeconds: 3600 },
        arm: { endpoint: arm.peer.url, caFile },
        unwatchedAfterSeconds: 5,
      });
      await waitSaying(async () => (await r.feed!.check(0), said().length >= 4), 'four unwatched', 20_000, 200);
      expect(
        said()
          .map((e) => e.data.vm.name)
          .sort(),
      ).toEqual(['ghostA', 'ghostB', 'ghostC', 'halted2']);

      // no member's record names them, so no group's budget is known: only a forced approval, with a reason
      expect(await approve(r, { vm: vmId('ghostA'), eventId: id.ghostA, approver: 'oncall', via: 'arm' })).toMatchObject({
        status: 409,
        json: { error: { code: 'FLEET_BUDGET_UNKNOWN' } },
      });
      for (const n of ghosts.slice(0, 2)) {
        const a = await approve(r, {
          vm: vmId(n),
          eventId: id[n as 'ghostA'],
          approver: 'oncall',
          via: 'arm',
          force: true,
          reason: 'no bridge',
        });
        expect(a).toMatchObject({ status: 200, json: { status: 'approved', via: 'arm', approvedBy: 'oncall', vm: n, forced: true } });
      }
      // the third from the command line, signed with the API secret from the environment
      const byCli = await cli(
        ['approve', id.ghostC, '--relay', r.url, '--vm', vmId('ghostC'), '--via', 'arm', '--force', '--reason', 'no bridge'],
        { SE_BRIDGE_RELAY_API_SECRET: API_SECRET },
      );
      expect(byCli).toMatchObject({ code: 0, stdout: `${id.ghostC}: approved past the fleet budget\n` });
      expect(arm.acknowledged.map((x) => x.eventId)).toEqual([id.ghostA, id.ghostB, id.ghostC]);
      // the stopped member of group arm waits: keeper holds the group's one slot
      const held = await approve(r, { vm: vmId('halted2'), eventId: id.H2, approver: 'oncall', via: 'arm', reason: 'its bridge is gone' });
      expect(held).toMatchObject({ status: 409, json: { status: 'held', error: { code: 'HELD' } } });
      expect(held.json.error.message).toMatch(/held by keeper/);
      expect(arm.acknowledged).toHaveLength(3);
      // keeper's maintenance ends; it gives its slot back; now the relay takes it in halted2's name
      keeper.sim.removeEvent(ek.eventId);
      const fleet = async () =>
        (await (await fetch(`${r.url}/v1/fleet`, { headers: { authorization: `Bearer ${READ_KEY}` } })).json()) as Record<string, any>;
      await waitFor(async () => (await fleet()).groups.find((g: any) => g.group === 'arm').slots.length === 0, "keeper's slot given back");
      const ok = await approve(r, { vm: 'halted2', eventId: id.H2, approver: 'oncall', via: 'arm', reason: 'its bridge is gone' });
      expect(ok).toMatchObject({ status: 200, json: { status: 'approved', via: 'arm', vm: 'halted2' } });
      expect((await fleet()).groups.find((g: any) => g.group === 'arm').slots).toMatchObject([{ vm: 'halted2', eventId: id.H2 }]);
      // once only; who asked is in the record every replica reads
      expect(await approve(r, { vm: vmId('ghostA'), eventId: id.ghostA, via: 'arm' })).toMatchObject({
        status: 200,
        json: { status: 'already-approved', approvedBy: 'oncall' },
      });
      expect(arm.acknowledged).toHaveLength(4);
      const listed = await events(r);
      expect(listed.find((e) => e.vm === 'halted2')).toMatchObject({
        azure: { acknowledged: { by: 'oncall', reason: 'its bridge is gone' } },
      });
      // an event Azure does not list, and a via that is not arm
      expect(await approve(r, { vm: vmId('ghostA'), eventId: id.none, via: 'arm' })).toMatchObject({
        status: 404,
        json: { error: { code: 'NOT_LISTED_BY_AZURE' } },
      });
      expect(await approve(r, { vm: vmId('ghostA'), eventId: id.ghostB, via: 'carrier-pigeon' })).toMatchObject({ status: 400 });
      expect(arm.acknowledged).toHaveLength(4);

      // the whole fleet from the relay's configuration file: every group, and what no bridge watches
      const file = join(dir.path, 'relay.json');
      writeFileSync(
        file,
        JSON.stringify(
          relayFile(container, {
            resourceGraph: { intervalSeconds: 3600 },
            arm: { endpoint: arm.peer.url, caFile },
            unwatchedAfterSeconds: 5,
          }),
        ),
      );
      const status = await cli(['fleet', 'status', '--relay-config', file]);
      expect(status.code).toBe(0);
      expect(status.stdout).toMatch(/Group arm: 1 of 1 slot held; 2 members/);
      expect(status.stdout).toMatch(/Unwatched \(Azure lists them, no bridge watches them\):/);
      expect(status.stdout).toMatch(
        /ghostA\s+\S+-000000000001\s+Reboot\s+Scheduled\s+\S+\s+no-member\s+by oncall through Resource Manager/,
      );
      expect(status.stdout).toMatch(
        /halted2\s+\S+-000000000004\s+Reboot\s+Scheduled\s+\S+\s+stale-member\s+by oncall through Resource Manager/,
      );
    } finally {
      await arm.peer.close();
    }
  }, 60_000);
});
