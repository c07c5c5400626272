/**
 * The calendar's time rules on instants the test names (never today's date): windows that cross
 * midnight, the daylight-saving Sundays of Europe/Oslo and America/New_York (the platform's IANA
 * data), blackouts of whole dates, of days of the month and across midnight and the week's end,
 * the conflicts foretold, and every configuration problem named by its path: a day or a time that
 * does not exist, a time zone that is not an IANA name.
 */
import { describe, expect, it } from 'vitest';
import { Calendar, calendarNow, memberCalendar } from '../../src/calendar/calendar.ts';
import { CalendarConfig } from '../../src/calendar/config.ts';
import { conflictOf } from '../../src/calendar/conflict.ts';
import { configProblems } from '../helpers.ts';

const at = (iso: string) => Date.parse(iso);
const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
const cal = (c: unknown) => new Calendar(CalendarConfig.parse(c));

describe('windows', () => {
  const oslo = cal({
    timeZone: 'Europe/Oslo',
    windows: [{ days: ['mon'], from: '22:00', to: '05:00' }],
  });

  it('a window that crosses midnight belongs to the day it opens', () => {
    // Monday 23 November 2026, Oslo is UTC+1
    expect(oslo.stateAt(at('2026-11-23T20:59:00Z')).inWindow).toBe(false); // Mon 21:59
    expect(oslo.stateAt(at('2026-11-23T21:00:00Z')).inWindow).toBe(true); // Mon 22:00
    expect(oslo.stateAt(at('2026-11-24T03:59:00Z')).inWindow).toBe(true); // Tue 04:59
    expect(oslo.stateAt(at('2026-11-24T04:00:00Z')).inWindow).toBe(false); // Tue 05:00
    expect(oslo.stateAt(at('2026-11-23T00:30:00Z')).inWindow).toBe(false); // Mon 01:30: Sunday opens no window
    expect(oslo.stateAt(at('2026-11-24T21:30:00Z')).inWindow).toBe(false); // Tue 22:30
    expect(iso(oslo.nextChange(at('2026-11-23T12:00:00Z')))).toBe('2026-11-23T21:00:00.000Z');
    expect(iso(oslo.nextChange(at('2026-11-23T21:00:00Z')))).toBe('2026-11-24T04:00:00.000Z');
    expect(iso(oslo.nextAllowed(at('2026-11-24T04:00:00Z'), 'windows'))).toBe('2026-11-30T21:00:00.000Z');
    expect(oslo.allows(at('2026-11-24T04:00:00Z'), 'any')).toBe(true);
  });

  it.each([
    // [zone, the night of the change, the window's first instant, its last, hours of real time]
    ['Europe/Oslo', 'spring', '2026-03-29T00:00:00Z', '2026-03-29T02:00:00Z', 2],
    ['Europe/Oslo', 'autumn', '2026-10-24T23:00:00Z', '2026-10-25T03:00:00Z', 4],
    ['America/New_York', 'spring', '2026-03-08T06:00:00Z', '2026-03-08T08:00:00Z', 2],
    ['America/New_York', 'autumn', '2026-11-01T05:00:00Z', '2026-11-01T09:00:00Z', 4],
  ])('%s, the %s Sunday: 01:00 to 04:00 local lasts as long as the clocks say', (timeZone, _night, opens, closes, hours) => {
    const c = cal({ timeZone, windows: [{ days: ['sun'], from: '01:00', to: '04:00' }] });
    expect(c.stateAt(at(opens) - 60_000).inWindow).toBe(false);
    expect(c.stateAt(at(opens)).inWindow).toBe(true);
    expect(c.nextChange(at(opens))).toBe(at(closes));
    expect((at(closes) - at(opens)) / 3_600_000).toBe(hours);
  });
});

describe('the clock', () => {
  it('reads the years Date reads, before 1000 and past 9999, so no instant is lost as NaN', () => {
    const c = cal({ timeZone: 'UTC', blackouts: [{ name: 'b', from: '23:00', to: '01:00' }] });
    for (const [date, minute, after] of [
      ['0100-03-01', 0, '0100-03-01'],
      ['9999-12-31', 1440, '+010000-01-01'],
    ] as const) {
      const t = c.instant(date, minute);
      expect(Number.isFinite(t), date).toBe(true);
      expect(c.local(t), date).toEqual({ date: after, minute: 0, offset: 0 });
      expect(c.stateAt(t).blackout, date).toBe('b');
      expect(c.nextChange(t), date).toBe(t + 3_600_000);
    }
  });
});

