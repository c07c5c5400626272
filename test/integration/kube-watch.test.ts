/**
 * Kubernetes watches: the client's one watch (src/kube/watch.ts) and the Lease store's records kept
 * current by list and watch (src/fleet/budget/stores/lease-watch.ts). Against
 * testkit/kube-apiserver.ts, a stand-in for the API server written from the API reference (no API
 * server runs on this machine), which serves watches as the API server does: one JSON event a
 * line, changes after the resourceVersion asked, ERROR 410 for one older than it keeps
 * (testkit/kube-watch.ts).
 */
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { KubeApiError, KubeConnection, KubeUnreadableError } from '../../src/kube/client.ts';
import { watchOnce, type WatchEvent } from '../../src/kube/watch.ts';
import { LeaseFleetStore } from '../../src/fleet/budget/stores/lease.ts';
import type { Versioned } from '../../src/fleet/budget/stores/port.ts';
import type { KubeStandIn } from '../../testkit/kube-apiserver.ts';
import { leaseStorePerFile } from '../../testkit/fleet-stores.ts';
import { raw, refusal } from '../../testkit/kube-faults.ts';
import { waitFor } from '../helpers.ts';

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
  api.leases.leases.clear();
  api.leases.watches.keep = 1000;
  api.leases.watches.expireNext = 0;
});

const lease = (name: string, group: string, rv?: string) => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: { name, namespace: NS, labels: { team: group }, ...(rv === undefined ? {} : { resourceVersion: rv }) },
  spec: { holderIdentity: name },
});
type Written = { metadata: { resourceVersion: string } };

/** listRv: the resourceVersion of a list of the Leases now (where a watch starts). */
async function listRv(kube: KubeConnection): Promise<string> {
  let rv = '';
  await kube.list({ path: LEASES }, { start: () => null, page: (_k, _items, v) => ((rv = v ?? ''), null) });
  return rv;
}

const seen = (events: WatchEvent[]) => events.map((e) => [e.type, (e.object as { metadata?: { name?: string } }).metadata?.name]);

describe('one watch', () => {
  it('from a list, every change after it to the Leases its selector takes, in order; each Lease as it was then', async () => {
    const kube = KubeConnection.open(kubeconfig)!;
    const from = await listRv(kube);
    const a = await kube.request<Written>({ method: 'POST', path: LEASES, body: lease('a', 'x') });
    await kube.request({ method: 'POST', path: LEASES, body: lease('b', 'y') });
    const a2 = await kube.request<Written>({ method: 'PUT', path: `${LEASES}/a`, body: lease('a', 'x', a.metadata.resourceVersion) });
    await kube.request({ method: 'DELETE', path: `${LEASES}/a` });
    const events: WatchEvent[] = [];
    const stop = new AbortController();
    const watching = watchOnce(
      kube,
      { path: LEASES, query: { labelSelector: 'team=x' }, resourceVersion: from, timeoutSeconds: 60, signal: stop.signal },
      (e) => events.push(e),
    );
    await waitFor(() => events.length >= 3, 'the three changes to a', 10_000, 20);
    // and a change made while it is open
    await kube.request({ method: 'POST', path: LEASES, body: lease('c', 'x') });
    await waitFor(() => events.length >= 4, 'the change made while open', 10_000, 20);
    stop.abort();
    await watching.catch(() => undefined);
    expect(seen(events)).toEqual([
      ['ADDED', 'a'],
      ['MODIFIED', 'a'],
      ['DELETED', 'a'],
      ['ADDED', 'c'],
    ]);
    expect((events[1]!.object as Written).metadata.resourceVersion).toBe(a2.metadata.resourceVersion);
    const asked = new URL(api.requests.findLast((r) => r.path.includes('watch='))!.path, 'https://x').searchParams;
    expect(Object.fromEntries(asked)).toMatchObject({
      watch: '1',
      resourceVersion: from,
      allowWatchBookmarks: 'true',
      timeoutSeconds: '60',
    });
    kube.close();
  });

  it('ends when the server ends it (its timeoutSeconds), with the bookmarks it sent in between', async () => {
    const kube = KubeConnection.open(kubeconfig)!;
    api.leases.watches.bookmarkMs = 100;
    try {
      const events: WatchEvent[] = [];
      const from = await listRv(kube);
      await watchOnce(kube, { path: LEASES, resourceVersion: from, timeoutSeconds: 1 }, (e) => events.push(e));
      expect(events.length).toBeGreaterThan(0);
      expect(new Set(events.map((e) => e.type))).toEqual(new Set(['BOOKMARK']));
      expect((events[0]!.object as Written).metadata.resourceVersion).toBe(from);
    } finally {
      api.leases.watches.bookmarkMs = 5000;
      kube.close();
    }
  });

  it('from a resourceVersion older than the server keeps: the ERROR event is a KubeApiError 410', async () => {
    const kube = KubeConnection.open(kubeconfig)!;
    const from = await listRv(kube);
    api.leases.watches.keep = 2;
    for (const name of ['a', 'b', 'c', 'd']) await kube.request({ method: 'POST', path: LEASES, body: lease(name, 'x') });
    const events: WatchEvent[] = [];
    const err = await watchOnce(kube, { path: LEASES, resourceVersion: from, timeoutSeconds: 60 }, (e) => events.push(e)).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(KubeApiError);
    expect((err as KubeApiError).status).toBe(410);
    expect(JSON.parse((err as KubeApiError).body)).toMatchObject({ kind: 'Status', reason: 'Expired', code: 410 });
    expect(events).toEqual([]);
    kube.close();
  });

  it.each([
    ['a line that is not JSON', '{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}\nnot json\n', /an event is not JSON/],
    ['an event of no known type', '{"type":"PATCHED","object":{}}\n', /an event is not a watch event/],
    ['an event without an object', '{"type":"ADDED"}\n', /an event is not a watch event/],
  ])('%s: KUBE_CLIENT_UNREADABLE, and nothing after it is handed on', async (_what, body, said) => {
    const kube = KubeConnection.open(kubeconfig)!;
    api.faults.next(LEASES, raw(200, 'application/json', `${body}{"type":"ADDED","object":{"metadata":{"name":"late"}}}\n`));
    const events: WatchEvent[] = [];
    const err = await watchOnce(kube, { path: LEASES, resourceVersion: '1', timeoutSeconds: 60 }, (e) => events.push(e)).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(KubeUnreadableError);
    expect((err as Error).message).toMatch(said);
    expect(events.every((e) => e.type === 'BOOKMARK')).toBe(true);
    kube.close();
  });

  it('a refusal (403) is a KubeApiError with the Status, no event', async () => {
    const kube = KubeConnection.open(kubeconfig)!;
    api.faults.next(LEASES, refusal(403));
    const err = await watchOnce(kube, { path: LEASES, resourceVersion: '1', timeoutSeconds: 60 }, () => undefined).catch((e: unknown) => e);
    expect((err as KubeApiError).status).toBe(403);
    kube.close();
  });
});

