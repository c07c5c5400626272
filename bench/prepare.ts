/**
 * Benchmark phase H: preparing the VM. Scheduled to approved (StartRequests at the simulator)
 * through `approveAfterHooks` with a load balancer probe (drainSeconds 5), and with a
 * Kubernetes drain of 50 pods on the stand-in API server (testkit/kube-apiserver.ts: no API
 * server can run here), through the project's Kubernetes client (src/kube). A prober asks the probe every
 * 50 ms, as a load balancer would (more often), and times the change to 503 and the completion
 * to 200.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { startBridge, stopAll } from '../testkit/harness.ts';
import { KubeStandIn } from '../testkit/kube-apiserver.ts';
import { dir, quick, sleep } from './common.ts';

const RULES = { approval: { rules: [{ match: {}, action: 'approveAfterHooks' }] }, imds: { pollIntervalMs: 1000 } };

type Harness = Awaited<ReturnType<typeof startBridge>>;

/** approvalTimes adds one event at a time and measures until its StartRequests, `rounds` times; `seen` is told each event's id and start. */
async function approvalTimes(
  h: Harness,
  rounds: number,
  between: () => Promise<void> | void,
  seen: (eventId: string, t0: number) => void = () => undefined,
): Promise<number[]> {
  const out: number[] = [];
  for (let r = 0; r < rounds; r++) {
    await between();
    const before = h.sim.startRequests.length;
    const t0 = Date.now();
    const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 15 * 60_000, startedMs: 1500 });
    seen(e.eventId, t0);
    for (let k = 0; k < 1200 && h.sim.startRequests.length === before; k++) await sleep(25);
    const start = h.sim.startRequests[before];
    out.push(start === undefined ? NaN : start.at - t0);
    // let it start and complete, so the next round starts from a VM back in service
    for (let k = 0; k < 400 && !h.kinds().includes(`completed:${e.eventId}`); k++) await sleep(25);
  }
  return out;
}

/** prober asks the probe every 50 ms and keeps when each answer was asked for. */
function prober(url: string): { answers: { at: number; status: number }[]; stop(): void } {
  const answers: { at: number; status: number }[] = [];
  let on = true;
  void (async () => {
    while (on) {
      const at = Date.now();
      const status = await fetch(url, { signal: AbortSignal.timeout(2000) }).then(
        (r) => r.status,
        () => 0,
      );
      answers.push({ at, status });
      await sleep(50);
    }
  })();
  return { answers, stop: () => void (on = false) };
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export async function phasePreparation() {
  const rounds = quick ? 2 : 5;
  const port = await freePort();
  const probe = await startBridge({
    config: RULES,
    sinks: (d) => [
      { name: 'audit', type: 'file', path: join(d, 'events.jsonl') },
      { name: 'lb', type: 'probe', listen: `127.0.0.1:${port}`, drainSeconds: 5, prepare: true },
    ],
  });
  const asked = prober(`http://127.0.0.1:${port}/probe`);
  const added: { eventId: string; t0: number }[] = [];
  const probeMs = await approvalTimes(
    probe,
    rounds,
    async () => {
      await sleep(1500);
    },
    (eventId, t0) => added.push({ eventId, t0 }),
  );
  await sleep(500);
  asked.stop();
  // from the change at the simulator to the first 503; from the completion being observed to the first 200
  const completedAt = (id: string) =>
    Date.parse(probe.events().find((e) => e.subject === id && e.type === 'azure.scheduledevent.completed')?.time ?? 'x');
  const toOut = added.map(({ t0 }) => (asked.answers.find((a) => a.at >= t0 && a.status === 503)?.at ?? NaN) - t0);
  const toBack = added.map(({ eventId }) => {
    const done = completedAt(eventId);
    return (asked.answers.find((a) => a.at >= done && a.status === 200)?.at ?? NaN) - done;
  });
  await probe.stop();

  const api = await new KubeStandIn({ msPerGraceSecond: 10 }).start();
  api.addNode('bench-node');
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, api.kubeconfig());
  const kube = await startBridge({
    config: RULES,
    sinks: (d) => [
      { name: 'audit', type: 'file', path: join(d, 'events.jsonl') },
      { name: 'node', type: 'kubernetes', kubeconfig, nodeName: 'bench-node', prepare: true },
    ],
  });
  let batch = 0;
  const drainMs = await approvalTimes(kube, rounds, async () => {
    // 50 pods of five ReplicaSets, a 30 s grace period each (300 ms at the stand-in's 10 ms per second)
    for (let i = 0; i < 50; i++) api.addPod(`ns-${i % 5}`, `app-${batch}-${i}`, 'bench-node', { owner: 'ReplicaSet', grace: 30 });
    batch += 1;
    for (let k = 0; k < 200 && api.nodes.get('bench-node')!.spec.unschedulable === true; k++) await sleep(25);
  });
  const evictions = [...api.evictions.values()].flat().filter((s) => s === 201).length;
  await kube.stop();
  await api.close();
  await stopAll();
  const spot = await spotRounds(rounds);
  const round = (v: number[]) => v.map((x) => Math.round(x));
  return {
    spot,
    probeDrain5sMs: round(probeMs),
    probeChangeTo503Ms: round(toOut),
    probeCompletedTo200Ms: round(toBack),
    kubernetesDrain50PodsMs: round(drainMs),
    evictions,
  };
}

