/**
 * The queue's entries: each member waiting for a slot keeps one small record, named in the queue's
 * order (queue.ts: the earliest NotBefore, then held first, then by member key):
 * `queue-<NotBefore>-<held since>-<member>` once its automatic approval is held, and before that,
 * while it may ask now, `asking-<NotBefore>-<member>`. A member learns its place by reading the
 * head of the queue, one page of the store's listing (`FleetStore.head`: twice the group's slots
 * and a few more; the page of those asking too at its first ask), never every member's record:
 * what a look at the queue costs grows with the budget, not with the group. A member beyond the
 * page knows only that its turn has not come. An entry is named anew once held, renewed at the
 * heartbeats, and removed once granted or no longer Scheduled. One left by a member that stopped
 * counts for nobody once it is three of its heartbeats old, like its member record, and a member
 * with nobody ahead of it removes it.
 */
import { QueueEntrySchema } from './schemas.ts';
import { ASKING_PREFIX, QUEUE_PREFIX, staleAt, type MemberRecord } from './records.ts';
import { inOrder, QUEUED_VIA, waiterOf, type Candidates, type Waiter } from './queue-order.ts';
import type { FleetStore, Versioned } from './stores/port.ts';
import type { RecordWarnings } from './parse.ts';
import type { z } from 'zod';

export type QueueEntry = z.infer<typeof QueueEntrySchema>;
/** What a member writes of its entry; the writer stamps its heartbeat. */
export type EntryParts = Omit<QueueEntry, 'heartbeatAt' | 'heartbeatSeconds'>;

/** headSize: the entries read at a look: those that may take the free slots before this member, those holding a slot still listed, and a margin. */
export const headSize = (k: number): number => 2 * k + 8;

/** The key of a time in an entry's name: 13 digits of milliseconds, so the names sort as the times do. */
const LAST = 9_999_999_999_999;
const keyOf = (iso: string | null, otherwise: number): string => {
  const t = iso === null ? NaN : Date.parse(iso);
  return String(Number.isFinite(t) ? Math.max(0, Math.min(LAST, t)) : otherwise).padStart(13, '0');
};

/** entryName: an entry's name, in the queue's order among the entries of its prefix (held, or asking). */
export const entryName = (e: EntryParts): string =>
  e.since === null
    ? `${ASKING_PREFIX}${keyOf(e.notBefore, 0)}-${e.member}`
    : `${QUEUE_PREFIX}${keyOf(e.notBefore, 0)}-${keyOf(e.since, LAST)}-${e.member}`;

/** orderOf: where an entry stands in the queue, as text that sorts so (an approval not held yet after every held one of its NotBefore). */
const orderOf = (e: EntryParts): string => `${keyOf(e.notBefore, 0)}-${keyOf(e.since, LAST)}-${e.member}`;

/**
 * wantedEntry: the entry a member keeps, from its record: its earliest maintenance Scheduled, not
 * approved, and not held, or held for an automatic approval (a person told "held" asks again or
 * not); null: none.
 */
export function wantedEntry(record: Pick<MemberRecord, 'member' | 'vm' | 'events'>): EntryParts | null {
  const entries = record.events.flatMap((e): EntryParts[] => {
    if (e.status !== 'Scheduled' || e.approved || (e.held !== undefined && !QUEUED_VIA.has(e.held.via ?? ''))) return [];
    const [since, need] = [e.held?.since ?? null, e.held?.need ?? 1];
    return [{ member: record.member, vm: record.vm, eventId: e.eventId, notBefore: e.notBefore || null, since, need }];
  });
  return entries.sort((a, b) => (orderOf(a) < orderOf(b) ? -1 : orderOf(a) > orderOf(b) ? 1 : 0))[0] ?? null;
}

/** entriesOf: the entries of a listing that read by their schema and stand where their names say (an entry named otherwise is nobody's). */
const entriesOf = (records: readonly Versioned[]): QueueEntry[] =>
  records.flatMap((r) => {
    const e = QueueEntrySchema.safeParse(r.value);
    return e.success && r.name === entryName(e.data) ? [e.data] : [];
  });

/** waiterIn: an entry as a waiter in the queue. */
const waiterIn = (e: QueueEntry, now: number): Waiter =>
  waiterOf(e.member, e.vm, { eventId: e.eventId, notBefore: e.notBefore }, e.since ?? undefined, now, e.need);

/**
 * waitersIn: the waiters of a listing of entries, in the queue's order: not `me`, not stale, not
 * holding a slot (`down`), and, unless `asking`, held; each member once, by the entry it wrote
 * last (one it left as it named its entry anew, or before a restart, is not where it stands).
 */
export function waitersIn(records: readonly Versioned[], me: string, now: number, asking: boolean, down?: ReadonlySet<string>): Waiter[] {
  const latest = new Map<string, QueueEntry>();
  for (const e of entriesOf(records)) {
    const seen = latest.get(e.member);
    if (seen === undefined || Date.parse(e.heartbeatAt) > Date.parse(seen.heartbeatAt)) latest.set(e.member, e);
  }
  return [...latest.values()]
    .filter((e) => e.member !== me && !staleAt(e, now) && down?.has(e.vm) !== true && (asking || e.since !== null))
    .map((e) => waiterIn(e, now))
    .sort(inOrder);
}

