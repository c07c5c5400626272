/**
 * The fleet view: whole bridges in three groups (two with budgets, one a view only) write their
 * records to one store (Blob Storage served by Azurite), and two relay replicas (the real relay,
 * Service Bus played by the AMQP peer) read the whole fleet from it: GET /v1/fleet and
 * GET /v1/fleet/events, behind a read key. One member is a real daemon process, killed with
 * SIGKILL: it shows as stale. Nothing is mocked.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRelay, type RunningRelay } from '../../src/relay/relay.ts';
import type { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { API_SECRET, fleetKeys, fleetPeer, relayConfig } from '../../testkit/fleet.ts';
import { RelayConfig } from '../../src/relay/config.ts';
import { secretKey, signatureHeaders } from '../../src/lib/standard-webhooks.ts';
import { FleetStores, memberVm } from '../../testkit/fleet-stores.ts';
import { FleetConfig } from '../../src/fleet/budget/config.ts';
import { memberKey } from '../../src/fleet/budget/records.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { tempDir, waitFor } from '../helpers.ts';
import { start } from '../e2e/process.ts';
import { EventGridDelivery, eventGridEvent, SUBSCRIPTION, vmId } from '../../testkit/azure-feed.ts';

export const READ_KEY = 'fleet-read-key-0123456789';
let stores: FleetStores;
let peer: AmqpPeer;
const relays: RunningRelay[] = [];
const sims: ImdsSimulator[] = [];

beforeAll(async () => {
  stores = await FleetStores.start();
  peer = await fleetPeer();
}, 60_000);
afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.close()));
  await stopAll();
  await Promise.all(sims.splice(0).map((s) => s.close()));
});
afterAll(async () => {
  await peer?.close();
  await stores?.stop();
});

const store = (container: string) => ({ ...stores.config('blob'), container });

async function relay(container: string, over: Record<string, unknown> = {}): Promise<RunningRelay> {
  const config = relayConfig(peer, fleetKeys(), { fleet: { store: store(container), cacheMs: 0 }, readKeys: [READ_KEY], ...over });
  const r = await startRelay(config, pino({ level: 'silent' }), { host: '127.0.0.1', port: 0 });
  relays.push(r);
  return r;
}

async function read(r: RunningRelay, path: string, key: string | null = READ_KEY) {
  const res = await fetch(`${r.url}${path}`, {
    headers: key === null ? {} : { authorization: `Bearer ${key}` },
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, json: (await res.json()) as Record<string, any> };
}

/** every page of /v1/fleet/events, `limit` at a time (bounded). */
async function allEvents(r: RunningRelay, query = '', limit = 7): Promise<Record<string, any>[]> {
  const out: Record<string, any>[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 100; i++) {
    const q = new URLSearchParams(query);
    q.set('limit', String(limit));
    if (cursor !== null) q.set('cursor', cursor);
    const p = await read(r, `/v1/fleet/events?${q}`);
    expect(p.status).toBe(200);
    out.push(...(p.json.events as Record<string, any>[]));
    cursor = p.json.next as string | null;
    if (cursor === null) return out;
  }
  throw new Error('more than 100 pages');
}

function member(container: string, group: string, vm: string, budget: number | string | null, rules: unknown[] = []): Promise<Harness> {
  return startBridge({
    sim: { vmName: vm, peers: [], tickMs: 10 },
    config: {
      approval: { rules },
      fleet: { group, store: store(container), heartbeatSeconds: 5, ...(budget === null ? {} : { maxUnavailable: budget }) },
    },
  });
}

