/**
 * se-bridge calendar: what the configured calendar says now, and its next windows and blackouts
 * (the stretches of the coming days, each with its start and its end in the calendar's time zone,
 * with the UTC offset in force, and in UTC). `--from` starts elsewhere than now: a date (its
 * midnight in the calendar's time zone) or an instant with its offset. `--days N` (default 14, at
 * most 400), `--json` for scripts. Reads only the file.
 */
import { Calendar, calendarNow, calendarNowText } from '../calendar/calendar.ts';
import { dateProblem } from '../calendar/forms.ts';
import { calendarOf } from '../config/cross.ts';
import { CONFIG_OPTIONS, EXIT, loadOrReport, needs, parse, table } from './common.ts';

const DAY_MS = 86_400_000;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const INSTANT = /^(\d{4}-\d{2}-\d{2})T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i;

export async function main(argv: string[]): Promise<number> {
  const options = { ...CONFIG_OPTIONS, json: { type: 'boolean' }, days: { type: 'string' }, from: { type: 'string' } } as const;
  const { values } = parse(argv, options);
  const days = values.days === undefined ? 14 : Number(values.days);
  if (!Number.isInteger(days) || days < 1 || days > 400) return usage('--days must be a whole number from 1 to 400');
  const from = values.from;
  const fromProblem = from === undefined ? null : DATE.test(from) ? dateProblem(from) : startProblem(from);
  if (fromProblem !== null) return usage(`--from ${fromProblem}`);
  const loaded = await loadOrReport(values, needs.sections('calendar'));
  if (loaded === null) return EXIT.usage;
  // at the top, or the group's under fleet
  const config = calendarOf(loaded.config);
  if (config === undefined) {
    process.stderr.write('se-bridge calendar: no calendar is configured: early approval follows the rules alone, at any time\n');
    return EXIT.usage;
  }
  const cal = new Calendar(config);
  // whole seconds, so that a time written in the zone is the very instant of its UTC twin
  const now = from === undefined ? Math.floor(Date.now() / 1000) * 1000 : DATE.test(from) ? cal.instant(from, 0) : Date.parse(from);
  const end = from !== undefined && DATE.test(from) ? cal.instant(from, days * 1440) : now + days * DAY_MS;
  const label = (s: { inWindow: boolean; blackout: string | null }) =>
    s.blackout !== null ? `blackout ${s.blackout}` : s.inWindow ? (config.windows.length > 0 ? 'window' : 'open') : 'outside the windows';
  // a blackout across a window's edges is one stretch to read
  const stretches = cal.stretches(now, end).filter((s, i, all) => i === 0 || label(s.state) !== label(all[i - 1]!.state));
  const rows = stretches.map((s, i) => {
    const to = stretches[i + 1]?.at ?? null;
    return {
      from: new Date(s.at).toISOString(),
      to: to === null ? null : new Date(to).toISOString(),
      localFrom: localIso(cal, s.at),
      localTo: to === null ? null : localIso(cal, to),
      state: label(s.state),
    };
  });
  const state = calendarNow(cal, now);
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ now: state, stretches: rows }, null, 2)}\n`);
    return EXIT.ok;
  }
  const at = from === undefined ? '' : ` from ${localText(rows[0]!.localFrom)}`;
  const beyond = `beyond ${days} days`;
  const when = (iso: string) => `${localText(localIso(cal, Date.parse(iso)))} (${utcText(iso)} UTC)`;
  process.stdout.write(`Calendar (${config.timeZone})${at}: early approval ${calendarNowText(state, when)}\n\n`);
  process.stdout.write(
    `${table(
      [`FROM (${config.timeZone})`, `TO (${config.timeZone})`, 'FROM (UTC)', 'TO (UTC)', 'STATE'],
      rows.map((r) => [
        localText(r.localFrom),
        r.localTo === null ? beyond : localText(r.localTo),
        utcText(r.from),
        r.to === null ? beyond : utcText(r.to),
        r.state,
      ]),
    )}\n`,
  );
  return EXIT.ok;
}

function usage(message: string): number {
  process.stderr.write(`se-bridge calendar: ${message}\n`);
  return EXIT.usage;
}

/** startProblem: why `--from` is neither a date nor an instant with its offset, or null. */
function startProblem(text: string): string | null {
  const m = INSTANT.exec(text);
  const problem = m === null ? null : dateProblem(m[1]!);
  if (problem !== null) return problem;
  if (m !== null && !Number.isNaN(Date.parse(text))) return null;
  return `must be a date (YYYY-MM-DD: its midnight in the calendar's time zone) or a time with its offset (2026-10-25T01:30:00Z, 2026-10-25T02:30:00+02:00), not "${text}"`;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** localIso: `t` in the calendar's time zone, RFC 3339 with the offset in force (2026-10-25T02:30:00+02:00). */
function localIso(cal: Calendar, t: number): string {
  const l = cal.local(t);
  const sign = l.offset < 0 ? '-' : '+';
  const offset = `${sign}${pad(Math.floor(Math.abs(l.offset) / 60))}:${pad(Math.abs(l.offset) % 60)}`;
  const seconds = Math.floor((((t % 60_000) + 60_000) % 60_000) / 1000);
  return `${l.date}T${pad(Math.floor(l.minute / 60))}:${pad(l.minute % 60)}:${pad(seconds)}${offset}`;
}

/** localText: a local RFC 3339 time as the table shows it (2026-10-25 02:30 +02:00). */
const localText = (iso: string) => {
  const [date, time] = iso.split('T') as [string, string];
  return `${date} ${time.slice(0, 5)} ${time.slice(8)}`;
};

/** utcText: an instant in UTC as the table shows it (2026-10-25 00:30). */
const utcText = (iso: string) => {
  const [date, time] = iso.split('T') as [string, string];
  return `${date} ${time.slice(0, 5)}`;
};
