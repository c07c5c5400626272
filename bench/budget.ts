/**
 * Benchmark phase F: fleet budgets. (1) Bridges in one group, every one ready at once with
 * approveAfterHooks: the time from a slot given back to the next held member's StartRequests at
 * its IMDS simulator, with 10 and 50 bridges (in this process), over both stores (Azurite for
 * Blob Storage, the Kubernetes API stand-in for Leases). (2) The resident memory of a daemon with
 * and without `fleet` configured. `node bench/budget.ts` runs the phase alone.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pino } from 'pino';
import { ImdsSimulator } from '../src/simulator/server.ts';
import { FleetStores, STORE_KINDS, type StoreKind } from '../testkit/fleet-stores.ts';
import { startBridge, type Harness } from '../testkit/harness.ts';
import { bridgeConfig, dir, dist, log, quick, rssMiB, sleep, spawnProcess, stop } from './common.ts';
import { PACKAGE_BIN } from './processes.ts';

const RELEASED = 'fleet budget: slot given back';

async function group(stores: FleetStores, kind: StoreKind, members: number, maxUnavailable: number) {
  const lines: Record<string, unknown>[][] = [];
  const hs: Harness[] = [];
  for (let i = 0; i < members; i++) {
    const mine: Record<string, unknown>[] = [];
    lines.push(mine);
    hs.push(
      await startBridge({
        sim: { vmName: `b${i}`, peers: [], tickMs: 20 },
        logger: () => pino({ level: 'info' }, { write: (s: string) => void mine.push(JSON.parse(s) as Record<string, unknown>) }),
        sinks: (d) => [
          { name: 'hook', type: 'exec', command: ['/bin/true'], prepare: true, filter: { types: ['scheduled'] } },
          { name: 'audit', type: 'file', path: join(d, 'e.jsonl') },
        ],
        config: {
          imds: { pollIntervalMs: 500 },
          approval: { rules: [{ match: {}, action: 'approveAfterHooks' }] },
          fleet: { group: `bench-${kind}-${members}`, maxUnavailable, store: stores.config(kind), retryMs: 200, heartbeatSeconds: 30 },
        },
      }),
    );
  }
  try {
    for (const h of hs) h.sim.addEvent({ EventType: 'Reboot', noticeMs: 3_600_000, startedMs: 1000, DurationInSeconds: 5 });
    const deadline = Date.now() + 600_000;
    const released = () => lines.map((l) => l.find((x) => x.msg === RELEASED)?.time as number | undefined);
    while (released().some((t) => t === undefined) && Date.now() < deadline) await sleep(200);
    const starts = hs
      .map((h) => h.sim.startRequests[0]?.at)
      .filter((t): t is number => t !== undefined)
      .sort((a, b) => a - b);
    const gaps: number[] = [];
    for (const r of released().filter((t): t is number => t !== undefined)) {
      const next = starts.find((s) => s >= r);
      if (next !== undefined) gaps.push(next - r);
    }
    const intervals = hs.map((h, i) => ({ from: h.sim.startRequests[0]?.at ?? 0, to: released()[i] ?? Infinity }));
    const most = Math.max(...intervals.map((x) => intervals.filter((y) => y.from <= x.from && y.to > x.from).length));
    return { kind, members, maxUnavailable, approved: starts.length, mostAtOnce: most, releaseToNextStart: dist(gaps) };
  } finally {
    for (const h of hs) await h.stop();
  }
}

/**
 * settling: four bridges in a group of one slot, each with a health check (an HTTP endpoint on
 * 127.0.0.1, always healthy) every `interval` s and `settle` s of settle time; every member's
 * Reboot ready at once. Measured: from the maintenance seen completed (its `completed` CloudEvent)
 * to the slot given back, which should be the settle time plus at most one interval, and from the
 * slot given back to the next member's StartRequests.
 */
