/**
 * The calendar's edges, on instants the test names (the calendar reads no clock of its own: every
 * answer is of the instant it is given): a blackout's end and a window's close are outside it,
 * its start inside, for every form a blackout is written in; zones far from UTC, where the local
 * date is not the UTC date; how far ahead it looks; what `status` and `fleet status` print; and a
 * member's record, which walks the calendar out again only when what it said no longer holds.
 */
import { describe, expect, it } from 'vitest';
import { Calendar, calendarNow, calendarNowText, memberCalendar } from '../../src/calendar/calendar.ts';
import { CalendarConfig } from '../../src/calendar/config.ts';

const at = (iso: string) => Date.parse(iso);
const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
const cal = (c: unknown) => new Calendar(CalendarConfig.parse(c));
const MIN = 60_000;
const DAY = 86_400_000;

describe('a blackout holds from its start to its end, its end outside', () => {
  // UTC: the instants are the wall times. Saturday 28 November 2026 is a Saturday, the 28th
  it.each([
    ['every day', { from: '23:00', to: '01:00' }, '2026-11-28T23:00:00Z', '2026-11-29T01:00:00Z'],
    ['on days of the week', { days: ['sat'], from: '10:00', to: '12:30' }, '2026-11-28T10:00:00Z', '2026-11-28T12:30:00Z'],
    ['on days of the month', { monthDays: [28], from: '20:00', to: '02:00' }, '2026-11-28T20:00:00Z', '2026-11-29T02:00:00Z'],
    ['a whole day of the month', { monthDays: [28] }, '2026-11-28T00:00:00Z', '2026-11-29T00:00:00Z'],
    ['a run of dates', { from: '2026-11-28', to: '2026-11-29' }, '2026-11-28T00:00:00Z', '2026-11-30T00:00:00Z'],
    ['a stretch of the week', { from: 'sat 09:00', to: 'sun 24:00' }, '2026-11-28T09:00:00Z', '2026-11-30T00:00:00Z'],
  ])('%s', (_form, when, starts, ends) => {
    const c = cal({ timeZone: 'UTC', blackouts: [{ name: 'b', ...when }] });
    expect(c.stateAt(at(starts) - 1).blackout).toBeNull();
    expect(c.stateAt(at(starts)).blackout).toBe('b');
    expect(c.stateAt(at(ends) - 1).blackout).toBe('b');
    expect(c.stateAt(at(ends)).blackout).toBeNull();
    expect(c.allows(at(ends) - 1, 'any')).toBe(false);
    expect(c.allows(at(ends), 'any')).toBe(true);
    expect(c.allows(at(ends) - 1, 'always')).toBe(true);
    expect(iso(c.nextChange(at(starts) - MIN))).toBe(iso(at(starts)));
    expect(iso(c.blackoutEnd(at(starts)))).toBe(iso(at(ends)));
    expect(iso(c.blackoutEnd(at(ends) - 1))).toBe(iso(at(ends)));
    expect(c.blackoutEnd(at(ends))).toBeNull();
    expect(iso(c.nextAllowed(at(starts), 'any'))).toBe(iso(at(ends)));
    expect(c.nextAllowed(at(ends), 'any')).toBe(at(ends));
  });

  it('a window closes at its `to`: the instant it closes is outside, the instant it opens inside', () => {
    const c = cal({ timeZone: 'UTC', windows: [{ days: ['sat'], from: '10:00', to: '12:00' }] });
    expect(c.stateAt(at('2026-11-28T10:00:00Z') - 1).inWindow).toBe(false);
    expect(c.stateAt(at('2026-11-28T10:00:00Z')).inWindow).toBe(true);
    expect(c.stateAt(at('2026-11-28T12:00:00Z') - 1).inWindow).toBe(true);
    expect(c.stateAt(at('2026-11-28T12:00:00Z')).inWindow).toBe(false);
    expect(c.allows(at('2026-11-28T12:00:00Z'), 'windows')).toBe(false);
    expect(c.allows(at('2026-11-28T12:00:00Z'), 'any')).toBe(true);
    expect(c.allows(at('2026-11-28T11:00:00Z'), 'windows')).toBe(true);
  });

  it('in a window but in a blackout too: a rule bound to the windows waits for the blackout to end', () => {
    const c = cal({
      timeZone: 'UTC',
      windows: [{ days: ['sat'], from: '08:00', to: '12:00' }],
      blackouts: [{ name: 'b', days: ['sat'], from: '09:00', to: '10:00' }],
    });
    expect(c.stateAt(at('2026-11-28T09:30:00Z'))).toEqual({ inWindow: true, blackout: 'b' });
    expect(c.allows(at('2026-11-28T09:30:00Z'), 'windows')).toBe(false);
    expect(iso(c.nextAllowed(at('2026-11-28T09:00:00Z'), 'windows'))).toBe('2026-11-28T10:00:00.000Z');
    expect(iso(c.nextChange(at('2026-11-28T08:30:00Z')))).toBe('2026-11-28T09:00:00.000Z');
  });
});

