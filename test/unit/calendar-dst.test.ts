/**
 * The calendar on the days the clocks change, in four zones (Europe/Berlin, America/New_York,
 * Australia/Sydney in the southern hemisphere, Australia/Lord_Howe, whose clocks move by 30
 * minutes), both ways: a wall time the clocks skip, and one they show twice.
 *
 * What is expected comes from an oracle written apart from the calendar: it reads the zone's
 * clock at every minute of four days with a formatter of its own (the UTC offset Intl names, not
 * the date's parts), finds when the clock first shows a time by scanning those minutes, and
 * finds every change of the calendar's state by scanning minute by minute. The calendar must
 * agree at every minute (stateAt) and name every change (nextChange, stretches). The rule both
 * follow: a window or blackout opens the first time the clock shows its `from` (a skipped time:
 * when the clocks jump past it) and closes the first time the clock then shows its `to`.
 */
import { describe, expect, it } from 'vitest';
import { Calendar, type CalendarState } from '../../src/calendar/calendar.ts';
import { CalendarConfig } from '../../src/calendar/config.ts';
import { conflictOf } from '../../src/calendar/conflict.ts';

const MIN = 60_000;
const DAY = 86_400_000;
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;

/** The zone's clock at every minute from `date` - 2 days to `date` + 3 days (UTC), read by the UTC offset Intl names. */
class Oracle {
  readonly start: number;
  readonly walls: number[] = [];
  readonly timeZone: string;
  readonly date: string;

  constructor(timeZone: string, date: string) {
    this.timeZone = timeZone;
    this.date = date;
    const fmt = new Intl.DateTimeFormat('en-GB', { timeZone, timeZoneName: 'longOffset' });
    this.start = Date.parse(`${date}T00:00:00Z`) - 2 * DAY;
    for (let t = this.start; t < this.start + 5 * DAY; t += MIN) {
      const name = fmt.formatToParts(t).find((p) => p.type === 'timeZoneName')!.value; // "GMT+10:30", "GMT-04:00", "GMT"
      const m = /^GMT(?:([+-])(\d{2}):(\d{2}))?$/.exec(name)!;
      const offset = m[1] === undefined ? 0 : (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) * MIN;
      this.walls.push(t + offset);
    }
  }

  at = (i: number) => this.start + i * MIN;

  /** shows: every instant at which the clock shows `date hh:mm`. */
  shows(date: string, hhmm: string): number[] {
    const wall = Date.parse(`${date}T${hhmm}:00Z`);
    return this.walls.flatMap((w, i) => (w === wall ? [this.at(i)] : []));
  }

  /** first: the first instant at which the clock shows `date hh:mm` or later ("24:00": the next day's midnight). */
  first(date: string, hhmm: string): number {
    const wall = Date.parse(`${date}T00:00:00Z`) + minutes(hhmm) * MIN;
    const i = this.walls.findIndex((w) => w >= wall);
    if (i <= 0) throw new Error(`${date} ${hhmm} is outside the oracle's days`);
    return this.at(i);
  }

  /** changed: the wall times the clocks skip or show twice, the first of them on `date` ([from, to) in minutes of that date), and which. */
  changed(date: string): { way: 'forward' | 'back'; from: number; to: number } {
    const midnight = Date.parse(`${date}T00:00:00Z`);
    for (let i = 1; i < this.walls.length; i++) {
      const jump = this.walls[i]! - this.walls[i - 1]! - MIN;
      // forward: the first wall time skipped; back: the first shown twice
      const first = jump > 0 ? this.walls[i - 1]! + MIN : this.walls[i]!;
      if (jump === 0 || first < midnight || first >= midnight + DAY) continue;
      const from = (first - midnight) / MIN;
      return { way: jump > 0 ? 'forward' : 'back', from, to: from + Math.abs(jump) / MIN };
    }
    throw new Error(`the clocks of ${this.timeZone} do not change on ${date}`);
  }
}

const minutes = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
/** hhmm: minutes of a day (0 to 1440) as "HH:MM". */
const hhmm = (m: number) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
const addDays = (date: string, n: number) => new Date(Date.parse(`${date}T00:00:00Z`) + n * DAY).toISOString().slice(0, 10);
const dowOf = (date: string) => new Date(`${date}T00:00:00Z`).getUTCDay();

/** One rule in the oracle's words: on which dates it starts, from when, and how many days later it ends, at `to`. */
interface OracleRule {
  readonly starts: (date: string) => boolean;
  readonly from: string;
  readonly to: string;
  readonly days: number;
}

/** intervals: the stretches a rule covers, by the rule above, on the days that reach local noon the day before to local noon the day after. */
function intervals(o: Oracle, r: OracleRule): [number, number][] {
  return [-1, 0, 1]
    .map((n) => addDays(o.date, n))
    .filter((d) => r.starts(d))
    .map((d) => [o.first(d, r.from), o.first(addDays(d, r.days), r.to)]);
}

