/**
 * Benchmark phase F3: a fleet budget across bridges as processes. N daemons of the package, one
 * group with K slots, each with its own IMDS simulator (in this process) and every member's Reboot
 * appearing at once, NotBefore staggered by a second (so the queue's order is known: the last
 * member's first), approved by policy, each maintenance Started for 4 s; the store is Azurite
 * behind a proxy that counts requests and refused conditional writes, or with `--store
 * kubernetes` Leases on the Kubernetes API stand-in, counted from its own records of its requests
 * (bench/fleet-store.ts). Printed: the most members down at once (from StartRequests to the event's end, at the simulators), grants out of the
 * queue's order, the overhead per round (the wave's time less ⌈N / K⌉ rounds of the 4 s Azure
 * has each VM down; and from the wave's first StartRequests), the hand-off (from a slot given back to its next take, from the members'
 * log lines; and to the next StartRequests of any member), slot use (the share of K × the wave
 * the slots were held, from each take to its give-back), lost writes per hand-off (on Leases: 409
 * Conflict or AlreadyExists) and requests per member per minute to the store (on Leases, also by
 * the API server's verb, and each Lease's busiest second). `node bench/fleet-processes.ts [N] [K]
 * [--store kubernetes]` runs it alone (30 members, 3 slots, Blob Storage by default).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { delimiter, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { ImdsSimulator } from '../src/simulator/server.ts';
import type { StoreKind } from '../testkit/fleet-stores.ts';
import { bridgeConfig, dir, dist, log, q, sleep, stopEverything } from './common.ts';
import { busiestOf, startStore, storeOf } from './fleet-store.ts';
import { PACKAGE_BIN } from './processes.ts';

const STARTED_MS = 4000;
const seconds = (ms: number) => Math.round(ms / 100) / 10;
/** handOff: the p50, p95 and max of the times from a slot given back to the next StartRequests, in seconds. */
const handOff = (gaps: readonly number[]) => {
  const s = [...gaps].sort((a, b) => a - b);
  return { n: s.length, p50: seconds(q(s, 0.5)), p95: seconds(q(s, 0.95)), max: seconds(s.at(-1) ?? NaN) };
};
const RELEASED = 'fleet budget: slot given back';
const TAKEN = 'fleet budget: slot taken';