describe('several windows', () => {
  it('an instant in any one of them is in the windows', () => {
    const c = cal({
      timeZone: 'UTC',
      windows: [
        { days: ['sat'], from: '10:00', to: '12:00' },
        { days: ['sun'], from: '22:00', to: '02:00' },
      ],
    });
    expect(c.stateAt(at('2026-11-28T11:00:00Z'))).toEqual({ inWindow: true, blackout: null }); // Saturday's
    expect(c.stateAt(at('2026-11-30T01:00:00Z'))).toEqual({ inWindow: true, blackout: null }); // Sunday night's, into Monday
    expect(c.stateAt(at('2026-11-29T11:00:00Z'))).toEqual({ inWindow: false, blackout: null });
    expect(c.allows(at('2026-11-28T11:00:00Z'), 'windows')).toBe(true);
    expect(iso(c.nextAllowed(at('2026-11-28T12:00:00Z'), 'windows'))).toBe('2026-11-29T22:00:00.000Z');
  });
});

describe('zones far from UTC: the local date is not the UTC date', () => {
  it.each([
    // [zone, the local Saturday 10:00 to 12:00 in UTC]
    ['Pacific/Kiritimati', '2026-11-27T20:00:00Z', '2026-11-27T22:00:00Z'], // UTC+14: Friday in UTC
    ['Pacific/Pago_Pago', '2026-11-28T21:00:00Z', '2026-11-28T23:00:00Z'], // UTC-11
    ['Pacific/Chatham', '2026-11-27T20:15:00Z', '2026-11-27T22:15:00Z'], // UTC+13:45 in its summer
  ])('%s: a Saturday rule holds on the local Saturday', (timeZone, opens, closes) => {
    const c = cal({
      timeZone,
      windows: [{ days: ['sat'], from: '10:00', to: '12:00' }],
      blackouts: [{ name: 'b', days: ['sat'], from: '10:00', to: '12:00' }],
    });
    expect(c.stateAt(at(opens) - 1)).toEqual({ inWindow: false, blackout: null });
    expect(c.stateAt(at(opens))).toEqual({ inWindow: true, blackout: 'b' });
    expect(c.stateAt(at(closes) - 1)).toEqual({ inWindow: true, blackout: 'b' });
    expect(c.stateAt(at(closes))).toEqual({ inWindow: false, blackout: null });
    expect(iso(c.nextChange(at(opens) - 3 * DAY))).toBe(iso(at(opens)));
    expect(iso(c.nextChange(at(opens)))).toBe(iso(at(closes)));
  });

  it("a blackout of several days across a week's end, in a zone a day ahead of UTC, holds on its last local day", () => {
    const c = cal({ timeZone: 'Pacific/Kiritimati', blackouts: [{ name: 'long', from: 'fri 20:00', to: 'tue 04:00' }] });
    // Friday 27 November 20:00 local is 06:00 UTC; Tuesday 1 December 04:00 local is Monday 30 November 14:00 UTC
    expect(c.stateAt(at('2026-11-27T06:00:00Z')).blackout).toBe('long');
    expect(c.stateAt(at('2026-11-30T13:59:00Z')).blackout).toBe('long');
    expect(c.stateAt(at('2026-11-30T14:00:00Z')).blackout).toBeNull();
    expect(iso(c.blackoutEnd(at('2026-11-28T00:00:00Z')))).toBe('2026-11-30T14:00:00.000Z');
  });

  it('a day the zone skipped (Samoa went from 29 to 31 December 2011): its Friday window never opened, not on the Saturday either', () => {
    const c = cal({ timeZone: 'Pacific/Apia', windows: [{ days: ['fri'], from: '10:00', to: '12:00' }] });
    // the clocks went from Thursday 29 December 23:59 (UTC-10) to Saturday 31 December 00:00 (UTC+14)
    const jump = at('2011-12-30T10:00:00Z');
    expect(c.local(jump - MIN)).toEqual({ date: '2011-12-29', minute: 1439, offset: -600 });
    expect(c.local(jump)).toEqual({ date: '2011-12-31', minute: 0, offset: 840 });
    expect(c.instant('2011-12-30', 600)).toBe(jump);
    expect(c.stateAt(jump + 11 * 60 * MIN).inWindow).toBe(false); // Saturday 11:00
    expect(iso(c.nextChange(jump - DAY))).toBe('2012-01-05T20:00:00.000Z'); // Friday 6 January 10:00
  });

  it('an hour skipped just before midnight (Nuuk, Saturday 28 March 2026, 23:00 to 00:00): its wall times fall on the jump', () => {
    const c = cal({ timeZone: 'America/Nuuk' });
    expect(iso(c.instant('2026-03-28', 23 * 60 + 30))).toBe('2026-03-29T01:00:00.000Z');
    expect(iso(c.instant('2026-03-28', 22 * 60 + 59))).toBe('2026-03-29T00:59:00.000Z');
  });

  it('a run of dates is whole local days, in a zone behind UTC', () => {
    const c = cal({ timeZone: 'Pacific/Pago_Pago', blackouts: [{ name: 'freeze', from: '2026-12-24', to: '2026-12-26' }] });
    expect(c.stateAt(at('2026-12-24T11:00:00Z') - 1).blackout).toBeNull();
    expect(c.stateAt(at('2026-12-24T11:00:00Z')).blackout).toBe('freeze');
    expect(c.stateAt(at('2026-12-27T11:00:00Z') - 1).blackout).toBe('freeze');
    expect(c.stateAt(at('2026-12-27T11:00:00Z')).blackout).toBeNull();
  });
});

