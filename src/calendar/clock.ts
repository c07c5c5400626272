/**
 * ZoneClock: the wall clock of one IANA time zone, read from the platform's IANA data
 * (Intl.DateTimeFormat), never from offsets computed by hand. `instant(day, minute)` is the
 * first instant at which the clock shows that wall time or a later one: a time the clocks skip
 * (the hour daylight saving springs over) falls on the instant they jump past it, and a time
 * they show twice (the hour they go back) on the first time they show it. Each day is read once:
 * on a day without a change of offset (all but two a year), every wall time is the day's
 * midnight plus its minutes; a day with a change is read exactly, wall time by wall time.
 */

const MIN = 60_000;
const DAY = 86_400_000;
/** How many days and exact wall times are remembered before the memory starts again. */
const REMEMBERED = 4096;

/** An instant as the calendar's time zone reads it. */
export interface Local {
  /** YYYY-MM-DD */
  readonly date: string;
  /** Minutes since local midnight. */
  readonly minute: number;
  /** The UTC offset in force, in minutes (+120 in Berlin's summer, -300 in New York's winter). */
  readonly offset: number;
}

/** dayNumber: a date (YYYY-MM-DD) as days since 1970-01-01, the calendar's days are counted in. */
export const dayNumber = (date: string): number => Date.parse(`${date}T00:00:00Z`) / DAY;

/** dowOf: the day of the week (0 = Sunday) of a day number (1970-01-01 was a Thursday). */
export const dowOf = (day: number): number => (((day + 4) % 7) + 7) % 7;

/** monthDayOf: the day of the month of a day number. */
export const monthDayOf = (day: number): number => new Date(day * DAY).getUTCDate();

const floorMinute = (ms: number) => ms - (((ms % MIN) + MIN) % MIN);

export class ZoneClock {
  readonly #fmt: Intl.DateTimeFormat;
  /** Per day: its UTC offset when one holds the whole day (ms), or null for a day the clocks change. */
  readonly #days = new Map<number, number | null>();
  /** Per minute of a day the clocks change (day * 1440 + minute): its instant. */
  readonly #exact = new Map<number, number>();

  constructor(timeZone: string) {
    this.#fmt = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      ...{ year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' },
    });
  }

  /** local: the instant `ms` on this clock. */
  local(ms: number): Local {
    const p: Record<string, string> = {};
    for (const part of this.#fmt.formatToParts(ms)) p[part.type] = part.value;
    // as Date.parse reads it: four digits, six with a sign past 9999
    const year = Number(p.year);
    const date = `${year > 9999 ? `+${String(year).padStart(6, '0')}` : String(year).padStart(4, '0')}-${p.month}-${p.day}`;
    const minute = Number(p.hour) * 60 + Number(p.minute);
    return {
      date,
      minute,
      offset: (Date.parse(`${date}T00:00:00Z`) + minute * MIN - floorMinute(ms)) / MIN,
    };
  }

  /** instant: the first instant at which this clock shows `minute` (0 to 1440) of `day` (a day number), or a later time. */
  instant(day: number, minute: number): number {
    if (minute >= 1440) return this.instant(day + Math.floor(minute / 1440), minute % 1440);
    const offset = this.#dayOffset(day);
    if (offset !== null) return day * DAY + minute * MIN - offset;
    const key = day * 1440 + minute;
    let t = this.#exact.get(key);
    if (t === undefined) {
      t = this.#exactInstant(day, minute);
      remember(this.#exact, key, t);
    }
    return t;
  }

  /** offsetAt: the UTC offset in force at `ms`, in ms. */
  #offsetAt(ms: number): number {
    return this.local(ms).offset * MIN;
  }

  /** dayOffset: the day's one UTC offset (ms), or null when the clocks change that day (or at its midnight). */
  #dayOffset(day: number): number | null {
    let offset = this.#days.get(day);
    if (offset === undefined) {
      const start = this.#exactInstant(day, 0);
      const end = this.#exactInstant(day + 1, 0);
      const o = day * DAY - start;
      offset = end - start === DAY && this.#offsetAt(start) === o && this.#offsetAt(end - MIN) === o ? o : null;
      remember(this.#days, day, offset);
    }
    return offset;
  }

  /**
   * exactInstant: `instant` read from the offsets in force a day before and a day after the wall
   * time. A wall time with one of them is the instant; with both (the clocks went back), the
   * earlier; with neither (the clocks jumped past it), the instant of the jump, found by halving.
   */
  #exactInstant(day: number, minute: number): number {
    const wall = day * DAY + minute * MIN;
    const before = this.#offsetAt(wall - DAY);
    const after = this.#offsetAt(wall + DAY);
    const shows = (t: number) => t + this.#offsetAt(t);
    const found = [wall - before, wall - after].filter((t) => shows(t) === wall);
    if (found.length > 0) return Math.min(...found);
    // skipped: the clock shows less than `wall` at lo, more at hi
    let lo = wall - Math.max(before, after);
    let hi = wall - Math.min(before, after);
    while (hi - lo > MIN) {
      const mid = lo + Math.floor((hi - lo) / MIN / 2) * MIN;
      if (shows(mid) >= wall) hi = mid;
      else lo = mid;
    }
    return hi;
  }
}

function remember<V>(map: Map<number, V>, key: number, value: V): void {
  if (map.size >= REMEMBERED) map.clear();
  map.set(key, value);
}
