/**
 * The calendar feed: whole bridges in two groups write their records to Blob Storage (Azurite),
 * and the real relay (Service Bus played by the AMQP peer) serves GET /v1/fleet/calendar.ics,
 * read back with an iCalendar parser we did not write (ical.js): every pending event once, in
 * its state, updated in place as it changes; behind a read key or a console key, as a header or
 * as the `key` parameter a calendar sends. Nothing is mocked.
 */
import ICAL from 'ical.js';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRelay, type RunningRelay } from '../../src/relay/relay.ts';
import type { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { fleetKeys, fleetPeer, relayConfig, relayInput } from '../../testkit/fleet.ts';
import { FleetStores } from '../../testkit/fleet-stores.ts';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { uidOf } from '../../src/fleet/view/ics.ts';
import { RelayConfig } from '../../src/relay/config.ts';
import { waitFor } from '../helpers.ts';

const READ_KEY = 'calendar-read-key-0123456789';
const CONSOLE_KEY = 'calendar-console-key-0123456789';
let stores: FleetStores;
let peer: AmqpPeer;
const relays: RunningRelay[] = [];

beforeAll(async () => {
  stores = await FleetStores.start();
  peer = await fleetPeer();
}, 60_000);
afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.close()));
  await stopAll();
});
afterAll(async () => {
  await peer?.close();
  await stores?.stop();
});

const store = (container: string) => ({ ...stores.config('blob'), container });

async function relay(container: string): Promise<RunningRelay> {
  const config = relayConfig(peer, fleetKeys(), {
    ...{ fleet: { store: store(container), cacheMs: 0 }, readKeys: [READ_KEY] },
    console: { keys: [{ name: 'Ops Team', key: CONSOLE_KEY, role: 'read' }] },
  });
  const r = await startRelay(config, pino({ level: 'silent' }), { host: '127.0.0.1', port: 0 });
  relays.push(r);
  return r;
}

const get = (r: RunningRelay, path: string, headers: Record<string, string> = {}) =>
  fetch(`${r.url}${path}`, { headers, signal: AbortSignal.timeout(10_000) });

