/**
 * se-bridge calendar: what the configured calendar says now, and its next windows and blackouts
 * (the stretches of the coming days, each with its start and end in UTC and in the calendar's
 * time zone). `--days N` (default 14, at most 400), `--json` for scripts. Reads only the file.
 */
import { Calendar, calendarNow, calendarNowText } from '../calendar/calendar.ts';
import { CONFIG_OPTIONS, EXIT, loadOrReport, needs, parse, table } from './common.ts';

export async function main(argv: string[]): Promise<number> {
  const { values } = parse(argv, { ...CONFIG_OPTIONS, json: { type: 'boolean' }, days: { type: 'string' } });
  const days = values.days === undefined ? 14 : Number(values.days);
  if (!Number.isInteger(days) || days < 1 || days > 400) {
    process.stderr.write('se-bridge calendar: --days must be a whole number from 1 to 400\n');
    return EXIT.usage;
  }
  const loaded = await loadOrReport(values, needs.sections('calendar'));
  if (loaded === null) return EXIT.usage;
  const config = loaded.config.calendar;
  if (config === undefined) {
    process.stderr.write('se-bridge calendar: no calendar is configured: early approval follows the rules alone, at any time\n');
    return EXIT.usage;
  }
  const cal = new Calendar(config);
  const now = Date.now();
  const local = (t: number) => {
    const l = cal.local(t);
    return `${l.date} ${String(Math.floor(l.minute / 60)).padStart(2, '0')}:${String(l.minute % 60).padStart(2, '0')}`;
  };
  const label = (s: { inWindow: boolean; blackout: string | null }) =>
    s.blackout !== null ? `blackout ${s.blackout}` : s.inWindow ? (config.windows.length > 0 ? 'window' : 'open') : 'outside the windows';
  // a blackout across a window's edges is one stretch to read
  const stretches = cal
    .stretches(now, now + days * 86_400_000)
    .filter((s, i, all) => i === 0 || label(s.state) !== label(all[i - 1]!.state));
  const rows = stretches.map((s, i) => {
    const end = stretches[i + 1]?.at ?? null;
    const state = label(s.state);
    return {
      from: new Date(s.at).toISOString(),
      to: end === null ? null : new Date(end).toISOString(),
      localFrom: local(s.at),
      localTo: end === null ? null : local(end),
      state,
    };
  });
  const state = calendarNow(cal, now);
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ now: state, stretches: rows }, null, 2)}\n`);
    return EXIT.ok;
  }
  process.stdout.write(`Calendar (${config.timeZone}): early approval ${calendarNowText(state)}\n\n`);
  process.stdout.write(
    `${table(
      [`FROM (${config.timeZone})`, `TO (${config.timeZone})`, 'STATE', 'FROM (UTC)'],
      rows.map((r) => [r.localFrom, r.localTo ?? `beyond ${days} days`, r.state, r.from]),
    )}\n`,
  );
  return EXIT.ok;
}