describe('how far ahead the calendar looks', () => {
  it('the clock read days past a date (the calendar command), and half a minute past a minute', () => {
    const c = cal({ timeZone: 'Europe/Oslo' });
    // two days on from Saturday 28 March 2026, across the night the clocks go forward: Monday 00:00 is UTC+2
    expect(iso(c.instant('2026-03-28', 2 * 1440))).toBe('2026-03-29T22:00:00.000Z');
    // 13:00:30 in Oslo's winter: the offset in whole minutes
    expect(c.local(at('2026-11-28T12:00:30Z'))).toEqual({ date: '2026-11-28', minute: 780, offset: 60 });
  });

  it('a calendar with no window and no blackout never changes', () => {
    const c = cal({ timeZone: 'Europe/Oslo' });
    expect(c.stateAt(at('2026-11-28T12:00:00Z'))).toEqual({ inWindow: true, blackout: null });
    expect(c.nextChange(at('2026-11-28T12:00:00Z'))).toBeNull();
    expect(c.allows(at('2026-11-28T12:00:00Z'), 'windows')).toBe(true);
    expect(calendarNow(c, at('2026-11-28T12:00:00Z'))).toEqual({
      timeZone: 'Europe/Oslo',
      open: true,
      inWindow: true,
      blackout: null,
      until: null,
    });
  });

  it('a change is found up to 400 days ahead, or as far as asked, and no further', () => {
    const c = cal({ timeZone: 'UTC', blackouts: [{ name: 'far', from: '2027-12-01', to: '2027-12-02' }] });
    const now = at('2026-11-28T12:00:00Z');
    const starts = at('2027-12-01T00:00:00Z'); // on the 368th day after today
    expect(c.nextChange(now)).toBe(starts);
    expect(c.nextChange(now, 367)).toBeNull();
    expect(c.nextChange(now, 368)).toBe(starts);
    expect(c.nextChange(at('2026-10-01T00:00:00Z'))).toBeNull(); // 426 days on
    expect(c.nextAllowed(starts, 'any')).toBe(at('2027-12-03T00:00:00Z'));
    // allowed nowhere before `before`
    expect(c.nextAllowed(starts, 'any', at('2027-12-03T00:00:00Z'))).toBeNull();
    expect(c.nextAllowed(starts, 'any', at('2027-12-03T00:00:00Z') + 1)).toBe(at('2027-12-03T00:00:00Z'));
  });

  it('a blackout of every hour of every day never ends, and nothing is ever allowed but a forced approval', () => {
    const c = cal({ timeZone: 'Europe/Oslo', blackouts: [{ name: 'always', from: '00:00', to: '24:00' }] });
    const now = at('2026-11-28T12:00:00Z');
    expect(c.stateAt(now).blackout).toBe('always');
    expect(c.nextChange(now)).toBeNull();
    expect(c.blackoutEnd(now)).toBeNull();
    expect(c.nextAllowed(now, 'any')).toBeNull();
    expect(c.nextAllowed(now, 'always')).toBe(now);
    expect(calendarNow(c, now)).toMatchObject({ open: false, blackout: 'always', until: null });
  });

  it('one blackout running into another: the end of the one the instant is in', () => {
    const c = cal({
      timeZone: 'UTC',
      blackouts: [
        { name: 'first', days: ['sat'], from: '10:00', to: '12:00' },
        { name: 'second', days: ['sat'], from: '12:00', to: '14:00' },
      ],
    });
    expect(iso(c.blackoutEnd(at('2026-11-28T11:00:00Z')))).toBe('2026-11-28T12:00:00.000Z');
    expect(iso(c.nextAllowed(at('2026-11-28T11:00:00Z'), 'any'))).toBe('2026-11-28T14:00:00.000Z');
    expect(c.blackoutEnd(at('2026-11-28T14:00:00Z'))).toBeNull();
  });

  it("the walk to a blackout's end, or to the first instant allowed, stops after 5000 changes: past them it is not known (null)", () => {
    // 2500 days of blackout with a window every day inside it: two changes a day, the end is the day after the last
    const c = cal({
      timeZone: 'UTC',
      windows: [{ days: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'], from: '10:00', to: '12:00' }],
      blackouts: [{ name: 'long', from: '2030-01-01', to: '2036-11-04' }],
    });
    const end = at('2036-11-05T00:00:00Z');
    // from 10:00 on the first day the end is the 5000th change; from midnight, the 5001st
    expect(c.blackoutEnd(at('2030-01-01T10:00:00Z'))).toBe(end);
    expect(c.blackoutEnd(at('2030-01-01T00:00:00Z'))).toBeNull();
    // the first instant allowed: from 12:00 it is the 4999th change (the 5000th instant looked at), from 11:00 the 5000th
    expect(c.nextAllowed(at('2030-01-01T12:00:00Z'), 'any', end + 1)).toBe(end);
    expect(c.nextAllowed(at('2030-01-01T11:00:00Z'), 'any', end + 1)).toBeNull();
  });

  it('stretches of a calendar that never changes: the one it is in, however far `to` is', () => {
    const c = cal({ timeZone: 'UTC', blackouts: [{ name: 'always', from: '00:00', to: '24:00' }] });
    const from = at('2026-11-28T12:00:00Z');
    for (const days of [1, 30, 400])
      expect(c.stretches(from, from + days * DAY)).toEqual([{ at: from, state: { inWindow: true, blackout: 'always' } }]);
  });

  it('stretches: each change from `from` to `to`, at most `max`', () => {
    const c = cal({ timeZone: 'UTC', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], from: '22:00', to: '02:00' }] });
    const from = at('2026-11-28T12:00:00Z');
    const all = c.stretches(from, from + 2 * DAY);
    expect(all.map((s) => [iso(s.at), s.state.inWindow])).toEqual([
      ['2026-11-28T12:00:00.000Z', false],
      ['2026-11-28T22:00:00.000Z', true],
      ['2026-11-29T02:00:00.000Z', false],
      ['2026-11-29T22:00:00.000Z', true],
      ['2026-11-30T02:00:00.000Z', false],
    ]);
    expect(c.stretches(from, from + 2 * DAY, 3)).toEqual(all.slice(0, 3));
    // `to` itself is the next stretch's: not said
    expect(c.stretches(from, at('2026-11-29T22:00:00Z'))).toEqual(all.slice(0, 3));
    expect(c.stretches(from, at('2026-11-29T22:00:00Z') + 1)).toEqual(all.slice(0, 4));
    // many days ahead: the changes are found however far `to` is
    expect(c.stretches(from, from + 30 * DAY, 1000)).toHaveLength(61);
    expect(c.stretches(from, from + 400 * DAY)).toHaveLength(500);
  });
});

