/**
 * The Lease store's watch loop (src/fleet/budget/stores/lease-watch.ts) against a server whose
 * watches all fail or end at once (the Kubernetes API stand-in, testkit/kube-watch.ts): it must
 * not be asked in a loop. The loop's pauses go through lib/time's sleep, the one module this file
 * replaces: each pause is counted and held until the watch stops, so the test reads no clock.
 */
import { beforeAll, beforeEach, expect, it, vi } from 'vitest';
import { LeaseFleetStore } from '../../src/fleet/budget/stores/lease.ts';
import type { KubeStandIn } from '../../testkit/kube-apiserver.ts';
import { leaseStorePerFile } from '../../testkit/fleet-stores.ts';
import { waitFor } from '../helpers.ts';

const pauses = vi.hoisted(() => ({ count: 0 }));
vi.mock('../../src/lib/time.ts', async (original) => {
  const real = await original<typeof import('../../src/lib/time.ts')>();
  return {
    ...real,
    // a pause of the watch loop: counted, and held until the watch stops
    sleep: (_ms: number, signal?: AbortSignal) => {
      pauses.count++;
      return new Promise<void>((_resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason as Error);
        signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
      });
    },
  };
});

const leases = leaseStorePerFile();
const NS = 'se-bridge';
const LEASES = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`;
let api: KubeStandIn;
let kubeconfig: string;

beforeAll(() => {
  api = leases().kube;
  kubeconfig = (leases().config('kubernetes') as { kubeconfig: string }).kubeconfig;
});
beforeEach(() => {
  pauses.count = 0;
  api.leases.watches.expireNext = 0;
  api.leases.watches.maxSeconds = 1800;
  api.leases.watches.bookmarkMs = 5000;
});

const lists = () => api.requests.filter((r) => r.path.startsWith(`${LEASES}?`) && !r.path.includes('watch=')).length;
const watchesAsked = () => api.requests.filter((r) => r.path.startsWith(`${LEASES}?`) && r.path.includes('watch=')).length;

async function watching() {
  const store = await LeaseFleetStore.open({ type: 'kubernetes', namespace: NS, kubeconfig }, 'g1');
  const stop = new AbortController();
  const done = store.watch('slot-', stop.signal, () => undefined);
  return { stop: async () => (stop.abort(), await done, await store.close()) };
}

it('a server that answers every watch with 410 Expired: listed again at once the first time, then with a pause, not in a loop', async () => {
  api.leases.watches.expireNext = 1_000_000;
  const [lists0, watches0] = [lists(), watchesAsked()];
  const w = await watching();
  // either the loop pauses, or it has listed 30 times with none
  await waitFor(() => pauses.count > 0 || lists() - lists0 >= 30, 'a pause, or 30 lists', 20_000, 5);
  const [listed, watched] = [lists() - lists0, watchesAsked() - watches0];
  await w.stop();
  expect({ listed, watched, pauses: pauses.count }).toMatchObject({ pauses: 1 });
  expect(listed).toBeLessThanOrEqual(3);
}, 30_000);

it('a server that ends every watch at once after a bookmark: paused between watches, not asked in a loop', async () => {
  // every watch ends within 20 ms of its start, a bookmark sent every millisecond until then
  api.leases.watches.maxSeconds = 0.02;
  api.leases.watches.bookmarkMs = 1;
  const watches0 = watchesAsked();
  const w = await watching();
  await waitFor(() => pauses.count > 0 || watchesAsked() - watches0 >= 30, 'a pause, or 30 watches', 20_000, 5);
  const watched = watchesAsked() - watches0;
  await w.stop();
  expect({ watched, pauses: pauses.count }).toMatchObject({ pauses: 1 });
  expect(watched).toBeLessThanOrEqual(3);
}, 30_000);
