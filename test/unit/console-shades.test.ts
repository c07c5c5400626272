/**
 * The console's shading of a member's calendar: the calendars members published to their group
 * (`calendar-<digest>`), kept only when their text is their name's digest and reads as a calendar,
 * and each row's blackouts and time outside the windows over the range, a blackout whole however
 * often a window opens within it.
 */
import { describe, expect, it } from 'vitest';
import { calendarDigest, digestOfText } from '../../src/calendar/calendar.ts';
import { CalendarConfig } from '../../src/calendar/config.ts';
import { snapshotOf as readSnapshot } from '../../src/fleet/view/snapshot.ts';
import { fleetEvents } from '../../src/fleet/view/events.ts';
import { timelineOf } from '../../src/relay/console-timeline.ts';
import { timelineHtml } from '../../src/relay/console-render.ts';
import type { Versioned } from '../../src/fleet/budget/stores/port.ts';

const NOW = Date.parse('2026-11-30T10:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

const calendar = CalendarConfig.parse({
  timeZone: 'UTC',
  windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], from: '02:00', to: '04:00' }],
  blackouts: [{ name: 'year-end', from: '2026-12-01', to: '2026-12-01' }],
});
const published = calendarDigest(calendar);

/** memberRecord: a member's record as a bridge writes it, naming calendar `digest`. */
const memberRecord = (vm: string, digest: string | null): Versioned => ({
  name: `web/member-${vm}`,
  version: '1',
  value: {
    ...{ member: vm, vm, resourceId: null, heartbeatAt: iso(NOW - 1000), heartbeatSeconds: 30, slot: null },
    events: [
      {
        eventId: `E-${vm}`,
        eventType: 'Reboot',
        status: 'Scheduled',
        notBefore: iso(NOW + 3_600_000),
        durationInSeconds: -1,
        approved: false,
      },
    ],
    ...(digest === null
      ? {}
      : { calendar: { digest, timeZone: 'UTC', open: true, inWindow: false, blackout: null, until: iso(NOW + 16 * 3_600_000) } }),
  },
});
const calendarRecord = (digest: string, value: unknown): Versioned => ({ name: `web/calendar-${digest}`, version: '1', value });

function timeline(records: readonly Versioned[]) {
  const s = readSnapshot(records, 'test', NOW);
  return { s, t: timelineOf(s, fleetEvents(s, {}, NOW), NOW, '24h') };
}

describe("the console's shading of a member's calendar", () => {
  it('shades the time outside the windows grey and a blackout whole, on the rows of members that name the calendar', () => {
    const { t } = timeline([
      memberRecord('web-0', published.digest),
      memberRecord('web-1', null),
      calendarRecord(published.digest, JSON.parse(JSON.stringify(published.config))),
    ]);
    const [with_, without] = t.lanes[0]!.rows;
    expect(without!.shades).toEqual([]);
    // from 08:00 (the range's start) to the blackout's start at midnight: outside the window; then the blackout, whole, to the range's end
    expect(with_!.shades.map((s) => [s.kind, s.name, s.startsAt, s.endsAt])).toEqual([
      ['closed', null, '2026-11-30T08:00:00.000Z', '2026-12-01T00:00:00.000Z'],
      ['blackout', 'year-end', '2026-12-01T00:00:00.000Z', '2026-12-01T10:00:00.000Z'],
    ]);
    expect(with_!.shades[1]!.to).toBe(1);
    const html = timelineHtml(t, false);
    expect(html).toContain('title="Blackout year-end, from 1 Dec 00:00 UTC to 1 Dec 10:00 UTC"');
    expect(html).toContain('Shaded: hatched, blackout year-end');
  });

  it("keeps no calendar whose text is not its name's digest, that does not read as a calendar, or that has more rules than a person writes", () => {
    const forged = { ...published.config, blackouts: [] };
    const many = {
      timeZone: 'UTC',
      windows: [],
      blackouts: Array.from({ length: 51 }, (_, i) => ({ name: `b${i}`, from: '2026-12-01', to: '2026-12-01' })),
    };
    const manyDigest = calendarDigest(CalendarConfig.parse(many)).digest;
    const bad = { timeZone: 'Not/AZone', windows: [], blackouts: [] };
    const badDigest = digestOfText(JSON.stringify(bad));
    const { s, t } = timeline([
      memberRecord('web-0', published.digest),
      memberRecord('web-1', badDigest),
      memberRecord('web-2', manyDigest),
      // a member's own calendar under another's name: not the text of that name
      calendarRecord(published.digest, forged),
      calendarRecord(badDigest, bad),
      calendarRecord(manyDigest, JSON.parse(JSON.stringify(CalendarConfig.parse(many)))),
    ]);
    expect(s.calendars?.size).toBe(0);
    expect(t.lanes[0]!.rows.flatMap((r) => r.shades)).toEqual([]);
  });

  it("keeps a group's calendar however many calendars others write: those no member names are none, and past 100 those named by the most members", () => {
    // a member writes 150 calendars in a folder listed first, and names 120 of them from records of its own
    const junk = Array.from({ length: 150 }, (_, i) =>
      calendarDigest(CalendarConfig.parse({ timeZone: 'UTC', blackouts: [{ name: `j${i}`, from: '00:00', to: '24:00' }] })),
    );
    const records = [
      ...junk.map((j) => ({ ...calendarRecord(j.digest, JSON.parse(JSON.stringify(j.config))), name: `aaa/calendar-${j.digest}` })),
      ...junk.slice(0, 120).map((j, i) => ({ ...memberRecord(`x-${i}`, j.digest), name: `aaa/member-x-${i}` })),
      memberRecord('web-0', published.digest),
      memberRecord('web-1', published.digest),
      calendarRecord(published.digest, JSON.parse(JSON.stringify(published.config))),
    ];
    const { s, t } = timeline(records);
    expect(s.calendars?.size).toBe(100);
    expect(s.calendars?.has(published.digest)).toBe(true);
    expect(s.calendars?.has(junk[149]!.digest)).toBe(false);
    const web = t.lanes.find((l) => l.group === 'web')!;
    expect(web.rows.map((r) => r.shades.length > 0)).toEqual([true, true]);
  });
});
