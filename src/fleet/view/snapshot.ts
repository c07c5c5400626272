/**
 * FleetReader: the whole fleet as its store holds it, read by the relay: every group's slots and
 * member records, and Azure's own records of the fleet's events, with one listing of the store
 * (one List Blobs request per 2,047 records, or one list of Leases). The relay keeps no state: a
 * snapshot is at most `cacheMs` old, and concurrent requests share one read, so the store is read
 * at most once per `cacheMs` however many requests and replicas ask (each replica reads for itself).
 */
import { messageOf } from '../../lib/errors.ts';
import { AZURE_GROUP } from '../budget/config.ts';
import { groupOf, type GroupStatus } from '../budget/group.ts';
import type { FleetStoreConfig } from '../budget/stores/config.ts';
import { openFleetStore } from '../budget/stores/open.ts';
import type { FleetStore, Versioned } from '../budget/stores/port.ts';
import { AZURE_PREFIX, AzureRecordSchema, type AzureRecord } from './azure.ts';

export interface KeptAzureRecord {
  readonly name: string;
  readonly version: string;
  readonly record: AzureRecord;
}

export interface FleetSnapshot {
  /** When the store was read (epoch ms). */
  readonly readAt: number;
  readonly store: string;
  readonly groups: readonly GroupStatus[];
  readonly azure: readonly KeptAzureRecord[];
  /** What could not be read, and why (the store did not answer): the snapshot is then empty, and says so. */
  readonly unread: readonly { readonly what: string; readonly why: string }[];
}

export interface FleetReaderOptions {
  readonly store: FleetStoreConfig;
  readonly timeoutMs: number;
  /** How old a snapshot may be before a request reads the store again. */
  readonly cacheMs: number;
  readonly now?: () => number;
  /** Each group's budget as the reader states it (the relay's `fleet.groups`), else as its records say. */
  readonly budgets?: Readonly<Record<string, { readonly maxUnavailable: number | string }>>;
  /** Called at every read of the store (a metric: store reads per relay request). */
  readonly onRead?: (ok: boolean) => void;
}

export class FleetReader {
  readonly #o: FleetReaderOptions;
  readonly #now: () => number;
  #all: FleetStore | null = null;
  #azure: FleetStore | null = null;
  #last: FleetSnapshot | null = null;
  #reading: Promise<FleetSnapshot> | null = null;
  #lastError: string | null = null;

  constructor(o: FleetReaderOptions) {
    this.#o = o;
    this.#now = o.now ?? Date.now;
  }

  /** open loads the store's client library (nothing is requested yet). */
  async open(): Promise<void> {
    this.#all = await openFleetStore(this.#o.store, '', this.#o.timeoutMs);
    this.#azure = await openFleetStore(this.#o.store, AZURE_GROUP, this.#o.timeoutMs);
  }

  /** azureStore: where Azure's records of the fleet's events are written. */
  get azureStore(): FleetStore {
    if (this.#azure === null) throw new Error('FleetReader.open() first');
    return this.#azure;
  }

  /** read: a snapshot at most `maxAgeMs` old (one read of the store shared by every caller meanwhile). */
  read(maxAgeMs: number = this.#o.cacheMs): Promise<FleetSnapshot> {
    const last = this.#last;
    if (last !== null && this.#now() - last.readAt <= maxAgeMs) return Promise.resolve(last);
    this.#reading ??= this.#read().finally(() => (this.#reading = null));
    return this.#reading;
  }

  /** state: the store, when it was last read and, when the last read failed, why (for /readyz). */
  state(): { store: string | null; readAt: string | null; lastError: string | null } {
    const at = this.#last?.readAt;
    return { store: this.#all?.where ?? null, readAt: at === undefined ? null : new Date(at).toISOString(), lastError: this.#lastError };
  }

  async close(): Promise<void> {
    await this.#all?.close();
    await this.#azure?.close();
  }

  async #read(): Promise<FleetSnapshot> {
    if (this.#all === null) throw new Error('FleetReader.open() first');
    const readAt = this.#now();
    try {
      const records = await this.#all.list('');
      this.#o.onRead?.(true);
      this.#last = snapshotOf(records, this.#all.where, readAt, this.#o.budgets);
      this.#lastError = null;
    } catch (err) {
      this.#o.onRead?.(false);
      this.#lastError = messageOf(err);
      // a failed read never looks like an empty fleet: it says what could not be read
      return { readAt, store: this.#all.where, groups: [], azure: [], unread: [{ what: 'the fleet store', why: messageOf(err) }] };
    }
    return this.#last;
  }
}

/** snapshotOf: the store's records (named `<group>/<name>`) as groups (each with the budget stated for it, if any) and Azure records. */
export function snapshotOf(
  records: readonly Versioned[],
  where: string,
  now: number,
  budgets: FleetReaderOptions['budgets'] = {},
): FleetSnapshot {
  const byGroup = new Map<string, Versioned[]>();
  for (const r of records) {
    const slash = r.name.indexOf('/');
    if (slash <= 0) continue;
    const group = r.name.slice(0, slash);
    const list = byGroup.get(group) ?? [];
    list.push({ ...r, name: r.name.slice(slash + 1) });
    byGroup.set(group, list);
  }
  const azure = (byGroup.get(AZURE_GROUP) ?? []).flatMap((r) => {
    if (!r.name.startsWith(AZURE_PREFIX)) return [];
    const parsed = AzureRecordSchema.safeParse(r.value);
    return parsed.success ? [{ name: r.name, version: r.version, record: parsed.data }] : [];
  });
  byGroup.delete(AZURE_GROUP);
  const groups = [...byGroup.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([group, list]) => groupOf({ group, maxUnavailable: budgets[group]?.maxUnavailable, store: `${where}/${group}` }, list, [], now))
    .filter((g) => g.members.length > 0 || g.slots.length > 0);
  return { readAt: now, store: where, groups, azure, unread: [] };
}