describe('blackouts', () => {
  const c = cal({
    timeZone: 'Europe/Oslo',
    windows: [{ days: ['sat', 'sun'], from: '00:00', to: '24:00' }],
    blackouts: [
      { name: 'year-end', from: '2026-12-24', to: '2027-01-02' },
      { name: 'month-end', monthDays: [28, 29, 30, 31, 1] },
    ],
  });

  it('a run of dates is whole days in the time zone, both ends included', () => {
    expect(c.stateAt(at('2026-12-23T22:59:00Z')).blackout).toBeNull();
    expect(c.stateAt(at('2026-12-23T23:00:00Z')).blackout).toBe('year-end');
    expect(c.stateAt(at('2027-01-02T22:59:00Z')).blackout).toBe('year-end');
    expect(c.stateAt(at('2027-01-02T23:00:00Z')).blackout).toBeNull();
    expect(iso(c.blackoutEnd(at('2026-12-25T12:00:00Z')))).toBe('2027-01-02T23:00:00.000Z');
    // Sunday 3 January, 00:00 local: the first weekend moment after it
    expect(iso(c.nextAllowed(at('2026-12-25T12:00:00Z'), 'windows'))).toBe('2027-01-02T23:00:00.000Z');
    expect(c.allows(at('2026-12-25T12:00:00Z'), 'always')).toBe(true);
    expect(calendarNow(c, at('2026-12-25T12:00:00Z'))).toEqual({
      timeZone: 'Europe/Oslo',
      open: false,
      inWindow: false,
      blackout: 'year-end',
      until: '2027-01-02T23:00:00.000Z',
    });
  });

  it('days of the month recur, from midnight to midnight by default', () => {
    expect(c.stateAt(at('2026-11-27T22:59:00Z')).blackout).toBeNull(); // the 27th, 23:59
    expect(c.stateAt(at('2026-11-27T23:00:00Z')).blackout).toBe('month-end'); // the 28th
    expect(c.stateAt(at('2026-12-01T22:59:00Z')).blackout).toBe('month-end'); // the 1st
    expect(iso(c.blackoutEnd(at('2026-11-28T12:00:00Z')))).toBe('2026-12-01T23:00:00.000Z');
  });
});

describe('conflicts foretold', () => {
  const c = cal({
    timeZone: 'Europe/Oslo',
    windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '22:00', to: '05:00' }],
    blackouts: [{ name: 'year-end', from: '2026-12-24', to: '2027-01-02' }],
  });
  const event = (notBefore: string, durationSeconds: number, within: 'windows' | 'any' | null) => ({
    eventId: 'E',
    notBefore: at(notBefore),
    durationSeconds,
    within,
  });

  it('a maintenance whose time meets a blackout, whatever the rules; its end from the duration, or 15 minutes', () => {
    const now = at('2026-12-23T12:00:00Z');
    // NotBefore 23:50 local on the 23rd, 20 minutes: into the blackout
    expect(conflictOf(c, event('2026-12-23T22:50:00Z', 1200, null), now)).toMatchObject({
      kind: 'blackout',
      blackout: 'year-end',
      to: '2026-12-23T23:10:00.000Z',
      allowedFrom: '2026-12-23T12:00:00.000Z',
      advice: [expect.stringMatching(/^approve it now/), expect.stringMatching(/^redeploy the VM by hand/)],
    });
    expect(conflictOf(c, event('2026-12-23T22:50:00Z', -1, null), now)?.to).toBe('2026-12-23T23:05:00.000Z');
    expect(conflictOf(c, event('2026-12-23T22:40:00Z', -1, null), now)).toBeNull(); // ends at 23:55 local
  });

  it('a rule bound to the windows: no window before NotBefore and a time outside them is a conflict; a window before it is not', () => {
    // Thursday 26 November, 10:00 local; NotBefore 11:00 the same day (outside the windows)
    const now = at('2026-11-26T09:00:00Z');
    expect(conflictOf(c, event('2026-11-26T10:00:00Z', 300, 'windows'), now)).toMatchObject({ kind: 'closed', allowedFrom: null });
    // the same without a rule bound to the windows: Azure acts when it acts, no blackout met
    expect(conflictOf(c, event('2026-11-26T10:00:00Z', 300, 'any'), now)).toBeNull();
    // NotBefore at 23:00 local: a window opens at 22:00 before it
    expect(conflictOf(c, event('2026-11-26T22:00:00Z', 300, 'windows'), now)).toBeNull();
  });
});