/** entries: the file's VEVENTs, as ical.js reads them. */
async function entries(r: RunningRelay, query: string) {
  const res = await get(r, `/v1/fleet/calendar.ics?${query}`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/calendar; charset=utf-8');
  const cal = new ICAL.Component(ICAL.parse(await res.text()));
  return cal.getAllSubcomponents('vevent').map((v) => {
    const e = new ICAL.Event(v);
    return { uid: e.uid, summary: e.summary, start: e.startDate.toJSDate().getTime(), end: e.endDate.toJSDate().getTime() };
  });
}

function member(container: string, group: string, vm: string, budget: number | null): Promise<Harness> {
  return startBridge({
    sim: { vmName: vm, peers: [], tickMs: 10 },
    config: {
      approval: { rules: budget === null ? [] : [{ match: {}, action: 'approve' }] },
      fleet: { group, store: store(container), heartbeatSeconds: 5, ...(budget === null ? {} : { maxUnavailable: budget }) },
    },
  });
}

describe('the calendar feed', () => {
  it('lists every pending event once in its state, each group apart, and follows a change in place', async () => {
    const container = 'calendar-feed';
    // cal-a: one slot, both members approve by policy (one starts, the other is held); cal-b: a view only
    const [a0, a1, b0, b1] = await Promise.all([
      member(container, 'cal-a', 'a0', 1),
      member(container, 'cal-a', 'a1', 1),
      member(container, 'cal-b', 'b0', null),
      member(container, 'cal-b', 'b1', null),
    ]);
    const events = [
      a0.sim.addEvent({ noticeMs: 600_000 }),
      a1.sim.addEvent({ noticeMs: 600_000 }),
      b0.sim.addEvent({ noticeMs: 900_000 }),
      b1.sim.addEvent({ noticeMs: 1_200_000, DurationInSeconds: 300, EventType: 'Freeze' }),
    ];
    const r = await relay(container);
    const started = () => a0.sim.startRequests.length + a1.sim.startRequests.length === 1;
    await waitFor(
      async () => started() && (await entries(r, `key=${CONSOLE_KEY}`)).length === 4,
      'four events listed, one approved',
      30_000,
    );
    await waitFor(
      async () => (await entries(r, `key=${CONSOLE_KEY}`)).filter((e) => /: (started|held by the budget)$/.test(e.summary)).length === 2,
      'the started one and the held one said so',
      30_000,
    );
    const all = await entries(r, `key=${CONSOLE_KEY}`);
    const [go, wait] = a0.sim.startRequests.length === 1 ? ['a0', 'a1'] : ['a1', 'a0'];
    // each event of each VM once, under the UID of that event and VM
    const want = [
      ...[
        { vm: go, e: events[go === 'a0' ? 0 : 1]! },
        { vm: wait, e: events[wait === 'a0' ? 0 : 1]! },
      ],
      ...[
        { vm: 'b0', e: events[2]! },
        { vm: 'b1', e: events[3]! },
      ],
    ];
    expect(all.map((x) => x.uid).sort()).toEqual(want.map((w) => uidOf({ eventId: w.e.eventId, vm: w.vm })).sort());
    const byUid = new Map(all.map((x) => [x.uid, x]));
    const of = (i: number) => byUid.get(uidOf({ eventId: want[i]!.e.eventId, vm: want[i]!.vm }))!;
    expect(of(0).summary).toBe(`Reboot ${go} (cal-a): started`);
    expect(of(1).summary).toBe(`Reboot ${wait} (cal-a): held by the budget`);
    expect(of(2).summary).toBe('Reboot b0 (cal-b): scheduled');
    expect(of(3).summary).toBe('Freeze b1 (cal-b): scheduled');
    // from NotBefore, for DurationInSeconds (300 s), or 15 minutes when unknown (-1)
    expect(of(3).end - of(3).start).toBe(300_000);
    expect(of(2).end - of(2).start).toBe(15 * 60_000);
    expect(of(2).start).toBe(Date.parse(String(b0.sim.document().Events[0]!.NotBefore)));

    // one group: its events alone
    const b = await entries(r, `group=cal-b&key=${READ_KEY}`);
    expect(b.map((x) => x.summary).sort()).toEqual(['Freeze b1 (cal-b): scheduled', 'Reboot b0 (cal-b): scheduled']);

    // a change: b0's event is approved by a person's hand at IMDS (a new event appears at b1): same UIDs, new state
    const more = b1.sim.addEvent({ noticeMs: 1_800_000 });
    await waitFor(async () => (await entries(r, `group=cal-b&key=${READ_KEY}`)).length === 3, "b1's second event listed", 30_000);
    const after = await entries(r, `group=cal-b&key=${READ_KEY}`);
    expect(after.map((x) => x.uid).sort()).toEqual(
      [
        uidOf({ eventId: events[2]!.eventId, vm: 'b0' }),
        uidOf({ eventId: events[3]!.eventId, vm: 'b1' }),
        uidOf({ eventId: more.eventId, vm: 'b1' }),
      ].sort(),
    );
  }, 90_000);

  it('refuses without a key, with a wrong one, an unknown parameter, a group name that is none or unknown; a header key works too', async () => {
    const r = await relay('calendar-refusals');
    const json = async (res: Response) => ({ status: res.status, code: ((await res.json()) as { error: { code: string } }).error.code });
    expect(await json(await get(r, '/v1/fleet/calendar.ics'))).toEqual({ status: 401, code: 'UNAUTHORIZED' });
    expect(await json(await get(r, '/v1/fleet/calendar.ics?key=not-a-key-of-this-relay'))).toEqual({ status: 401, code: 'UNAUTHORIZED' });
    expect(await json(await get(r, `/v1/fleet/calendar.ics?key=${READ_KEY}&limit=3`))).toEqual({ status: 400, code: 'UNKNOWN_PARAMETER' });
    expect(await json(await get(r, `/v1/fleet/calendar.ics?key=${READ_KEY}&group=Not_A_Group`))).toEqual({
      status: 400,
      code: 'BAD_FILTER',
    });
    expect(await json(await get(r, `/v1/fleet/calendar.ics?key=${READ_KEY}&group=nobody`))).toEqual({ status: 404, code: 'UNKNOWN_GROUP' });
    // as a bearer token: an empty fleet is a calendar with no event
    const ok = await get(r, '/v1/fleet/calendar.ics', { authorization: `Bearer ${CONSOLE_KEY}` });
    expect(ok.status).toBe(200);
    const body = await ok.text();
    expect(body).toMatch(/^BEGIN:VCALENDAR\r\n/);
    expect(body).not.toContain('BEGIN:VEVENT');
    // the read API itself stays behind the read keys: a console key is no read key there
    expect((await get(r, '/v1/fleet', { authorization: `Bearer ${CONSOLE_KEY}` })).status).toBe(401);
    expect(
      (await fetch(`${r.url}/v1/fleet/calendar.ics?key=${READ_KEY}`, { method: 'POST', signal: AbortSignal.timeout(10_000) })).status,
    ).toBe(405);
  });

  it('a console key is a secret, its name and role checked; console needs fleet', () => {
    const base = relayInput(peer, fleetKeys(), { fleet: { store: store('calendar-config') } });
    const bad = RelayConfig.safeParse({
      ...base,
      console: {
        keys: [
          { name: 'a', key: 'short', role: 'read' },
          { name: '<b>', key: CONSOLE_KEY, role: 'admin' },
        ],
      },
    });
    expect(bad.success).toBe(false);
    const paths = bad.error!.issues.map((i) => i.path.join('.'));
    expect(paths).toEqual(expect.arrayContaining(['console.keys.0.key', 'console.keys.1.name', 'console.keys.1.role']));
    const twice = RelayConfig.safeParse({
      ...base,
      console: { keys: [1, 2].map((i) => ({ name: `n${i}`, key: CONSOLE_KEY, role: 'read' })) },
    });
    expect(twice.error!.issues.map((i) => i.path.join('.'))).toEqual(['console.keys.1.key']);
    const { fleet: _fleet, ...noFleet } = base;
    const alone = RelayConfig.safeParse({ ...noFleet, console: { keys: [] } });
    expect(alone.error!.issues.map((i) => i.path.join('.'))).toContain('console');
  });
});