async function settling(stores: FleetStores, interval = 1, settle = 3) {
  const health = createServer((_req, res) => res.writeHead(200).end());
  await new Promise<void>((resolve) => health.listen(0, '127.0.0.1', resolve));
  const hs: Harness[] = [];
  try {
    const url = `http://127.0.0.1:${(health.address() as AddressInfo).port}/healthz`;
    for (let i = 0; i < 4; i++)
      hs.push(
        await startBridge({
          sim: { vmName: `s${i}`, peers: [], tickMs: 20 },
          sinks: (d) => [{ name: 'audit', type: 'file', path: join(d, 'events.jsonl') }],
          config: {
            imds: { pollIntervalMs: 500 },
            approval: { rules: [{ match: {}, action: 'approve' }] },
            fleet: {
              group: 'bench-settle',
              maxUnavailable: 1,
              store: stores.config('blob'),
              retryMs: 200,
              health: { http: { url }, intervalSeconds: interval, settleSeconds: settle },
            },
          },
        }),
      );
    for (const h of hs) h.sim.addEvent({ EventType: 'Reboot', noticeMs: 3_600_000, startedMs: 1000, DurationInSeconds: 5 });
    const releasedAt = (h: Harness) => h.lines.find((x) => x.msg === RELEASED)?.time as number | undefined;
    for (const deadline = Date.now() + 180_000; hs.some((h) => releasedAt(h) === undefined) && Date.now() < deadline;) await sleep(200);
    const completedToRelease = hs.flatMap((h) => {
      const done = h.events().find((e) => e.type === 'azure.scheduledevent.completed');
      const r = releasedAt(h);
      return done === undefined || r === undefined ? [] : [r - Date.parse(done.time)];
    });
    const starts = hs.map((h) => h.sim.startRequests[0]?.at).filter((t): t is number => t !== undefined);
    const toNext = hs.flatMap((h) => {
      const r = releasedAt(h);
      const next = r === undefined ? undefined : starts.filter((t) => t >= r).sort((a, b) => a - b)[0];
      return r === undefined || next === undefined ? [] : [next - r];
    });
    return {
      intervalSeconds: interval,
      settleSeconds: settle,
      approved: starts.length,
      completedToRelease: dist(completedToRelease),
      releaseToNextStart: dist(toNext),
    };
  } finally {
    for (const h of hs) await h.stop();
    await new Promise((resolve) => health.close(resolve));
  }
}

/** memory: the resident set of the package's daemon after `seconds`, without a fleet and with one of each store. */
async function memory(stores: FleetStores, seconds: number) {
  const sim = new ImdsSimulator({ vmName: 'mem-vm', tickMs: 50 });
  await sim.listen(0);
  const out: Record<string, number> = {};
  try {
    for (const [name, fleet] of [
      ['without fleet', undefined],
      ['with fleet (blob store)', { group: 'mem', maxUnavailable: 1, store: stores.config('blob') }],
      ['with fleet (kubernetes store)', { group: 'mem', maxUnavailable: 1, store: stores.config('kubernetes') }],
    ] as const) {
      const config = bridgeConfig(`mem-${Object.keys(out).length}`, {
        imds: { endpoint: sim.url },
        sinks: [{ name: 'audit', type: 'file', path: join(dir, `mem-${Object.keys(out).length}.jsonl`) }],
        ...(fleet === undefined ? {} : { fleet }),
      });
      const child = spawnProcess([PACKAGE_BIN, 'run', '--config', config]);
      await sleep(seconds * 1000);
      out[name] = Math.round(rssMiB(child.pid!) * 10) / 10;
      await stop(child);
    }
  } finally {
    await sim.close();
  }
  return out;
}

export async function phaseBudget() {
  const stores = await FleetStores.start();
  try {
    const runs = [];
    for (const kind of STORE_KINDS) {
      log(`F: ${kind}, 10 bridges, 2 slots`);
      runs.push(await group(stores, kind, 10, 2));
      log(`F: ${kind}, 50 bridges, 5 slots`);
      runs.push(await group(stores, kind, quick ? 20 : 50, 5));
    }
    log('F: a health check and settle time (4 bridges, one slot, settle 3 s, checks every 1 s)');
    const settle = await settling(stores);
    log('F: memory with and without a fleet');
    const rss = await memory(stores, quick ? 8 : 20);
    return { runs, settle, rssMiB: rss };
  } finally {
    await stores.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await phaseBudget();
  for (const x of r.runs)
    process.stdout.write(
      `${x.kind}: ${x.members} bridges, ${x.maxUnavailable} slots: approved ${x.approved}, at most ${x.mostAtOnce} at once; slot given back to the next StartRequests p50 ${Math.round(x.releaseToNextStart.p50)} ms, p99 ${Math.round(x.releaseToNextStart.p99)} ms (n=${x.releaseToNextStart.n})\n`,
    );
  const st = r.settle;
  process.stdout.write(
    `health, settle ${st.settleSeconds} s, checks every ${st.intervalSeconds} s: approved ${st.approved}; completed to slot given back p50 ${Math.round(st.completedToRelease.p50)} ms, max ${Math.round(st.completedToRelease.max)} ms; slot given back to the next StartRequests p50 ${Math.round(st.releaseToNextStart.p50)} ms, max ${Math.round(st.releaseToNextStart.max)} ms\n`,
  );
  process.stdout.write(`RSS: ${JSON.stringify(r.rssMiB)}\n`);
}