describe('the fleet view: every member in one store, read by the relay', () => {
  it('twenty bridges in three groups, two relay replicas: every pending event with its state, both replicas agree, a member killed with SIGKILL goes stale', async () => {
    const container = 'view-twenty';
    // groups a and b have budgets (2, and 50%); c is a view only; the first member of a approves its event by policy
    const plan = [
      ...Array.from({ length: 7 }, (_, i) => ['fv-a', `a${i}`, 2, i === 0 ? [{ match: {}, action: 'approve' }] : []] as const),
      ...Array.from({ length: 7 }, (_, i) => ['fv-b', `b${i}`, '50%', []] as const),
      ...Array.from({ length: 5 }, (_, i) => ['fv-c', `c${i}`, null, []] as const),
    ];
    const hs = await Promise.all(plan.map(([g, vm, budget, rules]) => member(container, g, vm, budget, [...rules])));
    // the twentieth, in group c: a daemon process of its own
    const dir = tempDir();
    const sim = new ImdsSimulator({ vmName: 'c-proc', peers: [], tickMs: 10 });
    await sim.listen(0);
    sims.push(sim);
    const file = join(dir.path, 'bridge.json');
    writeFileSync(
      file,
      JSON.stringify({
        imds: { endpoint: sim.url, pollIntervalMs: 200 },
        state: { path: join(dir.path, 'state.db') },
        sinks: [{ name: 'audit', type: 'file', path: join(dir.path, 'events.jsonl') }],
        observability: { listen: 'off' },
        fleet: { group: 'fv-c', store: store(container), heartbeatSeconds: 5 },
      }),
    );
    const daemon = start(['run', '--config', file]);
    try {
      const events = [...hs.map((h) => h.sim.addEvent({ noticeMs: 600_000 })), sim.addEvent({ noticeMs: 600_000 })];
      const [r1, r2] = [await relay(container), await relay(container)];
      // every event listed once: the count alone could be met by an event seen twice (paged while a0's Started event,
      // its NotBefore gone, moved to the last page) while a member's record, written at most once a second, lags its read
      const expected = JSON.stringify(events.map((e) => e.eventId).sort());
      await waitFor(
        async () =>
          JSON.stringify((await allEvents(r1)).map((e) => e.eventId).sort()) === expected && hs[0]!.sim.startRequests.length === 1,
        'every member lists its event, and a0 approved',
        30_000,
      );
      // a0's approval shows in its record: who, how, and the slot it holds
      await waitFor(async () => (await allEvents(r1, 'group=fv-a')).some((e) => e.approval !== undefined), "a0's approval in its record");
      const list = await allEvents(r1);
      expect(list.map((e) => e.eventId).sort()).toEqual(events.map((e) => e.eventId).sort());
      // a0's approval started its maintenance; the others wait
      expect(list.filter((e) => e.status !== 'Scheduled').map((e) => `${e.vm}:${e.status}`)).toEqual(['a0:Started']);
      expect(list.every((e) => e.member === 'fresh' && e.unwatched === undefined)).toBe(true);
      // ordered by NotBefore, then VM
      const keys = list.map((e) => `${e.notBefore}|${e.vm}`);
      expect(keys).toEqual([...keys].sort());
      expect(list.find((e) => e.vm === 'a0')).toMatchObject({ group: 'fv-a', approval: { by: 'policy rules[0]', via: 'policy' } });
      expect(list.filter((e) => e.group === 'fv-c')).toHaveLength(6);
      // both replicas say the same, page by page
      const strip = (es: Record<string, any>[]) => es.map((e) => ({ ...e, heartbeatAt: undefined }));
      expect(strip(await allEvents(r2, '', 5))).toEqual(strip(await allEvents(r1, '', 7)));
      // the groups: their budgets as the members have them (50% of 7 is 3.5, rounded up 4), c without one
      const fleet = await read(r2, '/v1/fleet');
      expect(fleet.status).toBe(200);
      const groups = Object.fromEntries((fleet.json.groups as Record<string, any>[]).map((g) => [g.group, g]));
      expect(groups['fv-a']).toMatchObject({ maxUnavailable: 2, members: 7, stale: 0 });
      expect(groups['fv-a'].slots).toHaveLength(1);
      expect(groups['fv-b']).toMatchObject({ maxUnavailable: 4, members: 7 });
      expect(groups['fv-c']).toMatchObject({ maxUnavailable: null, members: 6, slots: [] });
      expect(fleet.json).toMatchObject({ pending: 20, unwatched: 0, stale: [] });
      expect((fleet.json.members as Record<string, any>[]).every((m) => typeof m.version === 'string')).toBe(true);

      // the daemon is killed: no goodbye; three heartbeats later its record is stale
      daemon.kill('SIGKILL');
      await waitFor(
        async () => ((await read(r1, '/v1/fleet')).json.stale as { vm: string }[]).some((s) => s.vm === 'c-proc'),
        'c-proc stale',
        30_000,
      );
      const stale = await allEvents(r2, 'group=fv-c');
      expect(stale.find((e) => e.vm === 'c-proc')).toMatchObject({ member: 'stale' });
      expect(stale.filter((e) => e.member === 'fresh')).toHaveLength(5);
      // filters: a type, a status, the held ones (none)
      expect(await allEvents(r1, 'type=Freeze')).toHaveLength(list.filter((e) => e.eventType === 'Freeze').length);
      expect((await allEvents(r1, 'status=Started')).map((e) => e.vm)).toEqual(['a0']);
      expect(await allEvents(r1, 'status=held')).toEqual([]);
    } finally {
      daemon.kill('SIGKILL');
      dir.cleanup();
    }
  }, 90_000);

  it("names a member not healthy past its bound, left out of its group's count, and one that still counts", async () => {
    const container = 'view-unavailable';
    const group = 'fv-gone';
    const members = await openFleetStore(FleetConfig.parse({ group, store: store(container) }).store, group);
    const now = Date.now();
    const record = (vm: string, heartbeatAt: number, healthy: boolean) => ({
      ...{ member: memberKey(memberVm(vm)), vm, resourceId: memberVm(vm).resourceId, heartbeatAt: new Date(heartbeatAt).toISOString() },
      ...{ heartbeatSeconds: 30, events: [], slot: null, maxUnavailable: 1, unhealthyCountsForSeconds: 600 },
      health: { healthy, since: new Date(heartbeatAt - 60_000).toISOString(), ...(healthy ? {} : { detail: 'answered 503' }) },
    });
    try {
      for (const r of [record('live', now, true), record('sick', now, false), record('gone', now - 30 * 86_400_000, true)])
        await members.put(`member-${r.member}`, r, null);
    } finally {
      await members.close();
    }
    const r = await relay(container);
    const fleet = await read(r, '/v1/fleet');
    const byVm = Object.fromEntries((fleet.json.members as Record<string, any>[]).map((m) => [m.vm, m]));
    expect(byVm.live).not.toHaveProperty('unavailable');
    expect(byVm.sick.unavailable).toMatchObject({ counts: true, why: 'answered 503' });
    expect(byVm.gone.unavailable).toMatchObject({ counts: false, why: 'its record went stale' });
    expect(Date.parse(byVm.gone.unavailable.countsUntil)).toBe(now - 30 * 86_400_000 + 600_000);
  });

  it('refuses a read without a key, with a wrong one, and a bad query, each with a JSON 4xx', async () => {
    const r = await relay('view-refusals');
    expect(await read(r, '/v1/fleet', null)).toMatchObject({ status: 401, json: { error: { code: 'UNAUTHORIZED' } } });
    expect(await read(r, '/v1/fleet/events', 'not-the-read-key-at-all')).toMatchObject({ status: 401 });
    expect(await read(r, '/v1/fleet/events?limit=0')).toMatchObject({ status: 400, json: { error: { code: 'BAD_LIMIT' } } });
    expect(await read(r, '/v1/fleet/events?limit=abc')).toMatchObject({ status: 400, json: { error: { code: 'BAD_LIMIT' } } });
    expect(await read(r, '/v1/fleet/events?cursor=zzz')).toMatchObject({ status: 400, json: { error: { code: 'BAD_CURSOR' } } });
    expect(await read(r, '/v1/fleet/events?vm=x')).toMatchObject({ status: 400, json: { error: { code: 'UNKNOWN_PARAMETER' } } });
    // a filter value the API does not know is refused like an unknown parameter, naming the values it takes
    expect(await read(r, '/v1/fleet/events?status=Pending')).toMatchObject({
      status: 400,
      json: { error: { code: 'BAD_FILTER', message: expect.stringMatching(/Scheduled, Started, held, unwatched/) } },
    });
    expect(await read(r, '/v1/fleet/events?type=Reboots')).toMatchObject({
      status: 400,
      json: { error: { code: 'BAD_FILTER', message: expect.stringMatching(/Freeze, Reboot, Redeploy, Preempt, Terminate/) } },
    });
    expect(await read(r, '/v1/fleet/events?status=')).toMatchObject({ status: 400, json: { error: { code: 'BAD_FILTER' } } });
    expect(await read(r, '/v1/fleet/events?status=started&type=freeze')).toMatchObject({ status: 200, json: { events: [] } });
    expect(await read(r, '/v1/fleet/events')).toMatchObject({ status: 200, json: { events: [], total: 0, next: null } });
    // /readyz says when the store was last read, and whether it answered
    const ready = (await (await fetch(`${r.url}/readyz`)).json()) as Record<string, any>;
    expect(ready).toMatchObject({ fleet: { lastError: null, store: expect.stringMatching(/view-refusals/) } });
    expect(Date.parse(ready.fleet.readAt)).toBeGreaterThan(0);
    // a relay without readKeys has no read API
    const closed = await startRelay(relayConfig(peer, fleetKeys()), pino({ level: 'silent' }), { host: '127.0.0.1', port: 0 });
    relays.push(closed);
    expect(await read(closed, '/v1/fleet')).toMatchObject({ status: 404, json: { error: { code: 'NOT_FOUND' } } });
    expect((await (await fetch(`${closed.url}/readyz`)).json()) as Record<string, unknown>).not.toHaveProperty('fleet');
  });

  it('a relay of the fleet view alone, with no Service Bus: it reads the fleet and refuses approvals to members, naming what is missing', async () => {
    await member('view-alone', 'fv-alone', 'solo', null).then((h) => h.sim.addEvent({ noticeMs: 600_000 }));
    const config = RelayConfig.parse({
      ...{ listen: '127.0.0.1:0', observability: { listen: 'off' }, log: { level: 'silent' } },
      ...{ fleet: { store: store('view-alone'), cacheMs: 0 }, readKeys: [READ_KEY], apiSecrets: [API_SECRET] },
    });
    const r = await startRelay(config, pino({ level: 'silent' }), { host: '127.0.0.1', port: 0 });
    relays.push(r);
    await waitFor(async () => (await allEvents(r)).length === 1, "solo's event");
    expect((await read(r, '/v1/fleet')).json).toMatchObject({ pending: 1, groups: [{ group: 'fv-alone', members: 1 }] });
    const signed = (body: string) => ({
      'content-type': 'application/json',
      ...signatureHeaders([secretKey(API_SECRET)!], `msg_${Math.random().toString(36).slice(2)}`, body),
    });
    const post = async (path: string, body: string, headers: Record<string, string>) => {
      const res = await fetch(`${r.url}${path}`, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
      return { status: res.status, json: (await res.json()) as Record<string, any> };
    };
    const missing = { status: 404, json: { error: { code: 'NOT_FOUND', message: expect.stringMatching(/serviceBus/) } } };
    const approval = JSON.stringify({ vm: 'solo', eventId: 'E-1', approver: 'oncall' });
    expect(await post('/v1/approvals', approval, signed(approval))).toMatchObject(missing);
    // unsigned, it is refused for its signature first
    expect(await post('/v1/approvals', approval, { 'content-type': 'application/json' })).toMatchObject({ status: 401 });
    const tracked = await fetch(`${r.url}/v1/approvals/${'0'.repeat(32)}`, { headers: signed(''), signal: AbortSignal.timeout(10_000) });
    expect({ status: tracked.status, json: await tracked.json() }).toMatchObject(missing);
    expect(await read(r, '/v1/approve?token=x')).toMatchObject(missing);
    expect(await post('/v1/approve', 'token=x', { 'content-type': 'application/x-www-form-urlencoded' })).toMatchObject(missing);
    expect(await post('/v1/slack/interactions', 'payload=%7B%7D', { 'content-type': 'application/x-www-form-urlencoded' })).toMatchObject({
      status: 404,
    });
    // ready, and says nothing of a Service Bus it does not have
    const ready = await fetch(`${r.url}/readyz`);
    const readyText = await ready.text();
    expect(ready.status).toBe(200);
    expect(JSON.parse(readyText)).toMatchObject({ status: 'ready', fleet: { lastError: null } });
    expect(readyText).not.toMatch(/replies|service ?bus/i);
    expect(await (await fetch(`${r.url}/metrics`)).text()).not.toContain('sebridge_relay_replies_connected');
  });

  it("over Kubernetes Leases too: every group of the namespace read at once, and Azure's records kept beside them", async () => {
    const lease = stores.config('kubernetes');
    const hs = await Promise.all(
      ['k0', 'k1', 'k2'].map((vm, i) =>
        startBridge({
          sim: { vmName: vm, peers: [], tickMs: 10 },
          config: { fleet: { group: i === 2 ? 'fv-k2' : 'fv-k', store: lease, heartbeatSeconds: 5 } },
        }),
      ),
    );
    for (const h of hs) h.sim.addEvent({ noticeMs: 600_000 });
    const config = relayConfig(peer, fleetKeys(), {
      fleet: { store: lease, cacheMs: 0 },
      readKeys: [READ_KEY],
      azure: { subscriptions: [SUBSCRIPTION], checkSeconds: 3600, eventGrid: { key: 'an-event-grid-key-1234' } },
    });
    const r = await startRelay(config, pino({ level: 'silent' }), { host: '127.0.0.1', port: 0 });
    relays.push(r);
    await waitFor(async () => (await allEvents(r)).length === 3, "the three members' events", 20_000);
    const grid = new EventGridDelivery(`${r.url}/v1/azure/eventgrid?code=an-event-grid-key-1234`);
    expect((await grid.deliver([eventGridEvent({ resourceId: vmId('ghost-k'), eventId: 'E-K' })])).status).toBe(200);
    const list = await allEvents(r);
    expect(list.map((e) => `${e.group}:${e.vm}`).sort()).toEqual(['fv-k2:k2', 'fv-k:k0', 'fv-k:k1', 'null:ghost-k']);
    const fleet = await read(r, '/v1/fleet');
    expect((fleet.json.groups as { group: string }[]).map((g) => g.group)).toEqual(['fv-k', 'fv-k2']);
  });
});