describe("blackouts across midnight and across the week's end", () => {
  // Oslo in November is UTC+1: local = Z + 1h. Friday 27 November 2026; Saturday 28; Sunday 29; Monday 30
  const c = cal({
    timeZone: 'Europe/Oslo',
    blackouts: [
      { name: 'weekend', from: 'fri 22:00', to: 'mon 06:00' },
      { name: 'nightly', from: '23:00', to: '01:00' },
      { name: 'sat-night', days: ['sat'], from: '23:30', to: '00:30' },
      { name: 'month-turn', monthDays: [30], from: '23:00', to: '02:00' },
    ],
  });
  const name = (iso: string) => c.stateAt(at(iso)).blackout;

  it.each([
    // [the instant (UTC), the blackout it is in, or null]
    ['2026-11-27T20:59:00Z', null], // Fri 21:59
    ['2026-11-27T21:00:00Z', 'weekend'], // Fri 22:00
    ['2026-11-28T12:00:00Z', 'weekend'], // Sat noon
    ['2026-11-29T23:00:00Z', 'weekend'], // Mon 00:00: across the week's end, Saturday to Monday
    ['2026-11-30T04:59:00Z', 'weekend'], // Mon 05:59
    ['2026-11-30T05:00:00Z', null], // Mon 06:00
    ['2026-11-30T21:59:00Z', null], // Mon 22:59
    ['2026-11-30T22:00:00Z', 'nightly'], // Mon 23:00, the 30th: nightly comes first in the list
    ['2026-11-30T23:59:00Z', 'nightly'], // Tue 00:59, 1 December
    ['2026-12-01T00:00:00Z', 'month-turn'], // Tue 01:00: nightly has ended, month-turn runs to 02:00
    ['2026-12-01T00:59:00Z', 'month-turn'], // Tue 01:59
    ['2026-12-01T01:00:00Z', null], // Tue 02:00
    ['2026-12-01T21:59:00Z', null], // Tue 22:59
    ['2026-12-01T22:00:00Z', 'nightly'], // Tue 23:00
    ['2026-12-01T23:59:00Z', 'nightly'], // Wed 00:59
    ['2026-12-02T00:00:00Z', null], // Wed 01:00
  ])('at %s: %s', (instant, blackout) => {
    expect(name(instant)).toBe(blackout);
  });

  it('the weekend ends on Monday; the changes are where the clock says', () => {
    expect(iso(c.nextChange(at('2026-11-27T12:00:00Z')))).toBe('2026-11-27T21:00:00.000Z');
    expect(iso(c.blackoutEnd(at('2026-11-28T12:00:00Z')))).toBe('2026-11-30T05:00:00.000Z');
    // the nightly blackout runs into the month's turn: one stretch of blackouts from 23:00 to 02:00
    expect(iso(c.nextChange(at('2026-11-30T22:00:00Z')))).toBe('2026-12-01T00:00:00.000Z');
    expect(c.stateAt(at('2026-12-01T00:00:00Z')).blackout).toBe('month-turn');
    expect(iso(c.nextAllowed(at('2026-11-30T22:00:00Z'), 'any'))).toBe('2026-12-01T01:00:00.000Z');
  });

  it('a blackout on a day of the week that crosses midnight belongs to the day it starts: Saturday night runs into Sunday', () => {
    const sat = cal({ timeZone: 'UTC', blackouts: [{ name: 'sat-night', days: ['sat'], from: '23:30', to: '00:30' }] });
    expect(sat.stateAt(at('2026-11-28T23:29:00Z')).blackout).toBeNull();
    expect(sat.stateAt(at('2026-11-28T23:30:00Z')).blackout).toBe('sat-night');
    expect(sat.stateAt(at('2026-11-29T00:29:00Z')).blackout).toBe('sat-night');
    expect(sat.stateAt(at('2026-11-29T00:30:00Z')).blackout).toBeNull();
    // Friday night into Saturday is not Saturday's
    expect(sat.stateAt(at('2026-11-28T00:10:00Z')).blackout).toBeNull();
    expect(iso(sat.nextChange(at('2026-11-29T00:30:00Z')))).toBe('2026-12-05T23:30:00.000Z');
  });

  it('a span of the week whose end comes before its start in the week runs across its end; the same day and an earlier time is almost a week', () => {
    const sun = cal({ timeZone: 'UTC', blackouts: [{ name: 'long', from: 'sun 20:00', to: 'sun 08:00' }] });
    expect(sun.stateAt(at('2026-11-29T19:59:00Z')).blackout).toBeNull();
    expect(sun.stateAt(at('2026-11-29T20:00:00Z')).blackout).toBe('long');
    expect(iso(sun.blackoutEnd(at('2026-11-29T20:00:00Z')))).toBe('2026-12-06T08:00:00.000Z');
    const toMidnight = cal({ timeZone: 'UTC', blackouts: [{ name: 'sat', from: 'sat 00:00', to: 'sat 24:00' }] });
    expect(iso(toMidnight.blackoutEnd(at('2026-11-28T12:00:00Z')))).toBe('2026-11-29T00:00:00.000Z');
  });

  it('a maintenance that runs into a blackout across midnight is foretold', () => {
    // Friday 21:50 in Oslo, for 20 minutes: into the weekend
    expect(
      conflictOf(
        c,
        { eventId: 'E', notBefore: at('2026-11-27T20:50:00Z'), durationSeconds: 1200, within: null },
        at('2026-11-27T12:00:00Z'),
      ),
    ).toMatchObject({
      kind: 'blackout',
      blackout: 'weekend',
    });
  });
});

