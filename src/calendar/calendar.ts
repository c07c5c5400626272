/**
 * Calendar: the time rules of `calendar` at an instant, in its time zone. Local time comes from
 * the platform's IANA data (Intl.DateTimeFormat), never from offsets computed by hand, so
 * daylight saving falls where the platform says. The state changes only at the configured wall
 * times (and local midnight): `nextChange` walks those, day by day, so "open until" and "opens
 * at" cost a few dozen conversions, not a scan minute by minute.
 */
import { createHash } from 'node:crypto';
import { DAYS, minutesOf, type Blackout, type CalendarConfig } from './config.ts';
import { zoneId } from './zone.ts';

/** An instant as the calendar's time zone reads it. */
export interface Local {
  /** YYYY-MM-DD */
  readonly date: string;
  /** 0 = Sunday */
  readonly dow: number;
  readonly monthDay: number;
  /** Minutes since local midnight. */
  readonly minute: number;
}

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
const WEEKDAY: Record<string, number> = { Sun: 0, Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6 };

export class Calendar {
  readonly config: CalendarConfig;
  readonly #fmt: Intl.DateTimeFormat;
  readonly #windows;
  readonly #blackouts;
  /** The wall times at which the state may change, in minutes since midnight. */
  readonly #edges: number[];

  constructor(config: CalendarConfig) {
    this.config = config;
    this.#fmt = new Intl.DateTimeFormat('en-US', {
      timeZone: config.timeZone,
      hourCycle: 'h23',
      ...{ year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', weekday: 'short' },
    });
    this.#windows = config.windows.map((w) => ({
      days: new Set(w.days.map((d) => DAYS.indexOf(d))),
      from: minutesOf(w.from),
      to: minutesOf(w.to),
    }));
    this.#blackouts = config.blackouts.map((b) => ({
      ...b,
      range: rangeOf(b),
      dows: b.days && new Set(b.days.map((d) => DAYS.indexOf(d))),
    }));
    const edges = new Set([0]);
    for (const w of this.#windows) edges.add(w.from).add(w.to % 1440);
    for (const b of this.#blackouts) if (b.range !== null) edges.add(b.range.from).add(b.range.to % 1440);
    this.#edges = [...edges].sort((a, b) => a - b);
  }

  /** local: the instant `ms` on the calendar's clock. */
  local(ms: number): Local {
    const p: Record<string, string> = {};
    for (const part of this.#fmt.formatToParts(ms)) p[part.type] = part.value;
    return {
      date: `${p.year}-${p.month}-${p.day}`,
      dow: WEEKDAY[p.weekday!]!,
      monthDay: Number(p.day),
      minute: Number(p.hour) * 60 + Number(p.minute),
    };
  }

  /** instant: the instant of local wall time `minute` (up to 1440) on `date`; in a gap of daylight saving, the instant after it. */
  instant(date: string, minute: number): number {
    const wall = Date.parse(`${date}T00:00:00Z`) + minute * 60_000;
    const offset = (t: number) => {
      const l = this.local(t);
      return Date.parse(`${l.date}T00:00:00Z`) + l.minute * 60_000 - (t - (((t % 60_000) + 60_000) % 60_000));
    };
    const first = wall - offset(wall);
    return wall - offset(first);
  }

  stateAt(ms: number): CalendarState {
    const l = this.local(ms);
    const inWindow = this.#windows.length === 0 || this.#windows.some((w) => inWindowAt(w, l));
    const b = this.#blackouts.find((x) => inBlackout(x, l));
    return { inWindow, blackout: b?.name ?? null };
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
    const start = this.local(ms).date;
    for (let day = 0; day <= horizonDays; day++) {
      const date = new Date(Date.parse(`${start}T00:00:00Z`) + day * DAY_MS).toISOString().slice(0, 10);
      for (const m of this.#edges) {
        const t = this.instant(date, m);
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

  /** stretches: the state's stretches from `from` to `to` (each the instant it begins and its state), at most `max`. */
  stretches(from: number, to: number, max = 500): { at: number; state: CalendarState }[] {
    const out = [{ at: from, state: this.stateAt(from) }];
    let t = this.nextChange(from, Math.ceil((to - from) / DAY_MS) + 1);
    while (t !== null && t < to && out.length < max) {
      out.push({ at: t, state: this.stateAt(t) });
      t = this.nextChange(t, Math.ceil((to - t) / DAY_MS) + 1);
    }
    return out;
  }
}

/** rangeOf: a recurring blackout's time of day in minutes, or null for a run of dates. */
function rangeOf(b: Blackout): { from: number; to: number } | null {
  if (b.days === undefined && b.monthDays === undefined) return null;
  return { from: minutesOf(b.from ?? '00:00'), to: minutesOf(b.to ?? '24:00') };
}

function inWindowAt(w: { days: Set<number>; from: number; to: number }, l: Local): boolean {
  if (w.from < w.to) return w.days.has(l.dow) && l.minute >= w.from && l.minute < w.to;
  // crosses midnight: it belongs to the day it opens
  return (w.days.has(l.dow) && l.minute >= w.from) || (w.days.has((l.dow + 6) % 7) && l.minute < w.to);
}

function inBlackout(b: Blackout & { range: { from: number; to: number } | null; dows: Set<number> | undefined }, l: Local): boolean {
  if (b.range === null) return l.date >= b.from! && l.date <= b.to!;
  const on = b.dows !== undefined ? b.dows.has(l.dow) : b.monthDays!.includes(l.monthDay);
  return on && l.minute >= b.range.from && l.minute < b.range.to;
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

/** calendarNowText: what the calendar says now, in words. */
export function calendarNowText(c: CalendarNow): string {
  const until = c.until === null ? '' : ` until ${c.until}`;
  if (c.blackout !== null) return `closed: inside the blackout ${c.blackout}${until} (only a forced approval goes through)`;
  return c.inWindow ? `open${until}` : `open, but outside the windows${until} (rules with within: windows wait)`;
}

/** memberCalendar: what a fleet member's record says of its calendar: a digest of it (members of one group should share one), and what it says now. */
export function memberCalendar(cal: Calendar, now: () => number): () => CalendarNow & { digest: string } {
  // a zone's old and new names (Asia/Calcutta, Asia/Kolkata) are one calendar
  const config = { ...cal.config, timeZone: zoneId(cal.config.timeZone) ?? cal.config.timeZone };
  const digest = createHash('sha256').update(JSON.stringify(config)).digest('hex').slice(0, 12);
  // the state holds until `until` by its definition: walked out again only then (a member writes its record at every read)
  let said: { readonly at: CalendarNow & { digest: string }; readonly from: number; readonly until: number } | null = null;
  return () => {
    const t = now();
    if (said === null || t >= said.until || t < said.from) {
      const at = { digest, ...calendarNow(cal, t) };
      said = { at, from: t, until: at.until === null ? t + 3_600_000 : Date.parse(at.until) };
    }
    return said.at;
  };
}
