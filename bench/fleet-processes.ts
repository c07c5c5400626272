/**
 * Benchmark phase F3: a fleet budget across bridges as processes. Thirty daemons of the package,
 * one group with three slots, each with its own IMDS simulator (in this process) and every
 * member's Reboot appearing at once, NotBefore staggered by a second (so the queue's order is
 * known: the last member's first), approved by policy, each maintenance Started for 4 s; the
 * store is Azurite behind a proxy that counts requests and refused conditional writes. Printed:
 * the most members down at once (from StartRequests to the event's end, at the simulators),
 * grants out of the queue's order, the time from a slot given back (the holder's log line) to
 * the next StartRequests, and lost writes per hand-off. `node bench/fleet-processes.ts [N]` runs it alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { delimiter, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { Azurite, DEV_ACCOUNT } from '../src/simulator/azurite.ts';
import { ImdsSimulator } from '../src/simulator/server.ts';
import { CountingProxy } from '../testkit/counting-proxy.ts';
import { bridgeConfig, dir, dist, log, sleep, stop } from './common.ts';
import { PACKAGE_BIN } from './processes.ts';

const K = 3;
const STARTED_MS = 4000;
const RELEASED = 'fleet budget: slot given back';

export async function phaseFleetProcesses(n = 30) {
  const azurite = await Azurite.start();
  const proxy = await new CountingProxy(azurite.url).start();
  const sims: ImdsSimulator[] = [];
  const children: ChildProcess[] = [];
  const released: number[] = [];
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
          maxUnavailable: K,
          store: { type: 'blob', connectionString: azurite.connectionString(`${proxy.url}/${DEV_ACCOUNT}`), container: 'processes' },
          retryMs: 2000,
          heartbeatSeconds: 30,
        },
      });
      const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` };
      const child = spawn(PACKAGE_BIN, ['run', '--config', config], { stdio: ['ignore', 'pipe', 'inherit'], env });
      createInterface({ input: child.stdout }).on('line', (line) => {
        if (line.includes(RELEASED)) released.push(Date.now());
      });
      children.push(child);
    }
    // every daemon reads its IMDS before the wave
    for (const deadline = Date.now() + 120_000; sims.some((s) => s.requests.length < 3) && Date.now() < deadline;) await sleep(200);
    proxy.take();
    const t0 = Date.now();
    for (const [i, sim] of sims.entries())
      sim.addEvent({ EventType: 'Reboot', noticeMs: 3_600_000 + (n - i) * 1000, startedMs: STARTED_MS, DurationInSeconds: 5 });
    for (
      const deadline = Date.now() + 600_000;
      sims.some((s) => s.startRequests.length === 0 || s.events.length > 0) && Date.now() < deadline;
    )
      await sleep(200);
    const took = Date.now() - t0;
    const cost = proxy.take();
    const starts = sims.map((s, i) => ({ i, at: s.startRequests[0]?.at ?? Number.POSITIVE_INFINITY }));
    const downs = starts.map((s) => ({ from: s.at, to: s.at + STARTED_MS }));
    const most = Math.max(...downs.map((x) => downs.filter((y) => y.from <= x.from && y.to > x.from).length));
    // the queue's order: the highest index first; out of order, a grant before that of a member whose NotBefore came earlier
    const sorted = starts.map((s) => s.at).sort((a, b) => a - b);
    const outOfOrder = starts.filter((s) => starts.some((o) => o.at > s.at + 1000 && o.i > s.i)).map((s) => sorted.indexOf(s.at) + 1);
    const gaps = released.flatMap((r) => {
      const next = sorted.find((s) => s >= r);
      return next === undefined ? [] : [next - r];
    });
    const handOffs = Math.max(1, n - K);
    return {
      members: n,
      maxUnavailable: K,
      approved: starts.filter((s) => Number.isFinite(s.at)).length,
      mostDownAtOnce: most,
      servedOutOfOrder: outOfOrder.length,
      // the grants out of order, by their rank among the grants (the first ones: members that asked before the others had seen their events)
      outOfOrderRanks: outOfOrder.sort((a, b) => a - b),
      releaseToNextStart: dist(gaps),
      // lost writes of the slots (the hand-offs) apart from the group's other records (the collision waves)
      lostWritesPerHandOff: Math.round(((cost.lostBy.slot ?? 0) / handOffs) * 100) / 100,
      lostWritesElsewhere: Object.fromEntries(Object.entries(cost.lostBy).filter(([k]) => k !== 'slot')),
      requestsPerMemberPerMinute: Math.round((Object.values(cost.counts).reduce((a, b) => a + b, 0) / n / (took / 60_000)) * 10) / 10,
      waveSeconds: Math.round(took / 100) / 10,
      requests: cost.counts,
    };
  } finally {
    await Promise.all(children.map((c) => stop(c)));
    await Promise.all(sims.map((s) => s.close()));
    await proxy.stop();
    await azurite.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const n = Number(process.argv[2] ?? 30);
  log(`F3: ${n} bridges as processes, one group of ${K} slots`);
  console.log(JSON.stringify(await phaseFleetProcesses(n)));
}
