/**
 * Benchmark phase H: preparing the VM. Scheduled to approved (StartRequests at the simulator)
 * through `approveAfterHooks` with a load balancer probe (drainSeconds 5), and with a
 * Kubernetes drain of 50 pods on the stand-in API server (testkit/kube-apiserver.ts: no API
 * server can run here), through the real @kubernetes/client-node.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startBridge, stopAll } from '../testkit/harness.ts';
import { KubeStandIn } from '../testkit/kube-apiserver.ts';
import { dir, quick, sleep } from './common.ts';

const RULES = { approval: { rules: [{ match: {}, action: 'approveAfterHooks' }] }, imds: { pollIntervalMs: 1000 } };

/** approvalTimes adds one event at a time and measures until its StartRequests, `rounds` times. */
async function approvalTimes(h: Awaited<ReturnType<typeof startBridge>>, rounds: number, between: () => Promise<void> | void): Promise<number[]> {
  const out: number[] = [];
  for (let r = 0; r < rounds; r++) {
    await between();
    const before = h.sim.startRequests.length;
    const t0 = Date.now();
    const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 15 * 60_000, startedMs: 1500 });
    for (let k = 0; k < 1200 && h.sim.startRequests.length === before; k++) await sleep(25);
    const start = h.sim.startRequests[before];
    out.push(start === undefined ? NaN : start.at - t0);
    // let it start and complete, so the next round starts from a VM back in service
    for (let k = 0; k < 400 && !h.kinds().includes(`completed:${e.eventId}`); k++) await sleep(25);
  }
  return out;
}

export async function phasePreparation() {
  const rounds = quick ? 2 : 5;
  const probe = await startBridge({
    config: RULES,
    sinks: (d) => [
      { name: 'audit', type: 'file', path: join(d, 'events.jsonl') },
      { name: 'lb', type: 'probe', listen: '127.0.0.1:0', drainSeconds: 5, prepare: true },
    ],
  });
  const probeMs = await approvalTimes(probe, rounds, async () => {
    await sleep(1500);
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
  const round = (v: number[]) => v.map((x) => Math.round(x));
  return { probeDrain5sMs: round(probeMs), kubernetesDrain50PodsMs: round(drainMs), evictions };
}
