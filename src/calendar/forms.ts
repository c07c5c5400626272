/**
 * The forms the calendar's times are written in, and what is wrong with one that is not a time
 * or a day that exists: "HH:MM" (with "24:00", the end of a day, as an end), dates YYYY-MM-DD,
 * and times of the week ("fri 22:00"); and the three forms of a blackout, read from what its
 * `from` and `to` look like.
 */

export const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;

/** minutesOf: "HH:MM" as minutes since midnight. */
export const minutesOf = (hhmm: string): number => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/** clockProblem: why `v` is not a wall time "HH:MM" (up to "24:00", the end of the day, when `end`), or null. */
export function clockProblem(v: string, end: boolean): string | null {
  const m = /^(\d{2}):(\d{2})$/.exec(v);
  if (m === null) return `must be "HH:MM"${end ? ' (up to "24:00")' : ''}`;
  const [h, min] = [Number(m[1]), Number(m[2])];
  if (h === 24 && min === 0) return end ? null : '24:00 is the end of a day, not a start: say "00:00"';
  if (h > 23) return `${v} does not exist: the hours go from 00 to 23${end ? ' ("24:00" is the end of the day)' : ''}`;
  if (min > 59) return `${v} does not exist: the minutes go from 00 to 59`;
  return null;
}

/** dateProblem: why `d` is not a day that exists, written YYYY-MM-DD, or null. */
export function dateProblem(d: string): string | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(d);
  if (m === null) return 'must be a date, YYYY-MM-DD';
  const [y, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12) return `${d} does not exist: the months go from 01 to 12`;
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  const last = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
  if (day < 1 || day > last) return `${d} does not exist: ${MONTHS[month - 1]} ${y} has ${last} days`;
  return null;
}

/** A time of the week: its day (0 = Sunday) and its minute (up to 1440). */
interface WeekTime {
  readonly dow: number;
  readonly minute: number;
}

const WEEK_TIME = /^([A-Za-z]{3}) (.*)$/;

/** weekTimeOf: "fri 22:00" as a day and a minute, or why it is not one. */
function weekTimeOf(v: string, end: boolean): WeekTime | string {
  const m = WEEK_TIME.exec(v);
  const dow = DAYS.indexOf((m?.[1] ?? '') as (typeof DAYS)[number]);
  if (m === null || dow < 0) return `must be a day of the week and a time, as "fri 22:00" (the days: ${DAYS.join(', ')})`;
  return clockProblem(m[2]!, end) ?? { dow, minute: minutesOf(m[2]!) };
}

/** A blackout as the calendar reads it: a run of dates, a time of day, or a stretch of the week. */
export type BlackoutForm =
  | { readonly kind: 'dates'; readonly first: string; readonly last: string }
  | { readonly kind: 'times'; readonly from: number; readonly to: number }
  | { readonly kind: 'week'; readonly dow: number; readonly from: number; readonly days: number; readonly to: number };

/** The keys of a blackout that say when. */
interface When {
  readonly days?: readonly string[] | undefined;
  readonly monthDays?: readonly number[] | undefined;
  readonly from?: string | undefined;
  readonly to?: string | undefined;
}

const kindOf = (v: string | undefined): BlackoutForm['kind'] | null =>
  v === undefined ? null : /^\d{4}-/.test(v) ? 'dates' : WEEK_TIME.test(v) ? 'week' : /^\d{1,2}:/.test(v) ? 'times' : null;

const FORMS =
  'two dates (YYYY-MM-DD, both ends included), two times ("23:00" to "01:00": every day, or on days or monthDays) or two times of the week ("fri 22:00" to "mon 06:00")';
const FORM: Record<BlackoutForm['kind'], string> = {
  dates: 'a date, YYYY-MM-DD',
  times: 'a time, HH:MM',
  week: 'a day of the week and a time, as "mon 06:00"',
};

/** blackoutProblems: what is wrong with a blackout's `from` and `to`, each with its key (null: the blackout). */
export function blackoutProblems(b: When): [string | null, string][] {
  const out: [string | null, string][] = [];
  const recurring = b.days !== undefined || b.monthDays !== undefined;
  if (b.days !== undefined && b.monthDays !== undefined) out.push(['monthDays', 'either days or monthDays, not both']);
  const kind = recurring ? 'times' : (kindOf(b.from) ?? kindOf(b.to));
  const from = b.from ?? (recurring ? '00:00' : undefined);
  const to = b.to ?? (recurring ? '24:00' : undefined);
  if (kind === null)
    return from === undefined && to === undefined
      ? [...out, [null, `says no time: give from and to, ${FORMS}`]]
      : [...out, ['from', `must be ${FORM.dates}, ${FORM.times}, or ${FORM.week}`]];
  const check = (key: 'from' | 'to', v: string | undefined, problem: (v: string) => string | null): boolean => {
    const other = key === 'from' ? 'to' : 'from';
    const form = recurring ? `${FORM.times}, with days or monthDays` : `${FORM[kind]}, as ${other} is`;
    const p = v === undefined ? `is missing: ${FORM[kind]}` : kindOf(v) !== kind ? `must be ${form}` : problem(v);
    if (p !== null) out.push([key, p]);
    return p === null;
  };
  if (kind === 'dates') {
    if (check('from', from, dateProblem) && check('to', to, dateProblem) && from! > to!) out.push(['from', `is after to (${to})`]);
  } else if (kind === 'times') {
    if (
      check('from', from, (v) => clockProblem(v, false)) &&
      check('to', to, (v) => clockProblem(v, true)) &&
      minutesOf(from!) === minutesOf(to!)
    )
      out.push(['to', 'is the same time as from: say "00:00" to "24:00" for a whole day']);
  } else {
    const time = (end: boolean) => (v: string) => {
      const w = weekTimeOf(v, end);
      return typeof w === 'string' ? w : null;
    };
    if (check('from', from, time(false)) && check('to', to, time(true)) && sameTime(from!, to!))
      out.push(['to', 'is the same time as from: a blackout needs a stretch of time']);
  }
  return out;
}

/** weekForm: a stretch of the week, from a day's time to the next time `to` comes after it (at most a week later). */
function weekForm(from: string, to: string): Extract<BlackoutForm, { kind: 'week' }> {
  const f = weekTimeOf(from, false) as WeekTime;
  const t = weekTimeOf(to, true) as WeekTime;
  const end = t.minute === 1440 ? { dow: (t.dow + 1) % 7, minute: 0 } : t;
  let days = (end.dow - f.dow + 7) % 7;
  if (days === 0 && end.minute < f.minute) days = 7;
  return { kind: 'week', dow: f.dow, from: f.minute, days, to: end.minute };
}

const sameTime = (from: string, to: string) => {
  const w = weekForm(from, to);
  return w.days === 0 && w.from === w.to;
};

/** blackoutForm: a valid blackout as the calendar reads it. */
export function blackoutForm(b: When): BlackoutForm {
  const kind = b.days !== undefined || b.monthDays !== undefined ? 'times' : (kindOf(b.from) ?? kindOf(b.to));
  if (kind === 'dates') return { kind, first: b.from!, last: b.to! };
  if (kind === 'week') return weekForm(b.from!, b.to!);
  return { kind: 'times', from: minutesOf(b.from ?? '00:00'), to: minutesOf(b.to ?? '24:00') };
}
