/**
 * watchRecords: a group's records of one kind kept current by a Kubernetes watch, as an informer
 * keeps its cache: a list (its resourceVersion), then watches from there, each from the
 * resourceVersion of the last event or bookmark seen, one after another while the caller's signal
 * lasts. Every change is handed on with the records as they stand after it.
 *
 * - 410 Expired (the watch's RV is older than what the server keeps): listed again at once; another
 *   within 30 s is a failure as below (a server that expires every watch is not asked in a loop).
 * - Any other failure: `seen(null)` (what it said is no longer known to be current), then listed
 *   again after a pause that doubles from 1 s to 30 s; a watch that ends within a second of its
 *   start pauses too (doubling likewise), so a server that ends each watch at once is not asked in
 *   a loop.
 * - At most MAX_RECORDS records: more is a failure (no group's slots are that many).
 * - Each event's object is read against a schema; one that is no Lease of ours changes nothing.
 */
import { z } from 'zod';
import { KubeApiError, type KubeConnection } from '../../../kube/client.ts';
import { watchOnce } from '../../../kube/watch.ts';
import { sleep } from '../../../lib/time.ts';
import { FleetStoreError, type Versioned } from './port.ts';

/** The parts of a coordination.k8s.io/v1 Lease this store reads and writes. */
export interface V1Lease {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: { holderIdentity?: string; renewTime?: string };
}

/** A watch event's object, as far as it is read: a Lease's metadata. */
const LeaseObject = z.object({
  metadata: z.object({
    name: z.string(),
    resourceVersion: z.string(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
  }),
});
const Bookmark = z.object({ metadata: z.object({ resourceVersion: z.string() }) });

/** How long the server keeps one watch open (the next starts from where it ended). */
const WATCH_SECONDS = 45;
const FIRST_PAUSE_MS = 1000;
/** The most records one watch keeps: a group's slots are a few hundred at most; more is no group of ours, and fails. */
const MAX_RECORDS = 10_000;
const MAX_PAUSE_MS = 30_000;

/** What a watch hands on: the records after each change, or null and why while it is down. */
export type Seen = (records: readonly Versioned[] | null, why?: FleetStoreError) => void;

export interface WatchTarget {
  readonly kube: KubeConnection;
  /** The Leases' collection, and the selector of the records watched. */
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  /** A Lease's record, or null when it is none of those watched. */
  readonly recordOf: (lease: V1Lease) => Versioned | null;
  /** What a failure is said as (the store's error). */
  readonly failure: (err: unknown) => FleetStoreError;
}

export async function watchRecords(t: WatchTarget, signal: AbortSignal, seen: Seen): Promise<void> {
  let pause = FIRST_PAUSE_MS;
  /** When the last 410 was listed again at once: another soon after it pauses as any failure does. */
  let expiredAt = Number.NEGATIVE_INFINITY;
  while (!signal.aborted) {
    try {
      const { records, rv } = await listed(t, signal);
      seen([...records.values()]);
      for (let from = rv; ;) {
        const started = Date.now();
        await watchOnce(t.kube, { path: t.path, query: t.query, resourceVersion: from, timeoutSeconds: WATCH_SECONDS, signal }, (e) => {
          if (e.type === 'BOOKMARK') {
            const b = Bookmark.safeParse(e.object);
            if (b.success) from = b.data.metadata.resourceVersion;
            return;
          }
          const lease = LeaseObject.safeParse(e.object);
          if (!lease.success) return;
          from = lease.data.metadata.resourceVersion;
          const record = t.recordOf(lease.data);
          const name = lease.data.metadata.name;
          if (e.type === 'DELETED' || record === null) records.delete(name);
          else records.set(name, record);
          if (records.size > MAX_RECORDS) throw tooMany();
          seen([...records.values()]);
        });
        // a watch that ends within a second of its start, events or not, is not asked again in a loop
        if (Date.now() - started < FIRST_PAUSE_MS) {
          await sleep(pause, signal);
          pause = Math.min(MAX_PAUSE_MS, pause * 2);
        } else pause = FIRST_PAUSE_MS;
      }
    } catch (err) {
      if (signal.aborted) return;
      // 410 Expired: the changes since the RV are gone; a new list says where things stand
      if (err instanceof KubeApiError && err.status === 410 && Date.now() - expiredAt >= MAX_PAUSE_MS) {
        expiredAt = Date.now();
        continue;
      }
      seen(null, t.failure(err));
      await sleep(pause, signal).catch(() => undefined);
      pause = Math.min(MAX_PAUSE_MS, pause * 2);
    }
  }
}

const tooMany = () => new FleetStoreError('watch slot-*', `more than ${MAX_RECORDS} records: no group's slots are this many`);

/** listed: the records as a list reads them, and the list's resourceVersion (where the watch starts). */
async function listed(t: WatchTarget, signal: AbortSignal): Promise<{ records: Map<string, Versioned>; rv: string }> {
  let rv: string | undefined;
  const records = await t.kube.list<V1Lease, Map<string, Versioned>>(
    { path: t.path, query: t.query, limit: 500, signal },
    {
      // a list started again (its continue token expired) starts from its own resourceVersion
      start: () => ((rv = undefined), new Map()),
      page: (kept, items, version) => {
        rv ??= version;
        for (const l of items) {
          const record = t.recordOf(l);
          if (record !== null && l.metadata?.name !== undefined) kept.set(l.metadata.name, record);
        }
        if (kept.size > MAX_RECORDS) throw tooMany();
        return kept;
      },
    },
  );
  if (rv === undefined) throw new KubeApiError(`GET ${t.path}`, 500, 'the list carries no resourceVersion to watch from');
  return { records, rv };
}
