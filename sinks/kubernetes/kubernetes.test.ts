/**
 * The kubernetes sink through the project's Kubernetes client (src/kube), against testkit/kube-apiserver.ts:
 * a stand-in for the Kubernetes API server written from its API reference (no API server can
 * run on the machines the tests run on), over HTTPS with a test CA in the kubeconfig. The
 * bridge polls the project's IMDS simulator and approves with `approveAfterHooks`.
 */
import { writeFileSync } from 'node:fs';
import type { AddressInfo, Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { KUBE_CERT, KUBE_KEY, kubeconfigOf } from '../../testkit/kube-objects.ts';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { KubeStandIn } from '../../testkit/kube-apiserver.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { ANNOTATION, EXCLUDE_LABEL, TAINT_KEY } from './index.ts';
import { freePort, laterReads, tempDir, waitFor } from '../../test/helpers.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';

let api: KubeStandIn | null = null;
const closeAfter: (() => Promise<void>)[] = [];
afterEach(async () => {
  await stopAll();
  await api?.close();
  api = null;
  for (const close of closeAfter.splice(0)) await close();
});

const PROVIDER = (vm: string) =>
  `azure:///subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/demo-rg/providers/Microsoft.Compute/virtualMachines/${vm}`;

async function bridgeWith(
  kube: KubeStandIn,
  sink: Record<string, unknown> = {},
  rules: unknown[] = [{ match: {}, action: 'approveAfterHooks' }],
  where: { sim?: ImdsSimulator; dir?: string; more?: Record<string, unknown>[] } = {},
): Promise<Harness> {
  const { more = [], ...at } = where;
  return startBridge({
    ...at,
    config: { approval: { rules } },
    sinks: (dir) => {
      const kubeconfig = join(dir, 'kubeconfig');
      writeFileSync(kubeconfig, kube.kubeconfig());
      return [
        { name: 'audit', type: 'file', path: join(dir, 'events.jsonl') },
        {
          name: 'node',
          type: 'kubernetes',
          kubeconfig,
          prepare: true,
          drain: { timeoutSeconds: 20, gracePeriodSeconds: 30, pollMs: 50 },
          ...sink,
        },
        ...more,
      ];
    },
  });
}

describe('kubernetes sink against the stand-in API server', () => {
  it('cordons, taints, labels and annotates, drains past a budget, approves once empty, and gives the node back exactly', async () => {
    api = await new KubeStandIn().start();
    const before = api.addNode('aks-node-0', {
      providerID: PROVIDER('vm0'),
      taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }],
    });
    api.addNode('aks-node-1', { providerID: PROVIDER('vm1') });
    const snapshot = structuredClone({ labels: before.metadata.labels, annotations: before.metadata.annotations, spec: before.spec });
    for (let i = 0; i < 4; i += 1) api.addPod('web', `web-${i}`, 'aks-node-0', { owner: 'ReplicaSet' });
    api.addPod('kube-system', 'kube-proxy-abc', 'aks-node-0', { owner: 'DaemonSet' });
    api.addPod('kube-system', 'etcd-aks-node-0', 'aks-node-0', { mirror: true });
    api.addPod('web', 'other-node-pod', 'aks-node-1', { owner: 'ReplicaSet' });
    api.budgets.set('web/web-2', 2);
    const h = await bridgeWith(api);
    const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 1500 });

    await waitFor(() => h.sim.startRequests.length === 1, 'the approval once the node is drained', 20_000);
    // StartRequests only after the node is empty of evictable pods
    const node = api.nodes.get('aks-node-0')!;
    expect(node.spec.unschedulable).toBe(true);
    expect(node.spec.taints).toEqual([
      { key: 'dedicated', value: 'web', effect: 'NoSchedule' },
      { key: TAINT_KEY, value: 'Reboot', effect: 'NoSchedule' },
    ]);
    expect(node.metadata.labels![EXCLUDE_LABEL]).toBe('true');
    expect(JSON.parse(node.metadata.annotations![ANNOTATION]!)).toMatchObject({
      eventIds: [e.eventId],
      cordoned: true,
      tainted: true,
      labeled: true,
      conditioned: true,
    });
    // the Node condition other controllers can act on, set through the status subresource
    expect(node.status?.conditions).toEqual([
      expect.objectContaining({
        type: 'ScheduledMaintenance',
        status: 'True',
        reason: 'Reboot',
        message: expect.stringContaining(e.eventId),
      }),
    ]);
    expect(
      api
        .podsOn('aks-node-0')
        .map((p) => p.metadata.name)
        .sort(),
    ).toEqual(['etcd-aks-node-0', 'kube-proxy-abc']);
    expect(api.evictions.get('web/web-2')).toEqual([429, 429, 201]);
    expect(api.evictions.has('kube-system/kube-proxy-abc')).toBe(false);
    expect(api.evictions.has('kube-system/etcd-aks-node-0')).toBe(false);
    expect(api.pods.has('web/other-node-pod')).toBe(true);
    expect(h.sim.startRequests[0]!.eventIds).toEqual([e.eventId]);
    // the node was found by its providerID (no nodeName, no NODE_NAME), and patched as strategic merge patches
    const patches = api.requests.filter((r) => r.method === 'PATCH');
    expect(patches.every((r) => r.contentType === 'application/strategic-merge-patch+json')).toBe(true);

    await waitFor(() => h.kinds().includes(`completed:${e.eventId}`), 'the completion', 15_000);
    await waitFor(() => api!.nodes.get('aks-node-0')!.metadata.annotations?.[ANNOTATION] === undefined, 'the node to be given back');
    await waitFor(() => api!.nodes.get('aks-node-0')!.status === undefined, 'the condition to be removed');
    const after = api.nodes.get('aks-node-0')!;
    expect({ labels: after.metadata.labels, annotations: after.metadata.annotations, spec: after.spec }).toEqual(snapshot);
    await waitFor(() => api!.events.length >= 5, 'the events of the give-back');
    const reasons = api.events.map((x) => x.reason);
    expect(reasons).toEqual(['MaintenanceScheduled', 'Cordoned', 'Drained', 'MaintenanceCompleted', 'Uncordoned']);
    expect(
      api.events.every(
        (x) =>
          (x.involvedObject as { kind: string; name: string }).name === 'aks-node-0' &&
          (x.metadata as { namespace: string }).namespace === 'default',
      ),
    ).toBe(true);
    expect(String(api.events[2]!.message)).toContain('4 pods evicted');
    // only what the RBAC in config/kubernetes/ grants: nodes get/list/patch, nodes/status patch, pods list, pods/eviction and events create
    const calls = new Set(
      api.requests.map(
        (r) =>
          `${r.method} ${r.path
            .replace(/\?.*/, '')
            .replace(/namespaces\/[^/]+/, 'namespaces/NS')
            .replace(/(nodes|pods)\/[^/]+/, '$1/NAME')}`,
      ),
    );
    expect([...calls].sort()).toEqual([
      'GET /api/v1/nodes',
      'GET /api/v1/nodes/NAME',
      'GET /api/v1/pods',
      'PATCH /api/v1/nodes/NAME',
      'PATCH /api/v1/nodes/NAME/status',
      'POST /api/v1/namespaces/NS/events',
      'POST /api/v1/namespaces/NS/pods/NAME/eviction',
    ]);
    await waitFor(() => h.bridge.store.preparations.of(e.eventId)[0]?.state === 'undone', 'the preparation recorded as undone');
    expect(h.bridge.store.preparations.of(e.eventId)).toMatchObject([
      { sink: 'node', state: 'undone', detail: 'node aks-node-0 given back: uncordoned' },
    ]);
  });

  it('an event canceled mid-drain: the drain stops within one poll, no eviction after it, the node given back, nothing dead-lettered', async () => {
    api = await new KubeStandIn().start();
    api.addNode('aks-node-0', { providerID: PROVIDER('vm0') });
    for (let i = 0; i < 3; i += 1) api.addPod('web', `web-${i}`, 'aks-node-0', { owner: 'ReplicaSet' });
    api.budgets.set('web/web-0', 1_000_000); // a disruption budget that never lets go
    const h = await bridgeWith(api, { nodeName: 'aks-node-0' });
    const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
    await waitFor(() => (api!.evictions.get('web/web-0')?.length ?? 0) >= 2, 'the budget holding the drain');
    expect(api.nodes.get('aks-node-0')!.spec.unschedulable).toBe(true);
    h.sim.removeEvent(e.eventId); // Azure canceled it
    await waitFor(() => h.kinds().includes(`canceled:${e.eventId}`), 'the cancel');
    // the poll that saw the cancel stops the drain, and the cancel gives the node back at once
    await waitFor(() => api!.nodes.get('aks-node-0')!.spec.unschedulable !== true, 'the node given back', 3000);
    // the drain has returned (said, and its delivery settled): nothing is left that could evict
    await waitFor(
      () => h.lines.some((l) => l.code === 'KUBE_DRAIN_STOPPED') && (h.bridge.store.outbox.depth().get('node') ?? 0) === 0,
      'the drain returned',
    );
    const evictions = api.evictions.get('web/web-0')!.length;
    await laterReads(h.sim);
    expect(api.evictions.get('web/web-0')!.length).toBe(evictions);
    const node = api.nodes.get('aks-node-0')!;
    expect(node.spec.taints ?? []).toEqual([]);
    expect(node.metadata.labels![EXCLUDE_LABEL]).toBeUndefined();
    expect(node.metadata.annotations?.[ANNOTATION]).toBeUndefined();
    expect(h.bridge.store.outbox.deadLetters()).toEqual([]);
    expect(h.lines.some((l) => l.code === 'KUBE_DRAIN_STOPPED')).toBe(true);
  });

  it('a drain interrupted by a restart resumes only if its event is still listed: one canceled meanwhile is given back, with no eviction', async () => {
    api = await new KubeStandIn().start();
    api.addNode('aks-node-0', { providerID: PROVIDER('vm0') });
    for (let i = 0; i < 2; i += 1) api.addPod('web', `web-${i}`, 'aks-node-0', { owner: 'ReplicaSet' });
    api.budgets.set('web/web-0', 1_000_000);
    const dir = tempDir();
    const sim = new ImdsSimulator({ vmName: 'vm0', peers: [], tickMs: 10 });
    await sim.listen(0);
    try {
      const first = await bridgeWith(api, { nodeName: 'aks-node-0' }, undefined, { sim, dir: dir.path });
      const e = sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
      await waitFor(() => (api!.evictions.get('web/web-0')?.length ?? 0) >= 1, 'the drain to begin');
      await first.stop();
      const evictions = api.evictions.get('web/web-0')!.length;
      sim.removeEvent(e.eventId); // canceled while the bridge was down
      // IMDS does not answer for the first seconds after the restart: the drain's row comes due
      // meanwhile, and must wait for a read rather than drain for an event it cannot see
      sim.injectFault({ kind: 'status', status: 500, count: 1_000_000 });
      const failed = () => sim.requests.filter((r) => r.path === '/metadata/scheduledevents' && r.status === 500).length;
      const before = failed();
      const second = await bridgeWith(api, { nodeName: 'aks-node-0' }, undefined, { sim, dir: dir.path });
      // three reads failed since the restart: the drain's row came due meanwhile, with no read to follow
      await waitFor(() => failed() >= before + 3, 'three failed reads after the restart');
      expect(api.evictions.get('web/web-0')!.length).toBe(evictions);
      sim.clearFaults();
      await waitFor(() => second.kinds().includes(`canceled:${e.eventId}`), 'the cancel, seen after the restart');
      await waitFor(() => api!.nodes.get('aks-node-0')!.spec.unschedulable !== true, 'the node given back', 5000);
      expect(api.evictions.get('web/web-0')!.length).toBe(evictions);
      expect(second.bridge.store.outbox.deadLetters()).toEqual([]);
      await second.stop();
    } finally {
      await sim.close();
      dir.cleanup();
    }
  });

  it('a 30-second Spot eviction with 50 pods whose own grace is 60 s: every eviction at once, each grace ending before NotBefore', async () => {
    api = await new KubeStandIn().start();
    api.addNode('aks-node-0', { providerID: PROVIDER('vm0') });
    for (let i = 0; i < 50; i += 1) api.addPod('batch', `job-${i}`, 'aks-node-0', { owner: 'ReplicaSet', grace: 60 });
    const h = await bridgeWith(api, { nodeName: 'aks-node-0', drain: { timeoutSeconds: 20, gracePeriodSeconds: 120, pollMs: 50 } });
    // at once: no eviction is answered before four are asked together (the connections the client
    // keeps to one server), so a drain that waited for each answer before the next would stall here
    let waiting: (() => void)[] | null = [];
    api.gate = (method, path) =>
      method === 'POST' && path.endsWith('/eviction') && waiting !== null
        ? new Promise<void>((go) => {
            waiting!.push(go);
            if (waiting!.length < 4) return;
            const all = waiting!;
            waiting = null;
            for (const g of all) g();
          })
        : Promise.resolve();
    h.sim.addEvent({ EventType: 'Preempt', noticeMs: 30_000 });
    await waitFor(() => h.sim.startRequests.length === 1, 'the approval once the node is empty', 15_000);
    expect(waiting).toBeNull();
    const evictions = api.requests.filter((r) => r.path.endsWith('/eviction'));
    expect(evictions).toHaveLength(50);
    for (const r of evictions) {
      const grace = (r.body as { deleteOptions: { gracePeriodSeconds: number } }).deleteOptions.gracePeriodSeconds;
      // the grace ends at least the margin (5 s) before NotBefore: 30 s of notice, at most 25 s, not the pods' own 60
      expect(grace).toBeLessThanOrEqual(25);
      expect(grace).toBeGreaterThan(15);
    }
    // and every one asked before the drain first looks for the pods gone
    const requests = api.requests;
    const firstEviction = requests.indexOf(evictions[0]!);
    const firstLook = requests.findIndex((r, i) => i > firstEviction && r.method === 'GET' && r.path.includes('/pods?'));
    expect(firstLook).toBeGreaterThan(requests.lastIndexOf(evictions.at(-1)!));
  });

  it('a pod no controller manages blocks the drain, named, and is not evicted; drain.force evicts it', async () => {
    api = await new KubeStandIn().start();
    api.addNode('aks-node-0', { providerID: PROVIDER('vm0') });
    api.addPod('tools', 'debug-shell', 'aks-node-0');
    api.addPod('web', 'web-0', 'aks-node-0', { owner: 'ReplicaSet' });
    const h = await bridgeWith(api, { nodeName: 'aks-node-0' });
    h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
    await waitFor(() => h.lines.some((l) => String(l.err ?? '').includes('no controller manages')), 'the drain blocked');
    const line = h.lines.find((l) => String(l.err ?? '').includes('no controller manages'))!;
    expect(String(line.err)).toMatch(
      /KUBE_DRAIN_BLOCKED: cannot evict pods that no controller manages .*: tools\/debug-shell; set drain.force: true/,
    );
    expect(api.evictions.has('tools/debug-shell')).toBe(false);
    expect(h.sim.startRequests).toHaveLength(0);
    await h.stop();

    api.nodes.clear();
    api.addNode('aks-node-0', { providerID: PROVIDER('vm0') });
    const forced = await bridgeWith(api, {
      nodeName: 'aks-node-0',
      drain: { timeoutSeconds: 20, gracePeriodSeconds: 30, pollMs: 50, force: true },
    });
    forced.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
    await waitFor(() => forced.sim.startRequests.length === 1, 'the approval once the node is empty', 15_000);
    expect(api.evictions.get('tools/debug-shell')).toEqual([201]);
  });

  it.each([
    ['damaged', '{"eventIds": [tru'],
    ['deleted by hand', null],
  ])('an annotation %s during the maintenance: the completion still gives the node back whole', async (_how, value) => {
    api = await new KubeStandIn().start();
    api.addNode('aks-node-0', { providerID: PROVIDER('vm0'), taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }] });
    api.addPod('web', 'web-0', 'aks-node-0', { owner: 'ReplicaSet' });
    const h = await bridgeWith(api, { nodeName: 'aks-node-0' });
    const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 1500 });
    await waitFor(() => h.sim.startRequests.length === 1, 'the approval once drained');
    const node = api.nodes.get('aks-node-0')!;
    expect(node.spec.unschedulable).toBe(true);
    // someone (or something) damages the record on the Node while the maintenance runs
    if (value === null) delete node.metadata.annotations![ANNOTATION];
    else node.metadata.annotations![ANNOTATION] = value;
    await waitFor(() => h.kinds().includes(`completed:${e.eventId}`), 'the completion', 15_000);
    await waitFor(() => api!.nodes.get('aks-node-0')!.spec.unschedulable !== true, 'the node uncordoned', 5000);
    const after = api.nodes.get('aks-node-0')!;
    expect(after.spec.taints).toEqual([{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }]);
    expect(after.metadata.labels![EXCLUDE_LABEL]).toBeUndefined();
    expect(after.metadata.annotations?.[ANNOTATION]).toBeUndefined();
    expect(h.bridge.store.outbox.deadLetters()).toEqual([]);
  });

  it('a budget that never lets go, with onDeadline: delete: the pod is deleted past it with a grace that ends before NotBefore, and it is said', async () => {
    api = await new KubeStandIn().start();
    api.addNode('aks-node-0', { providerID: PROVIDER('vm0') });
    api.addPod('db', 'primary-0', 'aks-node-0', { owner: 'StatefulSet', grace: 2 });
    api.addPod('web', 'web-0', 'aks-node-0', { owner: 'ReplicaSet' });
    api.budgets.set('db/primary-0', 1_000_000);
    const h = await bridgeWith(api, {
      nodeName: 'aks-node-0',
      drain: { timeoutSeconds: 30, gracePeriodSeconds: 30, pollMs: 50, onDeadline: 'delete' },
    });
    const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 12_000 });
    const notBefore = h.sim.events.find((x) => x.eventId === e.eventId)!.notBefore!;
    await waitFor(() => h.sim.startRequests.length === 1, 'the approval once the node is empty', 20_000);
    // deleted at NotBefore less the margin (5 s) and its grace (2 s), with that grace
    const deletion = api.requests.find((r) => r.method === 'DELETE' && /\/pods\/primary-0(\?|$)/.test(r.path))!;
    expect(api.deletions.get('db/primary-0')).toBeLessThanOrEqual(2);
    // not before that moment (NotBefore as IMDS says it, to the second), the budget asked until then
    const deleteAt = Math.floor(notBefore / 1000) * 1000 - (5 + 2) * 1000;
    expect(deletion.at).toBeGreaterThanOrEqual(deleteAt);
    const asked = api.requests.filter((r) => r.path.endsWith('/pods/primary-0/eviction'));
    expect(asked.length).toBeGreaterThan(1);
    expect(asked.every((r) => r.at <= deletion.at)).toBe(true);
    expect(h.sim.startRequests[0]!.at).toBeGreaterThan(deletion.at);
    expect(h.sim.startRequests[0]!.at).toBeLessThan(notBefore);
    expect(api.evictions.get('web/web-0')).toEqual([201]);
    const onPod = api.events.find((x) => x.reason === 'DeletedPastBudget') as { involvedObject: Record<string, unknown>; message: string };
    expect(onPod.involvedObject).toMatchObject({ kind: 'Pod', name: 'primary-0', namespace: 'db' });
    expect(onPod.message).toMatch(/PodDisruptionBudget/);
    expect(api.events.find((x) => x.reason === 'Drained')!.message).toMatch(
      /2 pods evicted, 1 of them deleted past their disruption budget/,
    );
  });

  it('a budget that never lets go, with onDeadline: wait: asked until NotBefore, never deleted, then dead-lettered and said on the Node and the pod', async () => {
    api = await new KubeStandIn().start();
    api.addNode('aks-node-0', { providerID: PROVIDER('vm0') });
    api.addPod('db', 'primary-0', 'aks-node-0', { owner: 'StatefulSet' });
    api.budgets.set('db/primary-0', 1_000_000);
    api.budgetNames.set('db/primary-0', 'primary-pdb');
    const h = await bridgeWith(api, { nodeName: 'aks-node-0', drain: { timeoutSeconds: 30, pollMs: 50 } });
    const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 3000 });
    const notBefore = h.sim.events.find((x) => x.eventId === e.eventId)!.notBefore!;
    await waitFor(() => h.bridge.store.outbox.deadLetters().length === 1, 'the dead letter at NotBefore', 15_000);
    const [dead] = h.bridge.store.outbox.deadLetters();
    expect(dead!.lastError).toMatch(
      new RegExp(
        `^rejected: KUBE_DRAIN_INCOMPLETE: NotBefore of maintenance ${e.eventId} passed with the node not drained: pod db/primary-0 is held by a PodDisruptionBudget \\(429 on \\d+ evictions?: Cannot evict pod`,
      ),
    );
    // asked again and again until NotBefore, never deleted past the budget
    const asks = api.requests.filter((r) => r.path.endsWith('/pods/primary-0/eviction'));
    expect(asks.length).toBeGreaterThan(1);
    // given up no earlier than NotBefore (read from IMDS to the second), and asked nothing after
    expect(dead!.deadAt).toBeGreaterThanOrEqual(Math.floor(notBefore / 1000) * 1000);
    expect(asks.at(-1)!.at).toBeLessThanOrEqual(dead!.deadAt);
    expect(api.deletions.size).toBe(0);
    expect(api.pods.has('db/primary-0')).toBe(true);
    type Ev = { reason: string; type: string; message: string; involvedObject: Record<string, unknown> };
    const onNode = (api.events as Ev[]).find((x) => x.reason === 'DrainIncomplete')!;
    expect(onNode).toMatchObject({ type: 'Warning', involvedObject: { kind: 'Node', name: 'aks-node-0' } });
    expect(onNode.message).toMatch(/not drained: pod db\/primary-0 is held by a PodDisruptionBudget .*primary-pdb needs 1 healthy/);
    const onPod = (api.events as Ev[]).find((x) => x.reason === 'EvictionBlocked')!;
    expect(onPod).toMatchObject({ type: 'Warning', involvedObject: { kind: 'Pod', name: 'primary-0', namespace: 'db' } });
    expect(onPod.message).toMatch(/PodDisruptionBudget held it \(drain\.onDeadline: wait\)/);
  });

  it('an API server that never answers: each attempt ends its calls with it, leaving no connection open', async () => {
    const open = new Set<Socket>();
    let accepted = 0;
    // TLS as the real one, then it reads every request and never answers
    const hole = createTlsServer({ cert: KUBE_CERT, key: KUBE_KEY }, (socket) => {
      accepted += 1;
      open.add(socket);
      socket.resume();
      socket.on('close', () => open.delete(socket));
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => hole.listen(0, '127.0.0.1', resolve));
    try {
      const url = `https://127.0.0.1:${(hole.address() as AddressInfo).port}`;
      const h = await startBridge({
        config: { approval: { rules: [{ match: {}, action: 'approveAfterHooks' }] } },
        sinks: (dir) => {
          const kubeconfig = join(dir, 'kubeconfig');
          writeFileSync(kubeconfig, kubeconfigOf(url));
          return [
            {
              name: 'node',
              type: 'kubernetes',
              kubeconfig,
              nodeName: 'aks-node-0',
              prepare: true,
              drain: { timeoutSeconds: 1 },
              delivery: { timeoutMs: 300, initialBackoffMs: 100, maxBackoffMs: 200, maxAttempts: 100 },
            },
          ];
        },
      });
      h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
      // several attempts, each 1.3 s at most: a call left open would stay for its own 30 s deadline
      await waitFor(() => accepted >= 4, 'four attempts', 20_000, 50);
      expect(open.size).toBeLessThanOrEqual(1);
      await h.stop();
    } finally {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => hole.close(() => resolve()));
    }
  });

  it.each(['ignore', 'cordon'] as const)(
    'a Spot rebalance advisory, with advisory: %s: never drained; cordoned only when asked, and given back when Azure withdraws it',
    async (advisory) => {
      api = await new KubeStandIn().start();
      api.addNode('aks-node-0', { providerID: PROVIDER('vm0') });
      api.addPod('web', 'web-0', 'aks-node-0', { owner: 'ReplicaSet', grace: 1 });
      const before = structuredClone(api.nodes.get('aks-node-0')!);
      const h = await bridgeWith(api, { nodeName: 'aks-node-0', advisory }, [{ match: {}, action: 'approve' }]);
      const e = h.sim.addEvent({ EventType: 'SpotRebalanceRecommendation', EventStatus: 'Advisory', startedMs: 600_000 });
      await waitFor(() => h.kinds().includes(`scheduled:${e.eventId}`), 'the advisory delivered');
      if (advisory === 'cordon') {
        await waitFor(() => api!.nodes.get('aks-node-0')!.spec.unschedulable === true, 'the cordon');
        const node = api.nodes.get('aks-node-0')!;
        expect(node.spec.taints ?? []).toEqual([]);
        expect(node.metadata.labels?.[EXCLUDE_LABEL]).toBeUndefined();
        expect(node.status).toBeUndefined();
      } else {
        await waitFor(() => h.sim.requests.length > 10, 'a few more reads');
        expect(api.nodes.get('aks-node-0')).toEqual(before);
      }
      expect(api.evictions.size).toBe(0);
      expect(h.sim.startRequests).toEqual([]);
      h.sim.removeEvent(e.eventId);
      await waitFor(() => h.kinds().includes(`canceled:${e.eventId}`), 'the advisory withdrawn');
      await waitFor(() => api!.nodes.get('aks-node-0')!.spec.unschedulable !== true, 'the node given back');
      await waitFor(() => api!.nodes.get('aks-node-0')!.metadata.annotations?.[ANNOTATION] === undefined, 'the record gone');
      expect(api.evictions.size).toBe(0);
    },
  );

  // AKS's node auto-drain drains for Redeploy and Preempt by default, never for Reboot, and a
  // PreemptionScheduled raised for the Spot rebalance advisory announces no drain
  it.each([
    [
      'PreemptionScheduled, a Spot eviction',
      'defers',
      'Preempt',
      { type: 'PreemptionScheduled', reason: 'PreemptScheduled', message: 'Preempt event scheduled' },
    ],
    ['PreemptScheduled (the Event reason), a Spot eviction', 'defers', 'Preempt', { type: 'PreemptScheduled', reason: 'PreemptScheduled' }],
    [
      'VMEventScheduled for a Redeploy',
      'defers',
      'Redeploy',
      { type: 'VMEventScheduled', reason: 'VMEventScheduled', message: 'Redeploy scheduled' },
    ],
    [
      'VMEventScheduled for a Reboot (AKS takes no action)',
      'drains',
      'Reboot',
      { type: 'VMEventScheduled', reason: 'VMEventScheduled', message: 'Reboot scheduled' },
    ],
    [
      'PreemptionScheduled for the rebalance advisory (no drain coming)',
      'drains',
      'Preempt',
      { type: 'PreemptionScheduled', reason: 'SpotRebalanceRecommendation', message: 'Advisory: rebalance' },
    ],
  ] as const)("beside AKS's node-problem-detector, a condition %s: the bridge %s", async (_what, expected, eventType, condition) => {
    api = await new KubeStandIn().start();
    const node = api.addNode('aks-node-0', { providerID: PROVIDER('vm0') });
    node.status = { conditions: [{ ...condition, status: 'True' }] };
    api.addPod('web', 'web-0', 'aks-node-0', { owner: 'ReplicaSet', grace: 1 });
    const h = await bridgeWith(api, { nodeName: 'aks-node-0' });
    h.sim.addEvent({ EventType: eventType, noticeMs: 600_000 });
    await waitFor(() => api!.events.some((x) => x.reason === 'MaintenanceScheduled'), 'the preparation');
    // AKS's node-problem-detector has its condition on the node: the bridge sets none of its own
    expect(api.nodes.get('aks-node-0')!.status?.conditions?.map((c) => c.type)).toEqual([condition.type]);
    if (expected === 'drains') {
      await waitFor(() => h.sim.startRequests.length === 1, 'the approval after its own drain');
      expect(Object.keys(Object.fromEntries(api.evictions))).toEqual(['web/web-0']);
      return;
    }
    // deferring: nothing evicted while AKS has the node; once AKS lifts its mark with the pod
    // still there, the bridge drains itself instead of waiting for a drain that is not coming
    await waitFor(() => api!.requests.filter((q) => q.method === 'GET' && q.path.includes('/pods')).length >= 3, 'a few looks at the node');
    expect(api.evictions.size).toBe(0);
    expect(h.sim.startRequests).toHaveLength(0);
    api.nodes.get('aks-node-0')!.status = { conditions: [] };
    await waitFor(() => h.sim.startRequests.length === 1, 'the approval after its own drain');
    expect(Object.keys(Object.fromEntries(api.evictions))).toEqual(['web/web-0']);
  });

  it("beside AKS's node auto-drain: nothing evicted twice, approved once AKS emptied the node, AKS's cordon and taint left in place", async () => {
    api = await new KubeStandIn().start();
    const aksTaint = { key: 'remediator.kubernetes.azure.com/unschedulable', effect: 'NoSchedule' };
    const node = api.addNode('aks-node-0', { providerID: PROVIDER('vm0'), unschedulable: true, taints: [aksTaint] });
    node.status = { conditions: [{ type: 'VMEventScheduled', status: 'True', reason: 'VMEventScheduled' }] };
    for (let i = 0; i < 2; i += 1) api.addPod('web', `web-${i}`, 'aks-node-0', { owner: 'ReplicaSet' });
    const chat = new HttpPeer();
    await chat.listen();
    closeAfter.push(() => chat.close());
    const h = await bridgeWith(api, { nodeName: 'aks-node-0' }, undefined, {
      more: [
        { name: 'slack', type: 'slack', webhookUrl: `${chat.url}/slack` },
        { name: 'teams', type: 'teams', webhookUrl: `${chat.url}/teams` },
      ],
    });
    const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 1000 });
    await waitFor(() => api!.events.some((x) => x.reason === 'MaintenanceScheduled'), 'the preparation');
    // the sink watches the Node while AKS drains: two more reads of it, and of IMDS, and still nothing
    const mark = api.requests.length;
    await waitFor(
      () => api!.requests.slice(mark).filter((r) => r.method === 'GET' && r.path === '/api/v1/nodes/aks-node-0').length >= 2,
      'two reads of the Node',
    );
    await laterReads(h.sim);
    expect(api.evictions.size).toBe(0);
    expect(h.sim.startRequests).toHaveLength(0);
    // AKS drains the node
    for (const p of api.podsOn('aks-node-0')) api.pods.delete(`${p.metadata.namespace}/${p.metadata.name}`);
    await waitFor(() => h.sim.startRequests.length === 1, 'the approval once the node is empty');
    expect(api.events.find((x) => x.reason === 'Drained')!.message).toMatch(/^Drained by AKS's node auto-drain/);
    // the chat messages, updated in place, say who drained the node
    const approved = (path: string) => chat.requests.find((r) => r.url === path && r.body.includes('approved at'))?.body;
    await waitFor(() => approved('/slack') && approved('/teams'), 'the approved messages');
    for (const path of ['/slack', '/teams'])
      expect(approved(path)).toMatch(/node aks-node-0 drained by AKS's node auto-drain · approved at \d\d:\d\d UTC/);
    await waitFor(() => h.kinds().includes(`completed:${e.eventId}`), 'the completion', 15_000);
    await waitFor(() => api!.nodes.get('aks-node-0')!.metadata.annotations?.[ANNOTATION] === undefined, 'the annotation gone');
    const after = api.nodes.get('aks-node-0')!;
    expect(after.spec.unschedulable).toBe(true);
    expect(after.spec.taints).toEqual([aksTaint]);
    expect(after.metadata.labels![EXCLUDE_LABEL]).toBeUndefined();
    expect(api.evictions.size).toBe(0);
  });

  it('a node cordoned by hand before the event stays cordoned afterwards', async () => {
    api = await new KubeStandIn().start();
    api.addNode('aks-node-0', { providerID: PROVIDER('vm0'), unschedulable: true });
    api.addPod('web', 'web-0', 'aks-node-0', { owner: 'ReplicaSet' });
    const h = await bridgeWith(api, { nodeName: 'aks-node-0' });
    const e = h.sim.addEvent({ EventType: 'Freeze', noticeMs: 600_000, startedMs: 200 });
    await waitFor(() => h.kinds().includes(`completed:${e.eventId}`), 'the completion', 15_000);
    await waitFor(() => api!.nodes.get('aks-node-0')!.metadata.annotations?.[ANNOTATION] === undefined, 'the annotation to go');
    await waitFor(() => api!.events.some((x) => x.reason === 'MaintenanceCompleted'), 'the completion event');
    const node = api.nodes.get('aks-node-0')!;
    expect(node.spec.unschedulable).toBe(true);
    expect(node.spec.taints ?? []).toEqual([]);
    expect(node.metadata.labels![EXCLUDE_LABEL]).toBeUndefined();
    expect(api.events.map((x) => x.reason)).not.toContain('Uncordoned');
    expect(api.events.map((x) => x.reason)).not.toContain('Cordoned');
  });

  it('an emptyDir pod blocks the drain with a reason that names it; deleteEmptyDirData evicts it', async () => {
    api = await new KubeStandIn().start();
    api.addNode('aks-node-0', { providerID: PROVIDER('vm0') });
    api.addPod('web', 'cache-0', 'aks-node-0', { owner: 'ReplicaSet', emptyDir: true });
    const h = await bridgeWith(api, { nodeName: 'aks-node-0', delivery: { maxAttempts: 1 } });
    h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
    await waitFor(() => h.bridge.store.outbox.deadLetters().some((d) => d.sink === 'node'), 'the blocked drain to be dead-lettered');
    expect(h.bridge.store.outbox.deadLetters().find((d) => d.sink === 'node')!.lastError).toMatch(
      /KUBE_DRAIN_BLOCKED: cannot delete pods with local storage \(emptyDir\): web\/cache-0/,
    );
    expect(h.sim.startRequests).toEqual([]);
    expect(api.pods.has('web/cache-0')).toBe(true);
    await h.stop();

    const h2 = await bridgeWith(api, { nodeName: 'aks-node-0', drain: { deleteEmptyDirData: true, timeoutSeconds: 20, pollMs: 50 } });
    h2.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
    await waitFor(() => h2.sim.startRequests.length === 1, 'the approval after the emptyDir pod is evicted', 15_000);
    expect(api.pods.has('web/cache-0')).toBe(false);
  });

  it('RBAC refusing eviction, a node that does not exist, an unreachable API, kubeconfigs the client refuses, a failing exec plugin: clear dead letters, other sinks unaffected', async () => {
    api = await new KubeStandIn({ forbid: ['pods/eviction'] }).start();
    api.addNode('aks-node-0', { providerID: PROVIDER('vm0') });
    api.addPod('web', 'web-0', 'aks-node-0', { owner: 'ReplicaSet' });
    const closed = await freePort();
    const h = await startBridge({
      sinks: (dir) => {
        const kubeconfig = join(dir, 'kubeconfig');
        writeFileSync(kubeconfig, api!.kubeconfig());
        const unreachable = join(dir, 'kubeconfig-closed');
        writeFileSync(unreachable, api!.kubeconfig().replace(api!.url, `https://127.0.0.1:${closed}`));
        const plain = join(dir, 'kubeconfig-http');
        writeFileSync(plain, api!.kubeconfig().replace(api!.url, api!.url.replace('https://', 'http://')));
        // a socks5 proxy the client cannot go through; an exec plugin that fails
        const socks = join(dir, 'kubeconfig-socks');
        writeFileSync(socks, api!.kubeconfig().replace('cluster: { server:', 'cluster: { proxy-url: "socks5://127.0.0.1:1080", server:'));
        const plugin = join(dir, 'kubeconfig-exec');
        const exec = '{ exec: { apiVersion: client.authentication.k8s.io/v1, command: /bin/false, interactiveMode: Never } }';
        writeFileSync(plugin, api!.kubeconfig().replace(/user: \{ token: "[^"]*" \}/, `user: ${exec}`));
        const fast = { maxAttempts: 2, initialBackoffMs: 50, maxBackoffMs: 100 };
        return [
          { name: 'audit', type: 'file', path: join(dir, 'events.jsonl') },
          { name: 'rbac', type: 'kubernetes', kubeconfig, nodeName: 'aks-node-0', delivery: fast },
          { name: 'missing', type: 'kubernetes', kubeconfig, nodeName: 'no-such-node', delivery: fast },
          { name: 'down', type: 'kubernetes', kubeconfig: unreachable, nodeName: 'aks-node-0', delivery: fast },
          { name: 'http', type: 'kubernetes', kubeconfig: plain, nodeName: 'aks-node-0', delivery: { ...fast, maxAttempts: 50 } },
          { name: 'socks', type: 'kubernetes', kubeconfig: socks, nodeName: 'aks-node-0', delivery: { ...fast, maxAttempts: 50 } },
          { name: 'plugin', type: 'kubernetes', kubeconfig: plugin, nodeName: 'aks-node-0', delivery: fast },
        ];
      },
    });
    const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
    await waitFor(() => h.bridge.store.outbox.deadLetters().length === 6, 'six dead letters', 20_000);
    const dead = new Map(h.bridge.store.outbox.deadLetters().map((d) => [d.sink, d.lastError]));
    expect(dead.get('rbac')).toMatch(
      /^rejected: KUBE_FORBIDDEN: evict pod web\/web-0: forbidden by RBAC \(403\): .*cannot create resource "pods\/eviction"/,
    );
    expect(dead.get('missing')).toMatch(
      /^rejected: KUBE_NOT_FOUND: get node no-such-node: not found \(404\): nodes "no-such-node" not found/,
    );
    expect(dead.get('down')).toMatch(
      /^gave up after 2 attempts: KUBE_API_UNREACHABLE: get node aks-node-0: cannot reach the Kubernetes API server \(ECONNREFUSED\)/,
    );
    // a kubeconfig the client refuses is no outage: one attempt, and the fix named
    expect(dead.get('http')).toMatch(
      /^rejected: KUBE_CONFIG_INVALID: get node aks-node-0: the kubeconfig's server is http:\/\/ without insecure-skip-tls-verify; use the API server's https:\/\/ address/,
    );
    // refused by its key before any request, never passed by: one attempt
    expect(dead.get('socks')).toMatch(
      /^rejected: KUBE_CONFIG_INVALID: kubeconfig: .*kubeconfig-socks: cluster "stand-in": proxy-url socks5:\/\/127\.0\.0\.1:1080: the scheme socks5 is not supported/,
    );
    expect(dead.get('plugin')).toMatch(
      /^gave up after 2 attempts: KUBE_EXEC_FAILED: get node aks-node-0: the exec plugin \/bin\/false failed \(exit code 1; what it printed on stderr is not kept\)/,
    );
    expect(h.kinds()).toEqual([`scheduled:${e.eventId}`]);
    expect(h.lines.some((l) => l.code === 'KUBE_FORBIDDEN' && l.msg === 'kubernetes preparation failed')).toBe(true);
    // the pod stays, the node was cordoned (RBAC allowed that) and says so in its annotation
    expect(api.pods.has('web/web-0')).toBe(true);
    expect(api.nodes.get('aks-node-0')!.spec.unschedulable).toBe(true);
  });
});
