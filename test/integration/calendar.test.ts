/**
 * The calendar in a running bridge, over the wire: the IMDS simulator and the bridge's calendar
 * share a clock the test sets (a day of its own, never today's), so windows open and blackouts
 * begin when the test says. Europe/Oslo, weekdays 22:00-05:00, and the year-end blackout; and
 * Europe/Berlin on the nights the clocks change, where a window's preparations go when it truly
 * opens and a blackout that begins in the repeated hour is foretold.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FleetConfig } from '../../src/fleet/budget/config.ts';
import { readGroup } from '../../src/fleet/budget/group.ts';
import { groupText } from '../../src/fleet/budget/group-text.ts';
import { table } from '../../src/lib/table.ts';
import { FleetStores } from '../../testkit/fleet-stores.ts';
import { toChatMessage } from '../../src/present/chat-model.ts';
import { fromJson } from '../../src/pipeline/cloudevent.ts';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { postApproval, waitFor } from '../helpers.ts';

afterEach(() => stopAll());

const SECRET = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;
const calendar = {
  timeZone: 'Europe/Oslo',
  windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '22:00', to: '05:00' }],
  blackouts: [{ name: 'year-end', from: '2026-12-24', to: '2027-01-02' }],
};

async function bridgeAt(start: string, action = 'approve', sinks?: (dir: string) => Record<string, unknown>[], cal: object = calendar) {
  const clock = { now: Date.parse(start) };
  const now = () => clock.now;
  const h = await startBridge({
    sim: { vmName: 'vm-cal', peers: [], now },
    bridge: { calendarClock: now },
    ...(sinks === undefined ? {} : { sinks }),
    config: {
      calendar: cal,
      approval: { secret: SECRET, rules: [{ match: { eventType: 'Reboot' }, action, within: 'windows' }] },
      server: { listen: '127.0.0.1:0' },
      observability: { listen: '127.0.0.1:0' },
    },
  });
  return { h, clock };
}

/** reads: how many IMDS reads the simulator answered. */
const reads = (h: Harness) => h.sim.requests.filter((r) => r.path.startsWith('/metadata/scheduledevents') && r.method === 'GET').length;

const post = (h: Harness, body: Record<string, unknown>) => postApproval(h.bridge.approvalServerUrl!, SECRET, body);

