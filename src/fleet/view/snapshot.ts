/**
 * FleetReader: the whole fleet as its store holds it, read by the relay: every group's slots and
 * member records, and Azure's own records of the fleet's events, with one listing of the store
 * (one List Blobs request per 2,047 records, or one list of Leases). The relay keeps no state: a
 * snapshot is at most `cacheMs` old, and concurrent requests share one read, so the store is read
 * at most once per `cacheMs` however many requests and replicas ask (each replica reads for itself).
 */
import { messageOf } from '../../lib/errors.ts';
import { AZURE_GROUP, GROUP_NAME } from '../budget/config.ts';
import { groupOf, type GroupStatus } from '../budget/group.ts';
import type { FleetStoreConfig } from '../budget/stores/config.ts';
import { openFleetStore } from '../budget/stores/open.ts';
import type { FleetStore, Versioned } from '../budget/stores/port.ts';
import { AZURE_PREFIX, type AzureRecord } from './azure.ts';
import type { RecordSeal } from './seal.ts';
import { CALENDAR_PREFIX } from '../budget/member.ts';
import { digestOfText } from '../../calendar/calendar.ts';
import { CalendarConfig } from '../../calendar/config.ts';

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
  /** Records under Azure's group whose seal does not hold (written or edited by someone else than a relay): read as none. */
  readonly unsealed: number;
  /** The calendars members published (`calendar-<digest>`), by digest: each one whose text is its digest's, for the console to shade. */
  readonly calendars?: ReadonlyMap<string, CalendarConfig>;
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
  /** Opens Azure's records (null: the reader keeps none, and reads none). */
  readonly seal?: RecordSeal | null;
  /** Called at every read of the store (a metric: store reads per relay request). */
  readonly onRead?: (ok: boolean) => void;
}

/**
 * AzureRecords: Azure's records in the store, sealed as they are written and opened as they are
 * read: a record that does not open (a member wrote or edited it) reads as none, its version kept
 * so that a relay writes over it.
 */
export class AzureRecords {
  readonly #store: FleetStore;
  readonly #seal: RecordSeal;

  constructor(store: FleetStore, seal: RecordSeal) {
    this.#store = store;
    this.#seal = seal;
  }

  async get(name: string): Promise<{ readonly record: AzureRecord | null; readonly version: string } | null> {
    const current = await this.#store.get(name);
    return current === null ? null : { record: this.#seal.open(name, current.value), version: current.version };
  }

  /** put writes the record, sealed, over `version` (null: only when there is none); its new version, or null when another wrote first. */
  put(name: string, record: AzureRecord, version: string | null): Promise<string | null> {
    return this.#store.put(name, this.#seal.seal(name, record), version);
  }

  remove(name: string, version: string): Promise<boolean> {
    return this.#store.remove(name, version);
  }

  close(): Promise<void> {
    return this.#store.close();
  }
}

export class FleetReader {
  readonly #o: FleetReaderOptions;
  readonly #now: () => number;
  #all: FleetStore | null = null;
  #azure: AzureRecords | null = null;
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
    const seal = this.#o.seal ?? null;
    if (seal !== null) this.#azure = new AzureRecords(await openFleetStore(this.#o.store, AZURE_GROUP, this.#o.timeoutMs), seal);
  }