export async function phaseFleetProcesses(n = 30, k = 3, kind: StoreKind = 'blob') {
  const store = await startStore(kind);
  const sims: ImdsSimulator[] = [];
  const children: ChildProcess[] = [];
  const released: number[][] = [];
  // each slot's takes and gives back, from the members' log lines: { slot, at, taken }
  const slotLog: { slot: string; at: number; taken: boolean }[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const sim = new ImdsSimulator({ vmName: `p${String(i).padStart(2, '0')}`, peers: [], tickMs: 50 });
      await sim.listen(0);
      sims.push(sim);
      const config = bridgeConfig(`fleet-proc-${i}`, {
        imds: { endpoint: sim.url, pollIntervalMs: 1000 },
        log: { level: 'info' },
        sinks: [{ name: 'out', type: 'file', path: join(dir, `fleet-proc-${i}.jsonl`) }],
        approval: { rules: [{ match: {}, action: 'approve' }] },
        fleet: {
          group: 'processes',
          maxUnavailable: k,
          store: store.config('processes'),
          retryMs: 2000,
          heartbeatSeconds: 30,
        },
      });
      const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` };
      const child = spawn(PACKAGE_BIN, ['run', '--config', config], { stdio: ['ignore', 'pipe', 'inherit'], env });
      const mine: number[] = [];
      released.push(mine);
      createInterface({ input: child.stdout }).on('line', (line) => {
        const taken = line.includes(TAKEN);
        if (!taken && !line.includes(RELEASED)) return;
        if (!taken) mine.push(Date.now());
        const { slot } = JSON.parse(line) as { slot?: string };
        if (slot !== undefined) slotLog.push({ slot, at: Date.now(), taken });
      });
      children.push(child);
    }
    // every daemon reads its IMDS, and writes its member record, before the wave (a group at rest: a wave measured apart from the daemons' start)
    const ready = () => sims.every((s) => s.requests.length >= 3) && store.writes() >= n;
    for (const deadline = Date.now() + 180_000; !ready() && Date.now() < deadline;) await sleep(200);
    store.take();
    const t0 = Date.now();
    for (const [i, sim] of sims.entries())
      sim.addEvent({ EventType: 'Reboot', noticeMs: 3_600_000 + (n - i) * 1000, startedMs: STARTED_MS, DurationInSeconds: 5 });
    // the wave is over when every member has given its slot back
    for (const deadline = Date.now() + 900_000; released.some((r) => r.length === 0) && Date.now() < deadline;) await sleep(200);
    const took = Date.now() - t0;
    const cost = store.take();
    const starts = sims.map((s, i) => ({ i, at: s.startRequests[0]?.at ?? Number.POSITIVE_INFINITY }));
    const downs = starts.map((s) => ({ from: s.at, to: s.at + STARTED_MS }));
    const most = Math.max(...downs.map((x) => downs.filter((y) => y.from <= x.from && y.to > x.from).length));
    // the queue's order: the highest index first; out of order, a grant before that of a member whose NotBefore came earlier
    const sorted = starts.map((s) => s.at).sort((a, b) => a - b);
    const outOfOrder = starts.filter((s) => starts.some((o) => o.at > s.at + 1000 && o.i > s.i)).map((s) => sorted.indexOf(s.at) + 1);
    const gaps = released.flat().flatMap((r) => {
      const next = sorted.find((s) => s >= r);
      return next === undefined ? [] : [next - r];
    });
    // a hand-off: a slot given back to its next take
    const handOffGaps = slotLog.flatMap((r) => {
      const next = r.taken ? undefined : slotLog.find((t) => t.taken && t.slot === r.slot && t.at >= r.at);
      return next === undefined ? [] : [next.at - r.at];
    });
    const heldMs = slotLog.reduce((sum, t) => {
      const back = t.taken ? slotLog.find((r) => !r.taken && r.slot === t.slot && r.at >= t.at) : undefined;
      return sum + (back === undefined ? 0 : back.at - t.at);
    }, 0);
    const handOffs = Math.max(1, n - k);
    const rounds = Math.ceil(n / k);
    const perMinute = (count: number) => Math.round((count / n / (took / 60_000)) * 10) / 10;
    return {
      members: n,
      maxUnavailable: k,
      approved: starts.filter((s) => Number.isFinite(s.at)).length,
      mostDownAtOnce: most,
      servedOutOfOrder: outOfOrder.length,
      // the grants out of order, by their rank among the grants (the first ones: members that asked before the others had seen their events)
      outOfOrderRanks: outOfOrder.sort((a, b) => a - b),
      waveSeconds: seconds(took),
      idealSeconds: (rounds * STARTED_MS) / 1000,
      overheadPerRoundSeconds: seconds((took - rounds * STARTED_MS) / rounds),
      // the same from the wave's first StartRequests: the hand-offs alone, without the members' first reads and writes of the wave
      overheadPerRoundFromFirstStartSeconds: seconds((took - ((sorted[0] ?? t0) - t0) - rounds * STARTED_MS) / rounds),
      releaseToNextStart: dist(gaps),
      // a slot given back to its next take (the same slot), and to the next StartRequests of any member
      handOffSeconds: handOff(handOffGaps),
      releaseToNextStartSeconds: handOff(gaps),
      slotUsePercent: Math.round((heldMs / (k * took)) * 100),
      // where a round's time goes: a slot held per member (4 s of it Azure's), and the wave's first StartRequests
      heldPerMemberSeconds: seconds(heldMs / n),
      firstStartSeconds: seconds((sorted[0] ?? t0) - t0),
      // lost writes of the slots (the hand-offs) apart from the group's other records (the collision waves)
      lostWritesPerHandOff: Math.round(((cost.lostBy.slot ?? 0) / handOffs) * 100) / 100,
      lostWritesElsewhere: Object.fromEntries(Object.entries(cost.lostBy).filter(([kind]) => kind !== 'slot')),
      requestsPerMemberPerMinute: perMinute(Object.values(cost.counts).reduce((a, b) => a + b, 0)),
      requests: cost.counts,
      // what the API server bore: requests per member per minute by verb, and the busiest second of the busiest Leases
      ...(kind === 'kubernetes'
        ? {
            store: kind,
            requestsPerMemberPerMinuteByVerb: Object.fromEntries(Object.entries(cost.counts).map(([verb, c]) => [verb, perMinute(c)])),
            busiestSecond: busiestOf(cost.busiestSecond),
          }
        : {}),
    };
  } finally {
    await stopEverything(children, sims, [store]);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { store, rest } = storeOf(process.argv.slice(2));
  const [n, k] = [Number(rest[0] ?? 30), Number(rest[1] ?? 3)];
  log(`F3: ${n} bridges as processes, one group of ${k} slots${store === 'blob' ? '' : ', over Leases'}`);
  const result = await phaseFleetProcesses(n, k, store);
  const { releaseToNextStart: _raw, ...shown } = result;
  console.log(JSON.stringify(shown));
}
