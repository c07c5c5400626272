/**
 * Calendar: the time rules of `calendar` at an instant, in its time zone. Each window and
 * blackout is a run of stretches of time: one opens the first time the clock shows its `from`
 * and closes the first time the clock then shows its `to` (clock.ts says where a time the clocks
 * skip or show twice falls), so the state changes only at those instants, and
 * `nextChange` walks them day by day: "open until" and "opens at" cost a few dozen readings of
 * the clock, never a scan minute by minute.
 */
import { createHash } from 'node:crypto';
import { dayNumber, dowOf, monthDayOf, ZoneClock, type Local } from './clock.ts';
import type { CalendarConfig } from './config.ts';
import { blackoutForm, DAYS, minutesOf } from './forms.ts';
import { zoneId } from './zone.ts';

export type { Local } from './clock.ts';

/** What the calendar says at one instant. */
export interface CalendarState {
  /** Inside a window (always true without windows). */
  readonly inWindow: boolean;
  /** The blackout it is in, or null. */
  readonly blackout: string | null;
}

/** How a rule is bound by the calendar: windows (and no blackout), any time but a blackout, or always (a short Freeze). */
export type Within = 'windows' | 'any' | 'always';

const DAY_MS = 86_400_000;

/** A window or a blackout: on each day it starts on, from `from` to `to` (minutes, up to 1440) `days` days later. */
interface Stretches {
  readonly name: string;
  /** The one day it starts on (a run of dates), or which days it starts on (day numbers). */
  readonly starts: number | ((day: number) => boolean);
  readonly from: number;
  readonly to: number;
  readonly days: number;
}

/** recurring: a time of day on some dates, across midnight when `to` is not after `from`. */
const recurring = (name: string, starts: (day: number) => boolean, from: number, to: number): Stretches => ({
  ...{ name, starts, from, to },
  days: to <= from ? 1 : 0,
});

export class Calendar {
  readonly config: CalendarConfig;
  readonly #clock: ZoneClock;
  readonly #windows: Stretches[];
  readonly #blackouts: Stretches[];
  /** The wall times at which the state may change, in minutes since midnight. */
  readonly #edges: number[];