/** aheadOf: whether the record stands ahead of `me` in the queue (one that does not read may: it is taken to). */
const aheadOf = (r: Versioned, me: Waiter, now: number): boolean => {
  const e = entriesOf([r])[0];
  return e === undefined || inOrder(waiterIn(e, now), me) < 0;
};

/** How many stale entries the head of the queue removes at a look. */
const PRUNE_AT_A_LOOK = 2;

export class QueueEntries {
  readonly #store: FleetStore;
  readonly #heartbeatSeconds: number;
  /** The entry this member wrote last: its name, version, and when. */
  #mine: { readonly name: string; readonly version: string; readonly at: number } | null = null;

  readonly #warnings: RecordWarnings | undefined;

  constructor(store: FleetStore, heartbeatSeconds: number, warnings?: RecordWarnings) {
    this.#store = store;
    this.#heartbeatSeconds = heartbeatSeconds;
    this.#warnings = warnings;
  }

  /**
   * sync keeps this member's entry as `want` says (null: none): written when it is new or named
   * anew (the old one removed after), renewed at a heartbeat (`renew`) half a heartbeat or more
   * after it was written, removed when nothing waits. Store failures are thrown.
   */
  async sync(want: EntryParts | null, now: number, renew: boolean): Promise<void> {
    const name = want === null ? null : entryName(want);
    const mine = this.#mine;
    const same = mine !== null && mine.name === name;
    if (same && !(renew && now - mine.at >= (this.#heartbeatSeconds * 1000) / 2)) return;
    if (want !== null && name !== null) {
      const entry: QueueEntry = { ...want, heartbeatAt: new Date(now).toISOString(), heartbeatSeconds: this.#heartbeatSeconds };
      let version = await this.#store.put(name, entry, same ? mine.version : null);
      // there already (this member before a restart, or a write it lost track of): written over the version read
      if (version === null) version = await this.#store.put(name, entry, (await this.#store.get(name))?.version ?? null);
      this.#mine = version === null ? null : { name, version, at: now };
    }
    // the old entry goes once the new one is there; gone already or overtaken: nothing to do
    if (mine !== null && !same) await this.#store.remove(mine.name, mine.version);
    if (want === null) this.#mine = null;
  }

  /**
   * read: the head of the queue (and, for a first ask, of those asking too), as the waiters that
   * may stand ahead of `me` (see waitersIn); `partial` when a full page ends with an entry still
   * ahead of it (more may stand between). A record there of another shape is named once. The
   * member with nobody ahead (`down`: the VMs holding a slot) removes a few stale entries.
   */
  async read(k: number, me: Waiter, now: number, down: ReadonlySet<string>, asking: boolean): Promise<Candidates> {
    const size = headSize(k);
    const pages = await Promise.all([QUEUE_PREFIX, ...(asking ? [ASKING_PREFIX] : [])].map((p) => this.#store.head(p, size)));
    const head = pages.flat();
    this.#warnings?.check(head);
    const partial = pages.some((page) => page.length >= size && aheadOf(page.at(-1)!, me, now));
    if (waitersIn(head, me.member, now, true, down).every((w) => inOrder(w, me) >= 0)) await this.#prune(head, now);
    return Object.assign((a: boolean, d?: ReadonlySet<string>) => waitersIn(head, me.member, now, a, d), { partial });
  }

  /**
   * atLimit: `me` is among the first `k` in the queue's head (those asking too) that must wait: as
   * many stand ahead of it, or hold a slot (`down`, the VMs holding one), as the group has slots
   * (`k`), or up to k - 1 more (with more down than that already, counted from the head). A few
   * members, whatever the group's size, and one of them still waits as the queue moves fast. It
   * answers how far past the limit `me` stands (0: the first at it), or null when it is not among them.
   */
  async atLimit(k: number, me: Waiter, now: number, down: ReadonlySet<string>): Promise<number | null> {
    const head = await this.read(k, me, now, down, true);
    const ahead = head(true, down).filter((w) => w.eventId !== me.eventId && inOrder(w, me) < 0).length;
    const limit = Math.max(0, k - down.size);
    return !head.partial && ahead >= limit && ahead < limit + k ? ahead - limit : null;
  }

  async #prune(head: readonly Versioned[], now: number): Promise<void> {
    const gone = head.filter((r) => {
      const e = entriesOf([r])[0];
      return e !== undefined && staleAt(e, now);
    });
    for (const r of gone.slice(0, PRUNE_AT_A_LOOK)) await this.#store.remove(r.name, r.version);
  }
}

/** earliestScheduled: of a member's events, the Scheduled one with the earliest NotBefore (one without any first). */
export function earliestScheduled<E extends { readonly eventStatus: string; readonly notBefore: string | null }>(
  events: readonly E[],
): E | undefined {
  const at = (e: E) => Date.parse(e.notBefore ?? '') || 0;
  return events.filter((e) => e.eventStatus === 'Scheduled').sort((a, b) => at(a) - at(b))[0];
}
