/**
 * The callers of the Kubernetes client read their lists in chunks (`limit`, `continue`): the
 * kubernetes sink finds its Node and a Node's pods, the Kubernetes health check its pods, the Lease
 * store its records. Against testkit/kube-apiserver.ts, a stand-in for the API server written from
 * the API reference (no API server runs on this machine), which serves lists in chunks as the API
 * server does (testkit/kube-lists.ts). The client's own paging: kube-client-lists.test.ts.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../sinks/kubernetes/api.ts';
import { LeaseFleetStore } from '../../src/fleet/budget/stores/lease.ts';
import { KubernetesHealth } from '../../src/health/kubernetes.ts';
import { KubeStandIn } from '../../testkit/kube-apiserver.ts';
import { tempDir } from '../helpers.ts';

let api: KubeStandIn;
let kubeconfig: string;
const dir = tempDir('se-bridge-test-kube-callers-');

beforeAll(async () => {
  api = await new KubeStandIn().start();
  for (let i = 0; i < 250; i++) api.addNode(`node-${String(i).padStart(3, '0')}`, { providerID: `azure:///vm/${i}` });
  kubeconfig = join(dir.path, 'kubeconfig');
  writeFileSync(kubeconfig, api.kubeconfig());
});
afterAll(async () => {
  await api.close();
  dir.cleanup();
});

const lists = (path: string) =>
  api.requests.filter((r) => r.path.startsWith(`${path}?`)).map((r) => new URL(r.path, 'https://x').searchParams);

describe('lists in chunks', () => {
  it("the callers: the sink finds its Node and a Node's pods, the health check its pods, the Lease store its records, in chunks", async () => {
    const kube = await connect(kubeconfig);
    expect((await kube.nodeByProviderId('azure:///vm/249'))!.name).toBe('node-249');
    expect(lists('/api/v1/nodes').map((q) => q.get('limit'))).toEqual(['50', '50', '50', '50', '50']);
    for (let i = 0; i < 120; i++)
      api.addPod('web', `web-${String(i).padStart(3, '0')}`, 'node-001', { owner: 'ReplicaSet', ready: i !== 119 });
    expect(await kube.podsOn('node-001')).toHaveLength(120);
    expect(lists('/api/v1/pods').map((q) => [q.get('limit'), q.get('fieldSelector')])).toEqual(
      Array.from({ length: 3 }, () => ['50', 'spec.nodeName=node-001']),
    );
    const health = new KubernetesHealth({ node: false, pods: 'all', nodeName: 'node-001', kubeconfig }, () => null);
    expect(await health.run(AbortSignal.timeout(10_000))).toBe('1 pod on node-001 not Ready: web/web-119');
    expect(lists('/api/v1/pods')).toHaveLength(6);
    const store = await LeaseFleetStore.open({ type: 'kubernetes', namespace: 'se-bridge', kubeconfig }, 'big');
    for (let i = 0; i < 520; i++) await store.put(`member-${i}`, { vm: `vm-${i}` }, null);
    api.requests.length = 0;
    expect(await store.list('member-')).toHaveLength(520);
    expect(lists('/apis/coordination.k8s.io/v1/namespaces/se-bridge/leases').map((q) => q.get('limit'))).toEqual(['500', '500']);
    await store.close();
  });
});