describe("the Lease store's watch", () => {
  async function watched(prefix: string) {
    const store = await LeaseFleetStore.open({ type: 'kubernetes', namespace: NS, kubeconfig }, 'g1');
    const calls: (readonly Versioned[] | null)[] = [];
    const stop = new AbortController();
    const done = store.watch(prefix, stop.signal, (records) => calls.push(records));
    const names = () => calls.map((c) => (c === null ? null : c.map((r) => r.name).sort()));
    return { store, calls, names, stop: async () => (stop.abort(), await done, await store.close()) };
  }

  it('hands on the records once listed, then after each change, of its group and prefix only', async () => {
    const other = await LeaseFleetStore.open({ type: 'kubernetes', namespace: NS, kubeconfig }, 'g2');
    const writer = await LeaseFleetStore.open({ type: 'kubernetes', namespace: NS, kubeconfig }, 'g1');
    const v1 = await writer.put('slot-1', { member: 'm1' }, null);
    const w = await watched('slot-');
    await waitFor(() => w.calls.length >= 1 && api.leases.watches.open >= 1, 'the list and the watch', 10_000, 20);
    const v2 = await writer.put('slot-2', { member: 'm2' }, null);
    await writer.put('member-m1', { member: 'm1' }, null);
    await other.put('slot-1', { member: 'x' }, null);
    await writer.put('slot-1', { member: null }, v1);
    await writer.remove('slot-2', v2!);
    await waitFor(() => w.calls.length >= 4, 'three changes', 10_000, 20);
    await w.stop();
    expect(w.names()).toEqual([['slot-1'], ['slot-1', 'slot-2'], ['slot-1', 'slot-2'], ['slot-1']]);
    expect(w.calls[2]!.find((r) => r.name === 'slot-1')!.value).toEqual({ member: null });
    await Promise.all([other.close(), writer.close()]);
  });

  it('a watch expired (410) is listed again and goes on, with no gap said; another failure says null until it is back', async () => {
    const writer = await LeaseFleetStore.open({ type: 'kubernetes', namespace: NS, kubeconfig }, 'g1');
    const w = await watched('slot-');
    await waitFor(() => w.calls.length >= 1 && api.leases.watches.open >= 1, 'the list and the watch', 10_000, 20);
    // the server ends the watch; the next one from its resourceVersion is expired: a list, then a watch from it
    api.leases.watches.expireNext = 1;
    const lists = () => api.requests.filter((r) => r.path.startsWith(`${LEASES}?`) && !r.path.includes('watch=')).length;
    const listed = lists();
    api.leases.watches.endAll();
    await waitFor(() => lists() > listed && api.leases.watches.open >= 1, 'the list after the 410, and a watch again', 10_000, 20);
    await writer.put('slot-1', { member: 'm1' }, null);
    await waitFor(() => w.calls.some((c) => c?.length === 1), 'the change after it', 10_000, 20);
    expect(w.calls.includes(null)).toBe(false);
    // a refusal: said as null, then listed again (after a pause) and current
    api.faults.next(LEASES, refusal(500));
    api.leases.watches.endAll();
    await waitFor(() => w.calls.includes(null), 'the failure said', 10_000, 20);
    await waitFor(() => w.calls.at(-1) !== null && api.leases.watches.open >= 1, 'listed and watched again', 15_000, 20);
    await writer.put('slot-2', { member: 'm2' }, null);
    await waitFor(() => w.calls.at(-1)?.length === 2, 'the change after it', 10_000, 20);
    await w.stop();
    // stopped: its connection is let go
    await waitFor(() => api.leases.watches.open === 0, 'the watch closed at the server', 10_000, 20);
    await writer.close();
  });
});
