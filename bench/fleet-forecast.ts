/**
 * What the collision forecast costs one read of a group, as its records grow: every member with a
 * maintenance ahead, and the relay for every group, compute it at each read, over records any
 * member may write. Each record lists as many events as a record may (50), each a window within the
 * month ahead that the forecast looks at, a second apart, each lasting a year (the longest a
 * record may say): every window overlaps every later one. Printed per number of records: the
 * windows, the median time of `collisionOf` over them, and of `groupOf` (the group as the relay and
 * `fleet status` read it: every record parsed, the windows, the collision), of five runs each.
 * `node bench/fleet-forecast.ts [N ...]` (default 10 20 40 80 320; 320 records are 16,000 windows).
 */
import { pathToFileURL } from 'node:url';
import { groupOf } from '../src/fleet/budget/group.ts';
import { membersOf } from '../src/fleet/budget/parse.ts';
import { MAX_MEMBER_EVENTS } from '../src/fleet/budget/schemas.ts';
import { collisionOf, windowsOf } from '../src/fleet/budget/windows.ts';
import type { Versioned } from '../src/fleet/budget/stores/port.ts';
import { log, sizesOf } from './common.ts';

const RUNS = 5;

/** records: `n` member records, each with MAX_MEMBER_EVENTS Scheduled events a second apart, within the month ahead. */
function records(n: number, now: number): Versioned[] {
  return Array.from({ length: n }, (_, k) => ({
    name: `member-vm-${k}`,
    version: '1',
    value: {
      ...{ member: `vm-${k}`, vm: `vm-${k}`, resourceId: null, heartbeatAt: new Date(now).toISOString(), heartbeatSeconds: 30, slot: null },
      events: Array.from({ length: MAX_MEMBER_EVENTS }, (_, i) => ({
        ...{
          eventId: `${String(k).padStart(8, '0')}-0000-4000-8000-${String(i).padStart(12, '0')}`,
          eventType: 'Reboot',
          status: 'Scheduled',
        },
        ...{
          notBefore: new Date(now + 3_600_000 + (k * MAX_MEMBER_EVENTS + i) * 1000).toISOString(),
          durationInSeconds: 366 * 86400,
          approved: false,
        },
      })),
    },
  }));
}

/** median: the median time in milliseconds of RUNS runs of `work`. */
function median(work: () => unknown): number {
  const times = Array.from({ length: RUNS }, () => {
    const start = performance.now();
    work();
    return performance.now() - start;
  }).sort((a, b) => a - b);
  return Math.round(times[Math.floor(RUNS / 2)]! * 10) / 10;
}

export function phaseFleetForecast(sizes: readonly number[] = [10, 20, 40, 80, 320]) {
  const now = Date.now();
  return sizes.map((n) => {
    log(`forecast: ${n} records`);
    const list = records(n, now);
    const windows = windowsOf(membersOf(list), now);
    return {
      records: n,
      windows: windows.length,
      collisionOfMs: median(() => collisionOf(windows, 1)),
      groupOfMs: median(() => groupOf({ group: 'g', maxUnavailable: 1, store: 'bench' }, list, [], now)),
    };
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.stdout.write(`${JSON.stringify(phaseFleetForecast(sizesOf(process.argv.slice(2))), null, 2)}\n`);
}
