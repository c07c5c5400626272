/**
 * What the Kubernetes client asks and keeps: its User-Agent, answers bounded before they are
 * decoded, lists read in chunks (`limit`, `continue`, a 410 for an expired token); the callers'
 * lists: kube-callers-lists.test.ts. Against
 * testkit/kube-apiserver.ts, a stand-in for the API server written from the API reference (no
 * API server runs on this machine), which serves lists in chunks as the API server does
 * (testkit/kube-lists.ts).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { KubeApiError, KubeConnection, KubeTooLargeError } from '../../src/kube/client.ts';
import { VERSION } from '../../src/lib/version.ts';
import { KubeStandIn } from '../../testkit/kube-apiserver.ts';
import { tempDir } from '../helpers.ts';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

let api: KubeStandIn;
let kubeconfig: string;
const dir = tempDir('se-bridge-test-kube-lists-');
const NODES = 250;

beforeAll(async () => {
  api = await new KubeStandIn().start();
  for (let i = 0; i < NODES; i++) api.addNode(`node-${String(i).padStart(3, '0')}`, { providerID: `azure:///vm/${i}` });
  kubeconfig = join(dir.path, 'kubeconfig');
  writeFileSync(kubeconfig, api.kubeconfig());
});
afterAll(async () => {
  await api.close();
  dir.cleanup();
});
beforeEach(() => {
  api.requests.length = 0;
  api.chunks.expireContinues = 0;
  api.chunks.stuck = false;
});

type Named = { metadata: { name: string } };
const names = {
  start: (): string[] => [],
  page: (kept: string[], items: readonly Named[]) => [...kept, ...items.map((n) => n.metadata.name)],
};
const lists = (path: string) =>
  api.requests.filter((r) => r.path.startsWith(`${path}?`)).map((r) => new URL(r.path, 'https://x').searchParams);

describe('what the client asks', () => {
  it('every request says who it is: se-bridge/<version> (<os>/<arch>)', async () => {
    const kube = KubeConnection.open(kubeconfig)!;
    await kube.request({ method: 'GET', path: '/api/v1/nodes/node-000' });
    await kube.request({ method: 'GET', path: '/api/v1/nodes/nope' }).catch(() => undefined);
    expect(api.requests.map((r) => r.userAgent)).toEqual([
      `se-bridge/${VERSION} (${process.platform}/${process.arch})`,
      `se-bridge/${VERSION} (${process.platform}/${process.arch})`,
    ]);
    kube.close();
  });
});

describe('lists in chunks', () => {
  it('a list is read 50 at a time with limit and continue, each page given to the caller, every item once', async () => {
    const kube = KubeConnection.open(kubeconfig)!;
    const pages: number[] = [];
    const all = await kube.list<Named, string[]>(
      { path: '/api/v1/nodes' },
      { ...names, page: (kept, items) => (pages.push(items.length), names.page(kept, items)) },
    );
    expect(all).toEqual([...api.nodes.keys()].sort());
    expect(pages).toEqual([50, 50, 50, 50, 50]);
    const asked = lists('/api/v1/nodes');
    expect(asked.map((q) => q.get('limit'))).toEqual(['50', '50', '50', '50', '50']);
    expect(asked.map((q) => q.has('continue'))).toEqual([false, true, true, true, true]);
    // what the caller looks for is found on the first page: the rest is not asked for
    const first = await kube.list({ path: '/api/v1/nodes', limit: 10 }, { ...names, done: (kept) => kept.includes('node-005') });
    expect(first).toHaveLength(10);
    expect(lists('/api/v1/nodes')).toHaveLength(6);
    kube.close();
  });

  it('an expired continue token (410 Gone): the list starts again from the first page, the caller starting again; a third expiry fails', async () => {
    const kube = KubeConnection.open(kubeconfig)!;
    api.chunks.expireContinues = 1;
    expect(await kube.list({ path: '/api/v1/nodes' }, names)).toEqual([...api.nodes.keys()].sort());
    // the first page, its continuation refused, then the whole list again
    expect(lists('/api/v1/nodes').map((q) => q.has('continue'))).toEqual([false, true, false, true, true, true, true]);
    api.chunks.expireContinues = 3;
    const err = await kube.list({ path: '/api/v1/nodes' }, names).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect((err as KubeApiError).status).toBe(410);
    expect(JSON.parse((err as KubeApiError).body)).toMatchObject({ reason: 'Expired', code: 410 });
    kube.close();
  });

  it('a server that hands back the continue token it was given is not read for ever', async () => {
    const kube = KubeConnection.open(kubeconfig)!;
    api.chunks.stuck = true;
    const err = await kube.list({ path: '/api/v1/nodes' }, names).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'KUBE_CLIENT_UNREADABLE', message: 'GET /api/v1/nodes: the list gave back the same continue token' });
    expect(lists('/api/v1/nodes')).toHaveLength(2);
    kube.close();
  });

  it('a server that says there is more at every page, under a new token each time, is read for a bounded number of pages', async () => {
    const kube = KubeConnection.open(kubeconfig)!;
    api.chunks.stuck = false;
    api.chunks.endless = true;
    const before = lists('/api/v1/nodes').length;
    try {
      const err = await kube.list({ path: '/api/v1/nodes', maxPages: 12 }, names).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'KUBE_CLIENT_UNREADABLE', message: 'GET /api/v1/nodes: the list did not end within 12 pages' });
      expect(lists('/api/v1/nodes').length - before).toBe(12);
    } finally {
      api.chunks.endless = false;
      kube.close();
    }
  });
});

describe('answers bounded before they are decoded', () => {
  it('an object over 3 MiB is KUBE_CLIENT_TOO_LARGE, never decoded; a page over 8 MiB is asked again in smaller pages; one item over 8 MiB fails', async () => {
    const big = new KubeStandIn();
    await big.start();
    try {
      const file = join(dir.path, 'big-kubeconfig');
      writeFileSync(file, big.kubeconfig());
      big.addNode('fat', {}, { annotations: { padding: 'x'.repeat(3 * 2 ** 20) } });
      for (let i = 0; i < 9; i++) big.addNode(`large-${i}`, {}, { annotations: { padding: 'x'.repeat(2 ** 20) } });
      const kube = KubeConnection.open(file)!;
      const one = await kube.request({ method: 'GET', path: '/api/v1/nodes/fat' }).catch((e: unknown) => e);
      expect(one).toBeInstanceOf(KubeTooLargeError);
      expect(one).toMatchObject({
        code: 'KUBE_CLIENT_TOO_LARGE',
        message: 'GET /api/v1/nodes/fat: the answer is larger than 3 MiB, the most kept for this call',
      });
      // a Node of 1 MiB is an object like any other
      expect(await kube.request({ method: 'GET', path: '/api/v1/nodes/large-0' })).toMatchObject({ metadata: { name: 'large-0' } });
      // ten Nodes of 1 to 3 MiB, 12 MiB on one page of 50: asked again 6 at a time (still over), then one at a time
      big.requests.length = 0;
      expect(await kube.list<Named, string[]>({ path: '/api/v1/nodes' }, names)).toEqual([...big.nodes.keys()].sort());
      const limits = big.requests.map((r) => new URL(r.path, 'https://x').searchParams.get('limit'));
      expect(limits).toEqual(['50', '6', ...Array.from({ length: 10 }, () => '1')]);
      // an item over 8 MiB (no API server keeps one: etcd takes none over 1.5 MiB) cannot be read
      big.addNode('huge', {}, { annotations: { padding: 'x'.repeat(9 * 2 ** 20) } });
      const page = await kube.list<Named, string[]>({ path: '/api/v1/nodes' }, names).catch((e: unknown) => e);
      expect(page).toMatchObject({
        code: 'KUBE_CLIENT_TOO_LARGE',
        message: 'GET /api/v1/nodes: the answer is larger than 8 MiB, the most kept for this call',
      });
      kube.close();
    } finally {
      await big.close();
    }
  });
});