describe('what status and fleet status print', () => {
  const base = { timeZone: 'Europe/Oslo', open: true, inWindow: true, blackout: null, until: null };

  it.each([
    [base, 'open'],
    [{ ...base, until: '2026-11-28T21:00:00.000Z' }, 'open until 2026-11-28T21:00:00.000Z'],
    [{ ...base, inWindow: false }, 'open, but outside the windows (rules with within: windows wait)'],
    [
      { ...base, inWindow: false, until: '2026-11-28T21:00:00.000Z' },
      'open, but outside the windows until 2026-11-28T21:00:00.000Z (rules with within: windows wait)',
    ],
    [
      { ...base, open: false, blackout: 'year-end', until: '2027-01-02T23:00:00.000Z' },
      'closed: inside the blackout year-end until 2027-01-02T23:00:00.000Z (only a forced approval goes through)',
    ],
    [{ ...base, open: false, blackout: 'always' }, 'closed: inside the blackout always (only a forced approval goes through)'],
  ])('%j: %s', (now, text) => {
    expect(calendarNowText(now)).toBe(text);
  });

  it('the instant it changes is written as asked', () => {
    expect(calendarNowText({ ...base, until: '2026-11-28T21:00:00.000Z' }, (t) => `[${t.slice(11, 16)}]`)).toBe('open until [21:00]');
  });
});