/** expectedState: what the calendar should say at `t`. */
function expectedState(windows: [number, number][], blackouts: [string, [number, number][]][], t: number): CalendarState {
  const inside = (list: [number, number][]) => list.some(([a, b]) => a <= t && t < b);
  return {
    inWindow: windows.length === 0 || inside(windows),
    blackout: blackouts.find(([, list]) => inside(list))?.[0] ?? null,
  };
}

// the days the clocks change in 2026, as each zone's rules say; the oracle checks each one
const TRANSITIONS = [
  ['Europe/Berlin', '2026-03-29', 'forward'],
  ['Europe/Berlin', '2026-10-25', 'back'],
  ['America/New_York', '2026-03-08', 'forward'],
  ['America/New_York', '2026-11-01', 'back'],
  ['Australia/Sydney', '2026-10-04', 'forward'],
  ['Australia/Sydney', '2026-04-05', 'back'],
  ['Australia/Lord_Howe', '2026-10-04', 'forward'],
  ['Australia/Lord_Howe', '2026-04-05', 'back'],
  // and, beyond the four: midnight skipped and midnight shown twice (Sunday 00:00 back to Saturday 23:00), and two hours at once
  ['America/Santiago', '2026-09-06', 'forward'],
  ['America/Santiago', '2026-04-04', 'back'],
  ['Antarctica/Troll', '2026-03-29', 'forward'],
  ['Antarctica/Troll', '2026-10-25', 'back'],
] as const;

/** The rules tried on each day: their from and to placed around the wall times that change ([a, b), in minutes of the day: before 0 is the day before, past 1440 the day after). */
const PLACES: [string, (a: number, b: number) => [number, number]][] = [
  ['opens inside the change', (a, b) => [(a + b) / 2, b + 60]],
  ['closes inside the change', (a, b) => [a - 60, (a + b) / 2]],
  ['is the change exactly', (a, b) => [a, b]],
  ['opens where the change ends', (a, b) => [b, b + 30]],
  ['opens three hours before the change (often the evening before) and closes inside it', (a, b) => [a - 180, (a + b) / 2]],
];

const KINDS = ['window', 'blackout on days', 'blackout on monthDays', 'blackout span of the week', 'daily blackout'] as const;

describe.each(TRANSITIONS)('%s, %s: the clocks go %s', (timeZone, date, way) => {
  const o = new Oracle(timeZone, date);
  const change = o.changed(date);

  it('the oracle sees the change', () => {
    expect(change.way).toBe(way);
    expect(change.to).toBeGreaterThan(change.from);
    const mid = hhmm((change.from + change.to) / 2);
    expect(o.shows(date, mid)).toHaveLength(way === 'forward' ? 0 : 2);
  });

  it.each(PLACES.flatMap(([place, f]) => KINDS.map((kind) => [kind, place, f] as const)))(
    'a %s that %s: its state at every minute and every change',
    (kind, placeName, place) => {
      const [a, b] = place(change.from, change.to);
      // the day it opens on, and its times on that day: `to` past midnight crosses into the next
      const shift = Math.floor(a / 1440);
      const opensOn = addDays(date, shift);
      const from = hhmm(a - shift * 1440);
      const end = b - shift * 1440;
      const crosses = end > 1440 ? 1 : 0;
      const to = hhmm(end - crosses * 1440);
      const dow = DAYS[dowOf(opensOn)]!;
      const config =
        kind === 'window'
          ? { windows: [{ days: [...DAYS], from, to }] }
          : kind === 'blackout on days'
            ? { blackouts: [{ name: 'b', days: [dow], from, to }] }
            : kind === 'blackout on monthDays'
              ? { blackouts: [{ name: 'b', monthDays: [Number(opensOn.slice(8))], from, to }] }
              : kind === 'blackout span of the week'
                ? { blackouts: [{ name: 'b', from: `${dow} ${from}`, to: `${DAYS[dowOf(addDays(opensOn, crosses))]} ${to}` }] }
                : { blackouts: [{ name: 'b', from, to }] };
      const cal = new Calendar(CalendarConfig.parse({ timeZone, ...config }));
      const rule: OracleRule = {
        starts: kind === 'window' || kind === 'daily blackout' ? () => true : (d) => d === opensOn,
        from,
        to,
        days: crosses,
      };
      const windows = kind === 'window' ? intervals(o, rule) : [];
      const blackouts: [string, [number, number][]][] = kind === 'window' ? [] : [['b', intervals(o, rule)]];
      // from noon the day before to noon the day after, local time, minute by minute
      const first = (o.first(addDays(date, -1), '12:00') - o.start) / MIN;
      const last = (o.first(addDays(date, 1), '12:00') - o.start) / MIN;
      const expected: { at: number; state: CalendarState }[] = [];
      const disagree: string[] = [];
      for (let i = first; i < last; i++) {
        const state = expectedState(windows, blackouts, o.at(i));
        const got = cal.stateAt(o.at(i));
        if (got.inWindow !== state.inWindow || got.blackout !== state.blackout)
          disagree.push(`${new Date(o.at(i)).toISOString()}: ${JSON.stringify(got)}, not ${JSON.stringify(state)}`);
        const prev = expected.at(-1)?.state;
        if (prev === undefined || prev.inWindow !== state.inWindow || prev.blackout !== state.blackout)
          expected.push({ at: o.at(i), state });
      }
      expect(disagree.slice(0, 5), 'stateAt, minute by minute').toEqual([]);
      // a blackout of the very hour the clocks skip never begins: the clock never shows it
      const never = kind !== 'window' && kind !== 'daily blackout' && way === 'forward' && placeName === 'is the change exactly';
      if (never) expect(expected).toHaveLength(1);
      else expect(expected.length, 'the state changes in these days').toBeGreaterThan(1);
      const said = cal.stretches(o.at(first), o.at(last)).map((s) => ({ at: new Date(s.at).toISOString(), state: s.state }));
      expect(said).toEqual(expected.map((s) => ({ at: new Date(s.at).toISOString(), state: s.state })));
    },
  );
});

