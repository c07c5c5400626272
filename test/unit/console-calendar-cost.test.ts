/**
 * What a member's calendar costs the relay: the console shades every calendar its members name on
 * every timeline it makes (each read of the store, at most every two seconds, for each range). A
 * member may write any calendar: one with 50 rules, each starting and ending at another minute,
 * must cost a walk of its stretches a few thousand readings of the clock, not one per rule per
 * edge per day (hundreds of thousands), or a hundred of them stop the relay for seconds.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Calendar, calendarDigest, type CalendarState } from '../../src/calendar/calendar.ts';
import { ZoneClock } from '../../src/calendar/clock.ts';
import { CalendarConfig } from '../../src/calendar/config.ts';
import { snapshotOf } from '../../src/fleet/view/snapshot.ts';
import { fleetEvents } from '../../src/fleet/view/events.ts';
import { timelineOf } from '../../src/relay/console-timeline.ts';
import type { Versioned } from '../../src/fleet/budget/stores/port.ts';

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-30T10:00:00Z');
const ALL = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
const hhmm = (m: number) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;

/** hostile: 25 windows and 25 blackouts every day, 100 edges, the state changing at each (`seed` makes another calendar). */
const hostile = (seed: number, timeZone = 'Europe/Berlin') =>
  CalendarConfig.parse({
    timeZone,
    windows: Array.from({ length: 25 }, (_, i) => ({
      days: [...ALL],
      from: hhmm((i * 57 + seed) % 1440),
      to: hhmm((i * 57 + seed + 30) % 1440),
    })),
    blackouts: Array.from({ length: 25 }, (_, i) => ({
      ...{ name: `b${i}`, days: [...ALL] },
      ...{ from: hhmm((i * 57 + seed + 13) % 1440), to: hhmm((i * 57 + seed + 20) % 1440) },
    })),
  });

const instant = Object.getOwnPropertyDescriptor(ZoneClock.prototype, 'instant')!;
/** readings: counts the readings of every calendar's clock from now on (a spy would keep each call's arguments). */
function readings(): { count: number } {
  const counted = { count: 0 };
  const read = instant.value as ZoneClock['instant'];
  Object.defineProperty(ZoneClock.prototype, 'instant', {
    ...instant,
    value(this: ZoneClock, day: number, minute: number) {
      counted.count++;
      return read.call(this, day, minute);
    },
  });
  return counted;
}
afterEach(() => Object.defineProperty(ZoneClock.prototype, 'instant', instant));

describe('what shading a hostile calendar costs the relay', () => {
  it('walks a calendar of 50 rules over 7 days in a few thousand readings of its clock', () => {
    const cal = new Calendar(hostile(1));
    const read = readings();
    const stretches = cal.stretches(NOW - (7 * DAY) / 12, NOW + 7 * DAY, 200);
    expect(stretches).toHaveLength(200);
    expect(read.count).toBeLessThan(20_000);
  });

  it('a timeline of 100 members, each naming a hostile calendar of its own, reads their clocks a bounded number of times', () => {
    const records: Versioned[] = [];
    for (let i = 0; i < 100; i++) {
      const p = calendarDigest(hostile(i));
      records.push({ name: `web/calendar-${p.digest}`, version: '1', value: JSON.parse(JSON.stringify(p.config)) });
      records.push({
        name: `web/member-vm${i}`,
        version: '1',
        value: {
          ...{ member: `vm${i}`, vm: `vm${i}`, resourceId: null, heartbeatAt: new Date(NOW).toISOString(), heartbeatSeconds: 30 },
          ...{ slot: null, events: [] },
          calendar: { digest: p.digest, timeZone: 'Europe/Berlin', open: true, inWindow: true, blackout: null, until: null },
        },
      });
    }
    const s = snapshotOf(records, 'test', NOW);
    expect(s.calendars?.size).toBe(100);
    const read = readings();
    const t = timelineOf(s, fleetEvents(s, {}, NOW), NOW, '7d');
    expect(t.lanes[0]!.rows.every((r) => r.shades.length > 0)).toBe(true);
    expect(read.count).toBeLessThan(2_000_000);
  });
});

/** walked: the stretches as the calendar's nextChange walks them, edge by edge (what stretches said before it read them a week at a time). */
function walked(cal: Calendar, from: number, to: number, max: number): { at: number; state: CalendarState }[] {
  const out = [{ at: from, state: cal.stateAt(from) }];
  let t = cal.nextChange(from, Math.ceil((to - from) / DAY) + 1);
  while (t !== null && t < to && out.length < max) {
    out.push({ at: t, state: cal.stateAt(t) });
    t = cal.nextChange(t, Math.ceil((to - t) / DAY) + 1);
  }
  return out;
}

describe('the stretches read a week at a time are those walked edge by edge', () => {
  const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata', 'Pacific/Apia', 'America/Santiago'];
  // a small deterministic generator: the same calendars at every run
  let seed = 42;
  const rnd = (n: number) => {
    // mulberry32
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return Math.floor((((x ^ (x >>> 14)) >>> 0) / 2 ** 32) * n);
  };
  const time = () => hhmm(rnd(4) === 0 ? rnd(24) * 60 : rnd(1440));
  const days = () => ALL.filter(() => rnd(2) === 0).concat(ALL[rnd(7)]!);
  const rule = (i: number) => {
    switch (rnd(5)) {
      case 0:
        return { name: `d${i}`, from: `2026-0${3 + rnd(2)}-${10 + rnd(18)}`, to: `2026-04-${10 + rnd(18)}` };
      case 1:
        return { name: `w${i}`, from: `${ALL[rnd(7)]} ${time()}`, to: `${ALL[rnd(7)]} ${time()}` };
      case 2:
        return { name: `m${i}`, monthDays: [1 + rnd(31)], from: time(), to: rnd(3) === 0 ? '24:00' : time() };
      default:
        return { name: `t${i}`, ...(rnd(2) === 0 ? { days: days() } : {}), from: time(), to: time() };
    }
  };
  for (let n = 0; n < 120; n++) {
    const timeZone = ZONES[n % ZONES.length]!;
    const windows = Array.from({ length: rnd(4) }, () => ({ days: days(), from: time(), to: time() })).filter((w) => w.from !== w.to);
    const parsed = CalendarConfig.safeParse({
      timeZone,
      windows,
      blackouts: [...Array.from({ length: 1 + rnd(5) }, (_, i) => rule(i)), { name: 'day', from: time(), to: time() }],
    });
    if (!parsed.success) continue;
    // around the spring and autumn changes of both hemispheres, over 1 hour to 40 days
    const from = Date.parse(['2026-03-08T00:00:00Z', '2026-03-28T17:00:00Z', '2026-04-04T00:00:00Z', '2026-10-24T21:30:00Z'][n % 4]!);
    const span = [3_600_000, DAY, 7 * DAY, 40 * DAY][rnd(4)]!;
    it(`calendar ${n} in ${timeZone} over ${span / 3_600_000} h`, () => {
      const cal = new Calendar(parsed.data);
      const all = cal.stretches(from, from + span, 500);
      expect(all).toEqual(walked(cal, from, from + span, 500));
      expect(cal.stretches(from, from + span, 5)).toEqual(walked(cal, from, from + span, 5));
    });
  }
});