describe('the calendar in a running bridge', () => {
  it('a rule bound to the windows waits outside them and approves once one opens, before NotBefore', async () => {
    // Wednesday 21:50 in Oslo; the window opens at 22:00 (21:00Z); NotBefore is 01:50 on Thursday, inside it
    const { h, clock } = await bridgeAt('2026-11-25T20:50:00Z');
    const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 4 * 3_600_000, DurationInSeconds: 300 });
    await waitFor(() => h.kinds().includes(`scheduled:${e.eventId}`), 'the scheduled event');
    const seen = reads(h);
    await waitFor(() => reads(h) >= seen + 3, 'three more reads');
    expect(h.sim.startRequests).toHaveLength(0);
    expect(
      h.lines.some((l) =>
        /^approval policy: waiting for the calendar: outside the maintenance windows; allowed from 2026-11-25T21:00:00.000Z$/.test(
          String(l.msg),
        ),
      ),
    ).toBe(true);
    // NotBefore falls inside a window: no conflict to foretell
    expect(h.kinds().some((k) => k.startsWith('calendar.conflict:'))).toBe(false);
    clock.now = Date.parse('2026-11-25T21:00:00Z');
    await waitFor(() => h.sim.startRequests.length === 1, 'the approval once the window opened');
    expect(h.sim.startRequests[0]!.eventIds).toEqual([e.eventId]);
  });

  it('the preparations of an event bound to the windows wait for the window: the hook runs when it opens, then the approval', async () => {
    const hookFile = (dir: string) => join(dir, 'hook.txt');
    const { h, clock } = await bridgeAt('2026-11-25T20:50:00Z', 'approveAfterHooks', (dir) => [
      { name: 'audit', type: 'file', path: join(dir, 'events.jsonl') },
      {
        ...{ name: 'drain', type: 'exec', prepare: true },
        command: [
          process.execPath,
          '-e',
          `require('node:fs').appendFileSync(${JSON.stringify(hookFile(dir))}, process.env.SE_TRANSITION + '\\n')`,
        ],
      },
    ]);
    const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 4 * 3_600_000, DurationInSeconds: 300 });
    await waitFor(() => h.kinds().includes(`scheduled:${e.eventId}`), 'the scheduled event');
    const seen = reads(h);
    await waitFor(() => reads(h) >= seen + 3, 'three more reads');
    expect(existsSync(hookFile(h.dir))).toBe(false);
    expect(h.sim.startRequests).toHaveLength(0);
    expect(
      h.lines.some(
        (l) => l.msg === `calendar: the preparations of ${e.eventId} wait for the maintenance window, at 2026-11-25T21:00:00.000Z`,
      ),
    ).toBe(true);
    clock.now = Date.parse('2026-11-25T21:00:00Z');
    await waitFor(() => h.sim.startRequests.length === 1, 'the approval once the hook ran in the window');
    expect(readFileSync(hookFile(h.dir), 'utf8')).toBe('scheduled\n');
    const approved = await waitFor(() => h.events().find((x) => x.type.endsWith('.approved')), 'the approved CloudEvent');
    expect(approved.data.approval).toMatchObject({ via: 'hooks' });
  });

  it('a maintenance that falls in a blackout is foretold at once; the blackout holds every path but a forced approval, which is recorded', async () => {
    // Thursday 00:30 on 24 December in Oslo: inside the window that opened on Wednesday, and inside the blackout
    const { h } = await bridgeAt('2026-12-23T23:30:00Z');
    const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 2 * 3_600_000, DurationInSeconds: -1 });
    const conflict = await waitFor(() => h.events().find((x) => x.type === 'azure.scheduledevent.calendar.conflict'), 'the conflict');
    expect(h.kinds().indexOf(`scheduled:${e.eventId}`)).toBeLessThan(h.kinds().indexOf(`calendar.conflict:${e.eventId}`));
    expect(conflict.data.calendar).toMatchObject({
      kind: 'blackout',
      blackout: 'year-end',
      timeZone: 'Europe/Oslo',
      from: '2026-12-24T01:30:00.000Z',
      to: '2026-12-24T01:45:00.000Z', // an unknown duration is taken as 15 minutes
      allowedFrom: null,
    });
    expect(conflict.id).toMatch(new RegExp(`^${e.eventId}/calendar\\.conflict/[0-9a-f]{12}$`));
    expect(toChatMessage(fromJson(JSON.stringify(conflict))).title).toBe('vm-cal: maintenance falls inside the blackout year-end');
    expect(h.lines.find((l) => l.code === 'CALENDAR_CONFLICT')).toBeDefined();
    const readyz = (await (await fetch(`${h.bridge.observabilityUrl}/readyz`)).json()) as { calendar?: unknown };
    expect(readyz.calendar).toEqual({
      timeZone: 'Europe/Oslo',
      open: false,
      inWindow: true,
      blackout: 'year-end',
      until: '2027-01-02T23:00:00.000Z',
    });

    // the policy waits; a person is told it is held, and the link stays usable
    const seen = reads(h);
    await waitFor(() => reads(h) >= seen + 3, 'three more reads');
    expect(h.sim.startRequests).toHaveLength(0);
    const held = await post(h, { eventId: e.eventId, approver: 'alice' });
    expect(held).toMatchObject({ status: 409, json: { eventId: e.eventId, status: 'held', error: { code: 'BLACKOUT' } } });
    expect(held.json.error.message).toMatch(
      /^no early approval inside the blackout year-end until 2027-01-02T23:00:00.000Z \(Europe\/Oslo\)/,
    );
    expect(h.sim.startRequests).toHaveLength(0);
    // forced, with a reason: approved, and the record says what it went past
    const forced = await post(h, { eventId: e.eventId, approver: 'alice', force: true, reason: 'the patch cannot wait' });
    expect(forced).toMatchObject({ status: 200, json: { status: 'approved', forced: true, past: ['the blackout year-end'] } });
    expect(h.sim.startRequests).toHaveLength(1);
    const approved = await waitFor(() => h.events().find((x) => x.type.endsWith('.approved')), 'the approved CloudEvent');
    expect(approved.data.approval).toMatchObject({
      by: 'alice',
      via: 'api',
      forced: true,
      reason: 'the patch cannot wait; inside the blackout year-end',
    });
  });
});