describe("a member's record of its calendar", () => {
  it('says what holds now, walked out again the instant it stops holding, and again when the clock goes back', () => {
    const c = cal({ timeZone: 'UTC', blackouts: [{ name: 'b', days: ['sat'], from: '10:00', to: '12:00' }] });
    let now = at('2026-11-28T09:00:00Z');
    const said = memberCalendar(c, () => now);
    expect(said()).toMatchObject({ open: true, blackout: null, until: '2026-11-28T10:00:00.000Z' });
    now = at('2026-11-28T10:00:00Z') - 1;
    expect(said()).toMatchObject({ open: true, until: '2026-11-28T10:00:00.000Z' });
    now = at('2026-11-28T10:00:00Z');
    expect(said()).toMatchObject({ open: false, blackout: 'b', until: '2026-11-28T12:00:00.000Z' });
    // the clock set back: what it said from 10:00 does not hold at 09:30
    now = at('2026-11-28T09:30:00Z');
    expect(said()).toMatchObject({ open: true, blackout: null, until: '2026-11-28T10:00:00.000Z' });
    now = at('2026-11-28T12:00:00Z');
    expect(said()).toMatchObject({ open: true, blackout: null, until: '2026-12-05T10:00:00.000Z' });
  });

  it('a calendar that never changes is read again within the hour: a blackout more than 400 days ahead comes into sight', () => {
    const c = cal({ timeZone: 'UTC', blackouts: [{ name: 'far', from: '2028-01-10', to: '2028-01-10' }] });
    let now = at('2026-12-05T23:30:00Z'); // the blackout begins 400.02 days later
    const said = memberCalendar(c, () => now);
    expect(said()).toMatchObject({ open: true, until: null });
    now += 59 * MIN;
    expect(said()).toMatchObject({ open: true, until: null });
    now += MIN;
    expect(said()).toMatchObject({ open: true, until: '2028-01-10T00:00:00.000Z' });
  });

  it('members of one calendar share one digest; another calendar has another', () => {
    const now = () => at('2026-11-28T09:00:00Z');
    const one = { timeZone: 'UTC', blackouts: [{ name: 'b', days: ['sat'] }] };
    const a = memberCalendar(cal(one), now)();
    const b = memberCalendar(cal(one), now)();
    const other = memberCalendar(cal({ ...one, blackouts: [{ name: 'b', days: ['sun'] }] }), now)();
    expect(a.digest).toMatch(/^[0-9a-f]{12}$/);
    expect(b.digest).toBe(a.digest);
    expect(other.digest).not.toBe(a.digest);
  });
});
