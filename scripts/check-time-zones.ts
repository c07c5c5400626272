/**
 * Checks the calendar's clock (src/calendar/clock.ts) on every day the clocks change in a year,
 * in every time zone the platform lists: each wall time every 15 minutes of the days around the
 * change must fall on the first instant at which the zone's clock shows it or a later time, found
 * here by reading the UTC offset Intl names at every minute of those days. Outside `npm test`
 * (about half a minute on two cores); worth running when Node.js, and so its IANA data, changes.
 * Prints the counts; exits 1 on a mismatch.
 *
 *   node scripts/check-time-zones.ts [YEAR]
 */
import { ZoneClock } from '../src/calendar/clock.ts';

const MIN = 60_000;
const DAY = 86_400_000;
const year = Number(process.argv[2] ?? new Date().getUTCFullYear());
if (!Number.isInteger(year) || year < 1970 || year > 9999) {
  process.stderr.write('usage: node scripts/check-time-zones.ts [YEAR]\n');
  process.exit(2);
}

/** offsetOf: the zone's UTC offset at `t` (ms), as Intl names it ("GMT+05:30"). */
function offsetOf(timeZone: string): (t: number) => number {
  const fmt = new Intl.DateTimeFormat('en-GB', { timeZone, timeZoneName: 'longOffset' });
  return (t) => {
    const name = fmt.formatToParts(t).find((p) => p.type === 'timeZoneName')!.value;
    const m = /^GMT(?:([+-])(\d{2}):(\d{2}))?$/.exec(name)!;
    return m[1] === undefined ? 0 : (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) * MIN;
  };
}

let changes = 0;
let checked = 0;
const wrong: string[] = [];
for (const timeZone of Intl.supportedValuesOf('timeZone')) {
  const offset = offsetOf(timeZone);
  const clock = new ZoneClock(timeZone);
  const first = Date.UTC(year, 0, 1) / DAY;
  for (let day = first; day < Date.UTC(year + 1, 0, 1) / DAY; day++) {
    if (offset(day * DAY) === offset((day + 1) * DAY)) continue;
    changes++;
    // the wall clock at every minute from two days before to two days after
    const from = (day - 2) * DAY;
    const walls: number[] = [];
    for (let t = from; t < (day + 3) * DAY; t += MIN) walls.push(t + offset(t));
    for (let d = day - 1; d <= day + 1; d++) {
      for (let minute = 0; minute < 1440; minute += 15) {
        const i = walls.findIndex((w) => w >= d * DAY + minute * MIN);
        if (i <= 0) continue;
        checked++;
        const got = clock.instant(d, minute);
        if (got !== from + i * MIN)
          wrong.push(
            `${timeZone} ${new Date(d * DAY + minute * MIN).toISOString().slice(0, 16)}: ${new Date(got).toISOString()}, not ${new Date(from + i * MIN).toISOString()}`,
          );
      }
    }
  }
}
process.stdout.write(
  `${year}: ${changes} changes of the clocks in ${Intl.supportedValuesOf('timeZone').length} zones, ${checked} wall times, ${wrong.length} wrong\n`,
);
for (const w of wrong.slice(0, 20)) process.stdout.write(`  ${w}\n`);
process.exit(wrong.length === 0 ? 0 : 1);