/**
 * spotRounds: a Spot eviction (Preempt, 30 s of notice) of a node with 50 pods whose own grace is
 * 60 s, `rounds` times, polling IMDS every second: from the change at IMDS to the node cordoned,
 * to every eviction accepted, and to the node empty, each against NotBefore (30 s).
 */
async function spotRounds(rounds: number) {
  const api = await new KubeStandIn({ msPerGraceSecond: 10 }).start();
  api.addNode('spot-node');
  const kubeconfig = join(dir, 'kubeconfig-spot');
  writeFileSync(kubeconfig, api.kubeconfig());
  const h = await startBridge({
    config: RULES,
    sinks: (d) => [
      { name: 'audit', type: 'file', path: join(d, 'events.jsonl') },
      {
        name: 'node',
        type: 'kubernetes',
        kubeconfig,
        nodeName: 'spot-node',
        prepare: true,
        drain: { gracePeriodSeconds: 120, pollMs: 50 },
      },
    ],
  });
  const out: { cordonedMs: number; evictionsAcceptedMs: number; emptyMs: number; notBeforeMs: number; longestGraceS: number }[] = [];
  try {
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < 400 && api.nodes.get('spot-node')!.spec.unschedulable === true; k++) await sleep(25);
      for (let i = 0; i < 50; i++) api.addPod(`spot-${i % 5}`, `job-${r}-${i}`, 'spot-node', { owner: 'ReplicaSet', grace: 60 });
      const from = api.requests.length;
      const t0 = Date.now();
      const e = h.sim.addEvent({ EventType: 'Preempt', noticeMs: 30_000, startedMs: 500 });
      let empty = NaN;
      for (let k = 0; k < 1600 && Number.isNaN(empty); k++) {
        if (api.podsOn('spot-node').length === 0) empty = Date.now() - t0;
        else await sleep(10);
      }
      const mine = api.requests.slice(from);
      const cordon = mine.find(
        (q) => q.method === 'PATCH' && (q.body as { spec?: { unschedulable?: boolean } }).spec?.unschedulable === true,
      );
      const evictions = mine.filter((q) => q.path.endsWith('/eviction'));
      out.push({
        cordonedMs: cordon === undefined ? NaN : cordon.at - t0,
        evictionsAcceptedMs: evictions.length === 0 ? NaN : Math.max(...evictions.map((q) => q.at)) - t0,
        emptyMs: empty,
        notBeforeMs: 30_000,
        longestGraceS: Math.max(
          ...evictions.map((q) => (q.body as { deleteOptions: { gracePeriodSeconds: number } }).deleteOptions.gracePeriodSeconds),
        ),
      });
      for (let k = 0; k < 400 && !h.kinds().includes(`completed:${e.eventId}`); k++) await sleep(25);
    }
  } finally {
    await h.stop();
    await api.close();
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}` && process.argv.includes('--spot')) {
  for (const [i, s] of (await spotRounds(5)).entries())
    process.stdout.write(
      `round ${i + 1}: cordoned ${s.cordonedMs} ms, every eviction accepted ${s.evictionsAcceptedMs} ms, node empty ${s.emptyMs} ms (grace compressed 100x), longest grace ${s.longestGraceS} s; NotBefore at ${s.notBeforeMs} ms\n`,
    );
  process.exit(0);
}