describe('the calendar configuration', () => {
  const problems = configProblems;

  it('names every problem by its path', () => {
    expect(
      problems({
        calendar: {
          timeZone: 'Europe/Atlantis',
          windows: [{ days: ['mon', 'someday'], from: '22:00', to: '25:00' }],
          blackouts: [
            { name: 'x', from: '2027-01-02', to: '2026-12-24' },
            { name: 'x', monthDays: [1], from: '10:00', to: '10:00' },
            { name: 'y', from: '2026-02-30', to: '2026-03-01' },
          ],
        },
      }),
    ).toEqual([
      'calendar.timeZone: "Europe/Atlantis" is not a time zone this platform knows: write an IANA name, as Europe/Oslo, America/New_York, Asia/Kolkata, or UTC',
      'calendar.windows[0].days[1]: must be one of sun | mon | tue | wed | thu | fri | sat',
      'calendar.windows[0].to: 25:00 does not exist: the hours go from 00 to 23 ("24:00" is the end of the day)',
      'calendar.blackouts[0].from: is after to (2026-12-24)',
      'calendar.blackouts[1].to: is the same time as from: say "00:00" to "24:00" for a whole day',
      'calendar.blackouts[2].from: 2026-02-30 does not exist: February 2026 has 28 days',
      'calendar.blackouts[1].name: "x" is the name of blackouts[0] too',
    ]);
    expect(problems({ approval: { rules: [{ match: {}, action: 'approve', within: 'windows' }] } })).toEqual([
      'approval.rules[0].within: windows needs calendar.windows to approve in (none are configured)',
    ]);
    expect(problems({ calendar: { windows: [{ days: ['sat'], from: '00:00', to: '24:00' }] } })).toEqual([]);
  });

  it.each([
    // [what is written, where, what validate says]
    [
      { blackouts: [{ name: 'b', from: '2026-04-31', to: '2026-05-02' }] },
      'blackouts[0].from',
      '2026-04-31 does not exist: April 2026 has 30 days',
    ],
    [
      { blackouts: [{ name: 'b', from: '2026-02-01', to: '2026-02-29' }] },
      'blackouts[0].to',
      '2026-02-29 does not exist: February 2026 has 28 days',
    ],
    [
      { blackouts: [{ name: 'b', from: '2100-02-29', to: '2100-03-01' }] },
      'blackouts[0].from',
      '2100-02-29 does not exist: February 2100 has 28 days',
    ],
    [
      { blackouts: [{ name: 'b', from: '2026-13-01', to: '2026-12-31' }] },
      'blackouts[0].from',
      '2026-13-01 does not exist: the months go from 01 to 12',
    ],
    [
      { blackouts: [{ name: 'b', from: '2026-00-10', to: '2026-12-31' }] },
      'blackouts[0].from',
      '2026-00-10 does not exist: the months go from 01 to 12',
    ],
    [{ blackouts: [{ name: 'b', from: '2026-1-5', to: '2026-12-31' }] }, 'blackouts[0].from', 'must be a date, YYYY-MM-DD'],
    [{ blackouts: [{ name: 'b', from: '2026-12-24', to: '05:00' }] }, 'blackouts[0].to', 'must be a date, YYYY-MM-DD, as from is'],
    [{ blackouts: [{ name: 'b', from: '2026-12-24' }] }, 'blackouts[0].to', 'is missing: a date, YYYY-MM-DD'],
    [{ blackouts: [{ name: 'b', days: ['fri'], from: '25:00' }] }, 'blackouts[0].from', '25:00 does not exist: the hours go from 00 to 23'],
    [
      { blackouts: [{ name: 'b', days: ['fri'], from: '24:00' }] },
      'blackouts[0].from',
      '24:00 is the end of a day, not a start: say "00:00"',
    ],
    [{ blackouts: [{ name: 'b', monthDays: [1], to: '12:60' }] }, 'blackouts[0].to', '12:60 does not exist: the minutes go from 00 to 59'],
    [{ blackouts: [{ name: 'b', monthDays: [32] }] }, 'blackouts[0].monthDays[0]', 'must be at most 31'],
    [
      { blackouts: [{ name: 'b', days: ['fri'], from: '2026-12-24' }] },
      'blackouts[0].from',
      'must be a time, HH:MM, with days or monthDays',
    ],
    [
      { blackouts: [{ name: 'b', from: '23:00', to: '24:30' }] },
      'blackouts[0].to',
      '24:30 does not exist: the hours go from 00 to 23 ("24:00" is the end of the day)',
    ],
    [
      { blackouts: [{ name: 'b', from: 'fri 22:00', to: 'mon 25:00' }] },
      'blackouts[0].to',
      '25:00 does not exist: the hours go from 00 to 23 ("24:00" is the end of the day)',
    ],
    [
      { blackouts: [{ name: 'b', from: 'Fri 22:00', to: 'mon 06:00' }] },
      'blackouts[0].from',
      'must be a day of the week and a time, as "fri 22:00" (the days: sun, mon, tue, wed, thu, fri, sat)',
    ],
    [
      { blackouts: [{ name: 'b', from: 'fri 22:00', to: '06:00' }] },
      'blackouts[0].to',
      'must be a day of the week and a time, as "mon 06:00", as from is',
    ],
    [
      { blackouts: [{ name: 'b', from: 'fri 22:00', to: 'fri 22:00' }] },
      'blackouts[0].to',
      'is the same time as from: a blackout needs a stretch of time',
    ],
    [{ blackouts: [{ name: 'b', from: 'noon', to: '13:00' }] }, 'blackouts[0].from', 'must be a time, HH:MM, as to is'],
    [
      { blackouts: [{ name: 'b', from: 'noon', to: 'one' }] },
      'blackouts[0].from',
      'must be a date, YYYY-MM-DD, a time, HH:MM, or a day of the week and a time, as "mon 06:00"',
    ],
    [{ windows: [{ days: ['mon'], from: '07:60', to: '09:00' }] }, 'windows[0].from', '07:60 does not exist: the minutes go from 00 to 59'],
    [{ windows: [{ days: ['mon'], from: '7:00', to: '09:00' }] }, 'windows[0].from', 'must be "HH:MM"'],
  ])('%j: %s says so', (calendar, where, message) => {
    expect(problems({ calendar })).toEqual([`calendar.${where}: ${message}`]);
  });

  it('a blackout that says no time says which forms there are', () => {
    expect(problems({ calendar: { blackouts: [{ name: 'b' }] } })).toEqual([
      'calendar.blackouts[0]: says no time: give from and to, two dates (YYYY-MM-DD, both ends included), two times ("23:00" to "01:00": every day, or on days or monthDays) or two times of the week ("fri 22:00" to "mon 06:00")',
    ]);
    expect(problems({ calendar: { blackouts: [{ name: 'leap', from: '2028-02-29', to: '2028-02-29' }] } })).toEqual([]);
  });
});