/** zoned: how the clock of `timeZone` reads at `iso`, with its offset ("2026-10-25 02:30 GMT+02:00"): the test's instants checked against the platform's IANA data. */
const zoned = (iso: string, timeZone: string) =>
  new Intl.DateTimeFormat('sv-SE', {
    ...{ timeZone, timeZoneName: 'longOffset' },
    ...{ year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' },
  }).format(Date.parse(iso));

describe('the calendar on the days the clocks change, in a running bridge (Europe/Berlin)', () => {
  const berlin = { timeZone: 'Europe/Berlin', windows: [{ days: ['sun'], from: '02:30', to: '05:00' }] };

  it.each([
    // the clocks go back at 03:00 to 02:00: 02:30 comes twice, the window opens at the first
    ['back', '2026-10-25T00:00:00Z', '2026-10-25T00:30:00.000Z', '2026-10-25 02:30 GMT+02:00'],
    // the clocks go forward at 02:00 to 03:00: 02:30 never comes, the window opens at the jump
    ['forward', '2026-03-29T00:30:00Z', '2026-03-29T01:00:00.000Z', '2026-03-29 03:00 GMT+02:00'],
  ])('the clocks go %s: deferred preparations go when the window truly opens', async (_way, start, opens, shows) => {
    expect(zoned(opens, 'Europe/Berlin')).toBe(shows);
    const hookFile = (dir: string) => join(dir, 'hook.txt');
    const { h, clock } = await bridgeAt(
      start,
      'approveAfterHooks',
      (dir) => [
        {
          ...{ name: 'drain', type: 'exec', prepare: true },
          command: [process.execPath, '-e', `require('node:fs').appendFileSync(${JSON.stringify(hookFile(dir))}, 'prepared\\n')`],
        },
      ],
      berlin,
    );
    const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 4 * 3_600_000, DurationInSeconds: 300 });
    await waitFor(
      () => h.lines.find((l) => l.msg === `calendar: the preparations of ${e.eventId} wait for the maintenance window, at ${opens}`),
      'the preparations deferred to the window',
    );
    const seen = reads(h);
    await waitFor(() => reads(h) >= seen + 3, 'three more reads');
    expect(existsSync(hookFile(h.dir))).toBe(false);
    clock.now = Date.parse(opens);
    await waitFor(() => h.sim.startRequests.length === 1, 'the approval once the hook ran as the window opened');
    expect(readFileSync(hookFile(h.dir), 'utf8')).toBe('prepared\n');
  });

  it('a maintenance inside a blackout that begins in the repeated hour is foretold', async () => {
    const cal = { ...berlin, blackouts: [{ name: 'sunday-batch', days: ['sun'], from: '02:30', to: '04:00' }] };
    expect(zoned('2026-10-25T00:30:00Z', 'Europe/Berlin')).toBe('2026-10-25 02:30 GMT+02:00');
    // 02:00 summer time; NotBefore 02:20, for 20 minutes: into the blackout at the first 02:30
    const { h } = await bridgeAt('2026-10-25T00:00:00Z', 'approve', undefined, cal);
    const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 20 * 60_000, DurationInSeconds: 1200 });
    const conflict = await waitFor(() => h.events().find((x) => x.type === 'azure.scheduledevent.calendar.conflict'), 'the conflict');
    expect(conflict.subject).toBe(e.eventId);
    expect(conflict.data.calendar).toMatchObject({
      kind: 'blackout',
      blackout: 'sunday-batch',
      timeZone: 'Europe/Berlin',
      from: '2026-10-25T00:20:00.000Z',
      to: '2026-10-25T00:40:00.000Z',
    });
  });
});

describe('a calendar the group shares (fleet.calendar), over Azurite', () => {
  let stores: FleetStores;
  beforeAll(async () => {
    stores = await FleetStores.start();
  }, 60_000);
  afterAll(() => stores?.stop());

  it('holds every member alike in a blackout; each record says so, fleet status shows it, and a member with another calendar is named', async () => {
    const clock = { now: Date.parse('2026-12-27T12:00:00Z') }; // a Sunday inside year-end
    const now = () => clock.now;
    const fleet = (cal: object) => ({
      group: 'cal-group',
      maxUnavailable: 2,
      store: stores.config('blob'),
      heartbeatSeconds: 5,
      marginSeconds: 15,
      calendar: cal,
    });
    const member = (vm: string, cal: object) =>
      startBridge({
        sim: { vmName: vm, peers: [], now },
        bridge: { calendarClock: now },
        config: { fleet: fleet(cal), approval: { rules: [{ match: {}, action: 'approve' }] } },
      });
    const hs = await Promise.all(['cg-0', 'cg-1'].map((vm) => member(vm, calendar)));
    const other = await member('cg-2', { ...calendar, blackouts: [] });
    for (const h of [...hs, other]) h.sim.addEvent({ EventType: 'Reboot', noticeMs: 3_600_000 });
    await waitFor(() => other.sim.startRequests.length === 1, 'the member without the blackout approved');
    const seen = hs.map(reads);
    await waitFor(() => hs.every((h, i) => reads(h) >= seen[i]! + 3), 'three more reads of each');
    for (const h of hs) expect(h.sim.startRequests).toHaveLength(0);
    const config = FleetConfig.parse(fleet(calendar));
    const group = await waitFor(async () => {
      const g = await readGroup(config);
      return g.members.length === 3 && g.members.every((m) => m.calendar !== undefined) ? g : null;
    }, 'every member record with its calendar');
    const byVm = new Map(group.members.map((m) => [m.vm, m.calendar!]));
    expect(byVm.get('cg-0')).toMatchObject({
      timeZone: 'Europe/Oslo',
      open: false,
      blackout: 'year-end',
      until: '2027-01-02T23:00:00.000Z',
    });
    expect(byVm.get('cg-1')!.digest).toBe(byVm.get('cg-0')!.digest);
    expect(byVm.get('cg-2')).toMatchObject({ open: true, blackout: null });
    const text = groupText(group, table);
    expect(text).toMatch(/EARLY APPROVAL/);
    expect(text).toMatch(/cg-0 .*closed: inside the blackout year-end until 2027-01-02T23:00:00.000Z/);
    expect(text).toMatch(/The members' calendars differ \(2 kinds, by digest\)/);
  }, 60_000);
});