  /** azure: Azure's records of the fleet's events, sealed (a reader with a seal only). */
  get azure(): AzureRecords {
    if (this.#azure === null) throw new Error('FleetReader.open() first, with a seal');
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
      this.#last = snapshotOf(records, this.#all.where, readAt, { budgets: this.#o.budgets, seal: this.#o.seal ?? null });
      this.#lastError = null;
    } catch (err) {
      this.#o.onRead?.(false);
      this.#lastError = messageOf(err);
      // a failed read never looks like an empty fleet: it says what could not be read
      const unread = [{ what: 'the fleet store', why: messageOf(err) }];
      return { readAt, store: this.#all.where, groups: [], azure: [], unsealed: 0, unread };
    }
    return this.#last;
  }
}

/**
 * snapshotOf: the store's records (named `<group>/<name>`) as groups (each with the budget stated
 * for it, if any) and Azure's records (those whose seal holds; none without a seal).
 */
export function snapshotOf(
  records: readonly Versioned[],
  where: string,
  now: number,
  o: { readonly budgets?: FleetReaderOptions['budgets']; readonly seal?: RecordSeal | null } = {},
): FleetSnapshot {
  const budgets = o.budgets ?? {};
  const byGroup = new Map<string, Versioned[]>();
  for (const r of records) {
    const slash = r.name.indexOf('/');
    if (slash <= 0) continue;
    const group = r.name.slice(0, slash);
    const list = byGroup.get(group) ?? [];
    list.push({ ...r, name: r.name.slice(slash + 1) });
    byGroup.set(group, list);
  }
  const kept = (byGroup.get(AZURE_GROUP) ?? []).filter((r) => r.name.startsWith(AZURE_PREFIX));
  const azure = kept.flatMap((r) => {
    const record = o.seal?.open(r.name, r.value) ?? null;
    return record === null ? [] : [{ name: r.name, version: r.version, record }];
  });
  byGroup.delete(AZURE_GROUP);
  // a folder no member could name as its group (written by hand) is no group
  const groups = [...byGroup.entries()]
    .filter(([group]) => GROUP_NAME.test(group))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([group, list]) => groupOf({ group, maxUnavailable: budgets[group]?.maxUnavailable, store: `${where}/${group}` }, list, [], now))
    .filter((g) => g.members.length > 0 || g.slots.length > 0 || g.pause !== null);
  const calendars = publishedCalendars([...byGroup.values()].flat(), groups);
  return { readAt: now, store: where, groups, azure, unsealed: o.seal == null ? 0 : kept.length - azure.length, unread: [], calendars };
}

/** The most calendars a snapshot keeps, and the most windows and blackouts one may have: a member may write anything. */
const MOST_CALENDARS = 100;
const MOST_RULES = 50;

/** The calendars read lately, by digest (a calendar's text is its digest's: the same digest, the same calendar). */
const read = new Map<string, CalendarConfig | null>();

/**
 * publishedCalendars: the calendars members published that a member's record names, each named by
 * the digest of its text as written (what a member's record names), read by the calendar's own
 * schema; one whose text is not its name's, that does not read, or that has more rules than a
 * person writes, is none. Past MOST_CALENDARS, those named by the most members are kept: a
 * member that writes calendars no member names, or names one of its own, takes none from a group.
 */
function publishedCalendars(records: readonly Versioned[], groups: readonly GroupStatus[]): ReadonlyMap<string, CalendarConfig> {
  const named = new Map<string, number>();
  for (const m of groups.flatMap((g) => g.members))
    if (m.calendar !== undefined) named.set(m.calendar.digest, (named.get(m.calendar.digest) ?? 0) + 1);
  const found = new Map<string, CalendarConfig>();
  for (const r of records) {
    const digest = r.name.slice(CALENDAR_PREFIX.length);
    if (!r.name.startsWith(CALENDAR_PREFIX) || !named.has(digest) || found.has(digest) || r.value === undefined) continue;
    if (digestOfText(JSON.stringify(r.value)) !== digest) continue;
    let config = read.get(digest);
    if (config === undefined) {
      const parsed = CalendarConfig.safeParse(r.value);
      config = parsed.success && parsed.data.windows.length + parsed.data.blackouts.length <= MOST_RULES ? parsed.data : null;
      if (read.size >= 10 * MOST_CALENDARS) read.clear();
      read.set(digest, config);
    }
    if (config !== null) found.set(digest, config);
  }
  const most = [...found.keys()].sort((a, b) => named.get(b)! - named.get(a)! || (a < b ? -1 : 1)).slice(0, MOST_CALENDARS);
  return new Map(most.map((d) => [d, found.get(d)!]));
}