describe('calendar.timeZone: IANA names only', () => {
  const problems = (timeZone: string) => configProblems({ calendar: { timeZone } });
  const place = 'write the IANA name of the place, as Europe/Oslo, America/New_York, Asia/Kolkata, or UTC';

  it("every zone the platform lists is taken, and UTC, Etc/UTC and a zone's old and new names", () => {
    const listed = Intl.supportedValuesOf('timeZone');
    expect(listed.length).toBeGreaterThan(300);
    expect(listed.filter((tz) => problems(tz).length > 0)).toEqual([]);
    for (const tz of [
      'UTC',
      'Etc/UTC',
      'Asia/Kolkata',
      'Asia/Calcutta',
      'Europe/Kyiv',
      'Europe/Kiev',
      'Australia/Lord_Howe',
      'America/Argentina/Buenos_Aires',
    ])
      expect(problems(tz), tz).toEqual([]);
  });

  it.each([
    ['EST', `"EST" is an abbreviation, which does not say where or when the clocks change: ${place}`],
    ['CET', `"CET" is an abbreviation, which does not say where or when the clocks change: ${place}`],
    ['EST5EDT', `"EST5EDT" is an abbreviation, which does not say where or when the clocks change: ${place}`],
    ['+01:00', `"+01:00" is an offset, which never follows daylight saving: ${place}`],
    ['-0500', `"-0500" is an offset, which never follows daylight saving: ${place}`],
    ['UTC+1', `"UTC+1" is an offset, which never follows daylight saving: ${place}`],
    ['GMT-05:00', `"GMT-05:00" is an offset, which never follows daylight saving: ${place}`],
    ['GMT', '"GMT" is another name of UTC: write "UTC"'],
    ['utc', '"utc" is another name of UTC: write "UTC"'],
    ['europe/berlin', '"europe/berlin" is not written as IANA writes it: write "Europe/Berlin"'],
    ['US/Eastern', '"US/Eastern" is an old name of a time zone: write "America/New_York"'],
    [
      'Europe/Atlantis',
      '"Europe/Atlantis" is not a time zone this platform knows: write an IANA name, as Europe/Oslo, America/New_York, Asia/Kolkata, or UTC',
    ],
    ['', '"" is not a time zone this platform knows: write an IANA name, as Europe/Oslo, America/New_York, Asia/Kolkata, or UTC'],
    // what is said of a name is quoted, one line, and cut
    [
      'Europe/Oslo\nnext line',
      '"Europe/Oslo\\nnext line" is not a time zone this platform knows: write an IANA name, as Europe/Oslo, America/New_York, Asia/Kolkata, or UTC',
    ],
    [
      `Europe/${'x'.repeat(100)}`,
      `"Europe/${'x'.repeat(57)}…" is not a time zone this platform knows: write an IANA name, as Europe/Oslo, America/New_York, Asia/Kolkata, or UTC`,
    ],
  ])('%j is refused: %s', (timeZone, message) => {
    expect(problems(timeZone)).toEqual([`calendar.timeZone: ${message}`]);
  });

  it('members whose calendars name one zone by its old and its new name share one digest', () => {
    const now = () => at('2026-11-25T12:00:00Z');
    const a = memberCalendar(cal({ timeZone: 'Asia/Kolkata', blackouts: [{ name: 'b', days: ['sun'] }] }), now)();
    const b = memberCalendar(cal({ timeZone: 'Asia/Calcutta', blackouts: [{ name: 'b', days: ['sun'] }] }), now)();
    const other = memberCalendar(cal({ timeZone: 'Asia/Dhaka', blackouts: [{ name: 'b', days: ['sun'] }] }), now)();
    expect(a.digest).toBe(b.digest);
    expect(a.timeZone).toBe('Asia/Kolkata');
    expect(other.digest).not.toBe(a.digest);
  });
});