describe('the edges read in words', () => {
  it('Berlin, the clocks go back: a window from 02:30 opens the first time the clock shows 02:30 (summer time), and lasts to 05:00 winter time', () => {
    const o = new Oracle('Europe/Berlin', '2026-10-25');
    const cal = new Calendar(CalendarConfig.parse({ timeZone: 'Europe/Berlin', windows: [{ days: ['sun'], from: '02:30', to: '05:00' }] }));
    const [summer, winter] = o.shows('2026-10-25', '02:30');
    expect(winter! - summer!).toBe(3_600_000);
    expect(cal.nextChange(o.first('2026-10-25', '00:00'))).toBe(summer);
    expect(cal.nextAllowed(o.first('2026-10-25', '01:00'), 'windows')).toBe(summer);
    expect(cal.stateAt(winter!).inWindow).toBe(true);
    expect(cal.nextChange(summer!)).toBe(o.first('2026-10-25', '05:00'));
  });

  it('Berlin, the clocks go forward: a window from 02:30 opens when the clocks jump to 03:00', () => {
    const o = new Oracle('Europe/Berlin', '2026-03-29');
    const cal = new Calendar(CalendarConfig.parse({ timeZone: 'Europe/Berlin', windows: [{ days: ['sun'], from: '02:30', to: '05:00' }] }));
    expect(o.shows('2026-03-29', '02:30')).toEqual([]);
    const jump = o.shows('2026-03-29', '03:00')[0]!;
    expect(cal.stateAt(jump - MIN).inWindow).toBe(false);
    expect(cal.nextChange(o.first('2026-03-29', '00:00'))).toBe(jump);
    expect(cal.nextAllowed(o.first('2026-03-29', '01:00'), 'windows')).toBe(jump);
  });

  it('Lord Howe, the clocks go back half an hour: a blackout from 01:45 begins at the first 01:45 and ends at 03:00', () => {
    const o = new Oracle('Australia/Lord_Howe', '2026-04-05');
    const cal = new Calendar(
      CalendarConfig.parse({ timeZone: 'Australia/Lord_Howe', blackouts: [{ name: 'b', days: ['sun'], from: '01:45', to: '03:00' }] }),
    );
    const [first, second] = o.shows('2026-04-05', '01:45');
    expect(second! - first!).toBe(30 * MIN);
    expect(cal.nextChange(o.first('2026-04-05', '00:00'))).toBe(first);
    expect(cal.blackoutEnd(first!)).toBe(o.first('2026-04-05', '03:00'));
  });

  it('a maintenance inside a blackout on the day the clocks change is foretold, both ways', () => {
    for (const [date, from] of [
      ['2026-10-25', '02:30'], // the repeated hour
      ['2026-03-29', '02:30'], // the skipped hour: it begins at 03:00
    ] as const) {
      const o = new Oracle('Europe/Berlin', date);
      const cal = new Calendar(
        CalendarConfig.parse({ timeZone: 'Europe/Berlin', blackouts: [{ name: 'sunday-batch', days: ['sun'], from, to: '04:00' }] }),
      );
      const begins = o.first(date, from);
      // from 10 minutes before the blackout begins, for 20 minutes
      const c = conflictOf(cal, { eventId: 'E', notBefore: begins - 10 * MIN, durationSeconds: 1200, within: null }, begins - DAY);
      expect(c, date).toMatchObject({ kind: 'blackout', blackout: 'sunday-batch' });
      // ending as it begins: no conflict
      expect(conflictOf(cal, { eventId: 'E', notBefore: begins - 20 * MIN, durationSeconds: 1200, within: null }, begins - DAY)).toBeNull();
    }
  });
});