  constructor(config: CalendarConfig) {
    this.config = config;
    this.#clock = new ZoneClock(config.timeZone);
    this.#windows = config.windows.map((w) => {
      const days = new Set(w.days.map((d) => DAYS.indexOf(d)));
      return recurring('window', (day) => days.has(dowOf(day)), minutesOf(w.from), minutesOf(w.to));
    });
    this.#blackouts = config.blackouts.map((b): Stretches => {
      const form = blackoutForm(b);
      if (form.kind === 'dates')
        return { name: b.name, starts: dayNumber(form.first), from: 0, to: 0, days: dayNumber(form.last) - dayNumber(form.first) + 1 };
      if (form.kind === 'week') return { name: b.name, starts: (day) => dowOf(day) === form.dow, ...form };
      const dows = b.days && new Set(b.days.map((d) => DAYS.indexOf(d)));
      const monthDays = b.monthDays && new Set(b.monthDays);
      const on = (day: number) =>
        dows !== undefined ? dows.has(dowOf(day)) : monthDays !== undefined ? monthDays.has(monthDayOf(day)) : true;
      return recurring(b.name, on, form.from, form.to);
    });
    const edges = new Set([0]);
    for (const s of [...this.#windows, ...this.#blackouts]) edges.add(s.from % 1440).add(s.to % 1440);
    this.#edges = [...edges].sort((a, b) => a - b);
  }

  /** local: the instant `ms` on the calendar's clock. */
  local(ms: number): Local {
    return this.#clock.local(ms);
  }

  /** instant: the first instant at which the calendar's clock shows `minute` (past 1440: the days after) of `date` (YYYY-MM-DD), or a later time. */
  instant(date: string, minute: number): number {
    return this.#clock.instant(dayNumber(date), minute);
  }

  stateAt(ms: number): CalendarState {
    const inWindow = this.#windows.length === 0 || this.#windows.some((w) => this.#covers(w, ms));
    const b = this.#blackouts.find((x) => this.#covers(x, ms));
    return { inWindow, blackout: b?.name ?? null };
  }

  /** covers: whether one of the stretches holds `ms`: one that starts on a date near it, opened by then and not yet closed. */
  #covers(s: Stretches, ms: number): boolean {
    const clock = this.#clock;
    const holds = (day: number) => clock.instant(day, s.from) <= ms && ms < clock.instant(day + s.days, s.to);
    if (typeof s.starts === 'number') return holds(s.starts);
    // the local date is within a day of the UTC date; a stretch reaches `days` days further
    const utc = Math.floor(ms / DAY_MS);
    for (let day = utc - s.days - 2; day <= utc + 2; day++) if (s.starts(day) && holds(day)) return true;
    return false;
  }

  /** allows: whether a rule bound `within` may approve early at `ms`. */
  allows(ms: number, within: Within): boolean {
    if (within === 'always') return true;
    const s = this.stateAt(ms);
    return s.blackout === null && (within === 'any' || s.inWindow);
  }

  /** nextChange: the first instant after `ms` at which the state differs from the state at `ms`, within `horizonDays`; null if none. */
  nextChange(ms: number, horizonDays = 400): number | null {
    if (this.#windows.length === 0 && this.#blackouts.length === 0) return null;
    const now = this.stateAt(ms);
    // every edge is the first instant the clock shows a wall time, so they come in the order of the wall times
    const start = dayNumber(this.#clock.local(ms).date) - 1;
    for (let day = start; day <= start + horizonDays + 1; day++) {
      for (const m of this.#edges) {
        const t = this.#clock.instant(day, m);
        if (t <= ms) continue;
        const s = this.stateAt(t);
        if (s.inWindow !== now.inWindow || s.blackout !== now.blackout) return t;
      }
    }
    return null;
  }

  /** blackoutEnd: when the blackout `ms` is in ends (null if it is in none, or it does not end within the horizon). */
  blackoutEnd(ms: number): number | null {
    const name = this.stateAt(ms).blackout;
    let t: number | null = ms;
    for (let i = 0; name !== null && t !== null && i < 5000; i++) {
      t = this.nextChange(t);
      if (t !== null && this.stateAt(t).blackout !== name) return t;
    }
    return null;
  }

  /** nextAllowed: the first instant at or after `ms` (and before `before`) at which a rule bound `within` may approve; null if none. */
  nextAllowed(ms: number, within: Within, before = ms + 400 * DAY_MS): number | null {
    let t: number | null = ms;
    for (let i = 0; t !== null && t < before && i < 5000; i++) {
      if (this.allows(t, within)) return t;
      t = this.nextChange(t);
    }
    return null;
  }

  /**
   * stretches: the state's stretches from `from` to `to` (each the instant it begins and its state),
   * at most `max`. Read a week at a time from the stretches of time each window and blackout holds
   * (two readings of the clock each): the state changes only where one begins or ends.
   */
  stretches(from: number, to: number, max = 500): { at: number; state: CalendarState }[] {
    const out = [{ at: from, state: this.stateAt(from) }];
    for (let a = from; a < to && out.length < max; a += 7 * DAY_MS) {
      const b = Math.min(to, a + 7 * DAY_MS);
      // where each window (-1) and each blackout (its index) begins (+1) and ends (-1), in order
      const marks: [number, number, 1 | -1][] = [];
      const mark =
        (rule: number) =>
        ([start, end]: [number, number]) =>
          marks.push([start, rule, 1], [end, rule, -1]);
      for (const w of this.#windows) this.#held(w, a, b).forEach(mark(-1));
      this.#blackouts.forEach((x, i) => this.#held(x, a, b).forEach(mark(i)));
      marks.sort((x, y) => x[0] - y[0]);
      const held = this.#blackouts.map(() => 0);
      let windows = 0;
      for (const [i, [t, rule, step]] of marks.entries()) {
        if (rule < 0) windows += step;
        else held[rule]! += step;
        // the state after every mark at t
        if (t <= a || t > b || t >= to || marks[i + 1]?.[0] === t) continue;
        const blackout = held.findIndex((n) => n > 0);
        const state = { inWindow: this.#windows.length === 0 || windows > 0, blackout: this.#blackouts[blackout]?.name ?? null };
        const last = out.at(-1)!.state;
        if (state.inWindow !== last.inWindow || state.blackout !== last.blackout) out.push({ at: t, state });
        if (out.length >= max) break;
      }
    }
    return out;
  }

  /** held: the stretches of time `s` holds (as #covers reads them) that hold an instant from `a` to `b`. */
  #held(s: Stretches, a: number, b: number): [number, number][] {
    const held = (day: number): [number, number] => [this.#clock.instant(day, s.from), this.#clock.instant(day + s.days, s.to)];
    const days: number[] = [];
    if (typeof s.starts === 'number') days.push(s.starts);
    else for (let day = Math.floor(a / DAY_MS) - s.days - 2; day <= Math.floor(b / DAY_MS) + 2; day++) if (s.starts(day)) days.push(day);
    return days.map(held).filter(([start, end]) => start < end && start <= b && end > a);
  }
}

/** What the calendar says now, for /readyz, `status` and `fleet status`. */
export interface CalendarNow {
  readonly timeZone: string;
  /** Early approval by any path allowed now (no blackout). */
  readonly open: boolean;
  /** Inside a window now (rules with within: windows may approve), always true without windows. */
  readonly inWindow: boolean;
  readonly blackout: string | null;
  /** When that changes next (ISO), or null. */
  readonly until: string | null;
}

export function calendarNow(cal: Calendar, now: number): CalendarNow {
  const s = cal.stateAt(now);
  const until = s.blackout !== null ? cal.blackoutEnd(now) : cal.nextChange(now);
  return {
    timeZone: cal.config.timeZone,
    open: s.blackout === null,
    inWindow: s.inWindow,
    blackout: s.blackout,
    until: until === null ? null : new Date(until).toISOString(),
  };
}

/** calendarNowText: what the calendar says now, in words; `when` writes the instant it changes (default: as it is, in UTC). */
export function calendarNowText(c: CalendarNow, when: (iso: string) => string = (iso) => iso): string {
  const until = c.until === null ? '' : ` until ${when(c.until)}`;
  if (c.blackout !== null) return `closed: inside the blackout ${c.blackout}${until} (only a forced approval goes through)`;
  return c.inWindow ? `open${until}` : `open, but outside the windows${until} (rules with within: windows wait)`;
}

/** calendarDigest: the calendar as members publish it (its zone by its current name), and a digest of it: members of one group should share one. */
export function calendarDigest(config: CalendarConfig): { readonly digest: string; readonly config: CalendarConfig } {
  // a zone's old and new names (Asia/Calcutta, Asia/Kolkata) are one calendar
  const published = { ...config, timeZone: zoneId(config.timeZone) ?? config.timeZone };
  return { digest: digestOfText(JSON.stringify(published)), config: published };
}

/** digestOfText: the digest a calendar is named by, of its JSON as written (the relay checks a published calendar by it). */
export const digestOfText = (json: string): string => createHash('sha256').update(json).digest('hex').slice(0, 12);

/** What a member's record says of its calendar, made at each write; `published`: the calendar itself, for the fleet's store. */
export interface MemberCalendarSource {
  (): CalendarNow & { digest: string };
  readonly published?: { readonly digest: string; readonly config: CalendarConfig };
}

/** memberCalendar: what a fleet member's record says of its calendar: a digest of it (members of one group should share one), and what it says now. */
export function memberCalendar(cal: Calendar, now: () => number): MemberCalendarSource {
  const published = calendarDigest(cal.config);
  const { digest } = published;
  // the state holds until `until` by its definition: walked out again only then (a member writes its record at every read)
  let said: { readonly at: CalendarNow & { digest: string }; readonly from: number; readonly until: number } | null = null;
  const source = () => {
    const t = now();
    if (said === null || t >= said.until || t < said.from) {
      const at = { digest, ...calendarNow(cal, t) };
      said = { at, from: t, until: at.until === null ? t + 3_600_000 : Date.parse(at.until) };
    }
    return said.at;
  };
  return Object.assign(source, { published });
}
