/**
 * Journal: the last IMDS document and every CloudEvent produced from it. `commit` writes a
 * new document, its CloudEvents and their outbox rows in one transaction, so after a crash
 * either all of a change is recorded or none of it is, and the next poll diffs against
 * exactly what was last committed.
 */
import type { EventsDocument } from '../imds/wire.ts';
import type { EventData } from '../pipeline/cloudevent.ts';
import { deepFreeze } from '../lib/freeze.ts';
import { damaged, StoreError, type Db } from './db.ts';
import { messageOf } from '../lib/errors.ts';

export interface StoredDocument {
  readonly document: EventsDocument;
  readonly etag: string | null;
  readonly observedAt: string;
}

export interface PendingEvent {
  /** The CloudEvent id. */
  readonly id: string;
  /** The IMDS EventId: order is kept per EventId within a sink. */
  readonly eventId: string;
  readonly transition: string;
  /** The CloudEvent in the JSON event format. */
  readonly json: string;
  /** The sinks that should receive it. */
  readonly sinks: readonly string[];
  /** For transitions: the occurrence key and which occurrence this is (see cloudEventId). */
  readonly occurrence?: { readonly key: string; readonly n: number } | undefined;
  /**
   * For an end (canceled, completed): the preparations whose rows of the ended occurrence are
   * still pending; they stop (delivered as superseded, not dead-lettered) in the same commit.
   */
  readonly supersedes?: readonly string[] | undefined;
  /** Sinks whose row waits until `until` (epoch ms): preparations deferred to a maintenance window (Outbox.release sends them sooner). */
  readonly deferred?: { readonly sinks: readonly string[]; readonly until: number } | undefined;
}

/** RELEASE: an event's rows never tried and waiting for later (deferred to a window) are due now (now, eventId, now). */
export const RELEASE = 'UPDATE outbox SET next_attempt_at = ? WHERE event_id = ? AND attempts = 0 AND next_attempt_at > ?';

/** An event that ended, as the journal says it. */
export interface Ended {
  readonly eventId: string;
  readonly eventType: string;
  readonly status: 'Completed' | 'Canceled';
  readonly at: string;
  readonly notBefore: string | null;
  readonly durationInSeconds: number;
}

export class Journal {
  readonly #db: Db;
  readonly #s;

  constructor(db: Db) {
    this.#db = db;
    this.#s = {
      loadDocument: db.prepare('SELECT incarnation, body, etag, observed_at FROM document WHERE id = 1'),
      saveEtag: db.prepare('UPDATE document SET etag = ? WHERE id = 1'),
      saveReadAt: db.prepare('UPDATE document SET observed_at = ? WHERE id = 1'),
      saveDocument: db.prepare(
        `INSERT INTO document (id, incarnation, body, etag, observed_at) VALUES (1, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET incarnation = excluded.incarnation, body = excluded.body,
           etag = excluded.etag, observed_at = excluded.observed_at`,
      ),
      insertJournal: db.prepare('INSERT OR IGNORE INTO journal (ce_id, event_id, transition, body, created_at) VALUES (?, ?, ?, ?, ?)'),
      release: db.prepare(RELEASE),
      insertOutbox: db.prepare(
        'INSERT INTO outbox (sink, ce_id, event_id, attempts, created_at, next_attempt_at) VALUES (?, ?, ?, 0, ?, ?)',
      ),
      occurrenceGet: db.prepare(
        `SELECT MAX(n) AS n FROM (SELECT n FROM occurrences WHERE key = ? UNION ALL SELECT COUNT(*) AS n FROM journal WHERE ce_id = ?)`,
      ),
      occurrenceSet: db.prepare(
        'INSERT INTO occurrences (key, n, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET n = excluded.n, updated_at = excluded.updated_at',
      ),
      occurrencePrune: db.prepare('DELETE FROM occurrences WHERE updated_at < ?'),
      journalAll: db.prepare('SELECT ce_id AS id, transition, body AS json FROM journal ORDER BY rowid'),
      eventKnown: db.prepare('SELECT 1 AS known FROM journal WHERE event_id = ? LIMIT 1'),
      // this VM's own (a document lists other VMs' events too), never a drill's, each EventId once: as it ended last
      endedSince: db.prepare(
        `SELECT transition, created_at AS at, body AS json FROM journal WHERE rowid IN (SELECT MAX(rowid) FROM journal WHERE transition IN ('completed', 'canceled') AND created_at >= ? AND json_extract(body, '$.data.affectsThisVm') = 1 AND json_extract(body, '$.drill') IS NOT 1 GROUP BY event_id) ORDER BY created_at DESC, rowid DESC LIMIT ?`,
      ),
      // of the occurrence under way: after the last end journaled for its EventId
      seenOf: db.prepare(
        `SELECT transition, MIN(created_at) AS at FROM journal WHERE event_id = ? AND transition IN ('scheduled', 'started') AND rowid > COALESCE((SELECT MAX(rowid) FROM journal WHERE event_id = ? AND transition IN ('completed', 'canceled')), 0) GROUP BY transition`,
      ),
      ceKnown: db.prepare('SELECT 1 AS known FROM journal WHERE ce_id = ?'),
      insertRouted: db.prepare('INSERT OR IGNORE INTO routed (ce_id, sink) VALUES (?, ?)'),
      routedOf: db.prepare('SELECT sink FROM routed WHERE ce_id = ?'),
      ofEvent: db.prepare(
        `SELECT ce_id AS id, event_id AS eventId, transition, body AS json FROM journal j
          WHERE event_id = ?
            AND NOT EXISTS (SELECT 1 FROM journal e WHERE e.event_id = j.event_id AND e.transition IN ('canceled', 'completed') AND e.rowid >= j.rowid)
          ORDER BY rowid`,
      ),
      pruneRouted: db.prepare('DELETE FROM routed WHERE ce_id NOT IN (SELECT ce_id FROM journal)'),
      supersede: db.prepare(
        `DELETE FROM outbox WHERE sink = ? AND event_id = ?
           AND ce_id IN (SELECT ce_id FROM journal WHERE event_id = ? AND transition IN ('scheduled', 'updated', 'started'))`,
      ),
      prune: db.prepare(
        `DELETE FROM journal WHERE created_at < ?
           AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.ce_id = journal.ce_id)
           AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.ce_id = journal.ce_id)`,
      ),
    };
  }

  /** loadDocument returns the last committed document, or null before the first one. */
  loadDocument(): StoredDocument | null {
    const row = this.#s.loadDocument.get<{ incarnation: number; body: string; etag: string | null; observed_at: string }>();
    if (row === undefined) return null;
    let document: EventsDocument;
    try {
      document = deepFreeze(JSON.parse(row.body) as EventsDocument);
      if (!Number.isInteger(document.incarnation) || !Array.isArray(document.events)) throw new Error('not a Scheduled Events document');
    } catch (err) {
      throw new StoreError('STORE_DAMAGED', damaged(this.#db.path, `the last document is unreadable: ${messageOf(err)}`), err);
    }
    return { document, etag: row.etag, observedAt: row.observed_at };
  }

  /**
   * commit records a new document, the CloudEvents it produced and one outbox row per
   * (event, sink), atomically, and counts each transition's occurrence. A CloudEvent id already
   * journaled keeps its first body: ids are unique per occurrence, so that only happens when
   * the very same change is committed twice.
   */
  commit(input: { document: EventsDocument; etag: string | null; observedAt: string; events: readonly PendingEvent[]; now?: number }): {
    superseded: number;
  } {
    const now = input.now ?? Date.now();
    return this.#db.transaction(() => {
      this.#s.saveDocument.run(input.document.incarnation, JSON.stringify(input.document), input.etag, input.observedAt);
      return this.#append(input.events, now);
    });
  }

  /** appendEvents journals CloudEvents that come with no new document (approvals), with their outbox rows. */
  appendEvents(events: readonly PendingEvent[], extra?: () => void, now: number = Date.now()): void {
    this.#db.transaction(() => {
      this.#append(events, now);
      extra?.();
    });
  }

  #append(events: readonly PendingEvent[], now: number): { superseded: number } {
    let superseded = 0;
    for (const e of events) {
      if (e.transition === 'canceled' || e.transition === 'completed') {
        // the occurrence is over: what its preparations still have pending stops (their successes
        // stop counting by themselves: store/preparations.ts)
        for (const sink of e.supersedes ?? []) superseded += Number(this.#s.supersede.run(sink, e.eventId, e.eventId).changes);
      }
      this.#s.insertJournal.run(e.id, e.eventId, e.transition, e.json, now);
      if (e.occurrence !== undefined) this.#s.occurrenceSet.run(e.occurrence.key, e.occurrence.n, now);
      // started, or approved: what was deferred to a window goes now (the maintenance no longer waits for one)
      if (e.transition === 'started' || e.transition === 'approved') this.#s.release.run(now, e.eventId, now);
      this.#route(e.id, e.eventId, e.sinks, now, e.deferred);
    }
    return { superseded };
  }

  #route(ceId: string, eventId: string, sinks: readonly string[], now: number, deferred?: PendingEvent['deferred']): void {
    this.#s.insertRouted.run(ceId, '');
    for (const sink of sinks) {
      this.#s.insertOutbox.run(sink, ceId, eventId, now, deferred?.sinks.includes(sink) ? Math.max(now, deferred.until) : now);
      this.#s.insertRouted.run(ceId, sink);
    }
  }

  /**
   * ongoing: the CloudEvents of an EventId's current occurrence (none of its ends journaled at or
   * after them), with the sinks each was routed to; null for one committed before routes were kept.
   */
  ongoing(eventId: string): { id: string; eventId: string; transition: string; json: string; routed: Set<string> | null }[] {
    return this.#s.ofEvent.all<{ id: string; eventId: string; transition: string; json: string }>(eventId).map((r) => {
      const sinks = this.#s.routedOf.all<{ sink: string }>(r.id).map((x) => x.sink);
      return { ...r, routed: sinks.includes('') ? new Set(sinks.filter((x) => x !== '')) : null };
    });
  }

  /** addRoutes sends already journaled CloudEvents to more sinks: one outbox row each, in one transaction. */
  addRoutes(routes: readonly { ceId: string; eventId: string; sinks: readonly string[] }[], now: number = Date.now()): void {
    this.#db.transaction(() => {
      for (const r of routes) this.#route(r.ceId, r.eventId, r.sinks, now);
    });
  }

  /**
   * priorOccurrences tells how often a transition (by its occurrence key, the id of its first
   * occurrence) was committed before. A journal written before occurrences were counted still
   * answers 1 for a transition it holds.
   */
  priorOccurrences(key: string): number {
    return this.#s.occurrenceGet.get<{ n: number | null }>(key, key)?.n ?? 0;
  }

  /** saveReadAt remembers when the current document was last read (unchanged) from IMDS. */
  saveReadAt(at: string): void {
    this.#s.saveReadAt.run(at);
  }

  /** saveEtag remembers a new ETag for an unchanged document. */
  saveEtag(etag: string | null): void {
    this.#s.saveEtag.run(etag);
  }

  /** all lists every CloudEvent ever committed and still kept, oldest first (for tests and tools). */
  all(): { id: string; transition: string; json: string }[] {
    return this.#s.journalAll.all<{ id: string; transition: string; json: string }>();
  }

  /** knowsCloudEvent tells whether this CloudEvent id was committed (and is still kept). */
  knowsCloudEvent(ceId: string): boolean {
    return this.#s.ceKnown.get(ceId) !== undefined;
  }

  /** endedSince: this VM's events that ended (completed, canceled) since `since` (epoch ms), newest first, at most `limit` (never a drill's). */
  endedSince(since: number, limit: number): Ended[] {
    return this.#s.endedSince
      .all<{ transition: 'completed' | 'canceled'; at: number; json: string }>(since, limit)
      .flatMap((r) => {
        const ce = JSON.parse(r.json) as { drill?: boolean; data?: Partial<EventData> };
        const d = ce.data;
        if (ce.drill === true || d?.affectsThisVm !== true || typeof d.eventId !== 'string' || typeof d.eventType !== 'string') return [];
        const last = d.previous ?? d;
        return [
          {
            ...{
              eventId: d.eventId,
              eventType: d.eventType,
              status: r.transition === 'completed' ? ('Completed' as const) : ('Canceled' as const),
            },
            ...{ at: new Date(r.at).toISOString(), notBefore: last.notBefore ?? null, durationInSeconds: last.durationInSeconds ?? -1 },
          },
        ];
      })
      .slice(0, limit);
  }

  /** seenOf: when an event was first journaled as listed (scheduled) and as started, as the fleet's member record says it. */
  seenOf(eventId: string): { scheduled?: string; started?: string } {
    const rows = this.#s.seenOf.all<{ transition: 'scheduled' | 'started'; at: number }>(eventId, eventId);
    return Object.fromEntries(rows.map((r) => [r.transition, new Date(r.at).toISOString()]));
  }

  /** knowsEvent tells whether any CloudEvent was ever committed for this EventId. */
  knowsEvent(eventId: string): boolean {
    return this.#s.eventKnown.get(eventId) !== undefined;
  }

  /** prune forgets delivered CloudEvents and occurrence counts older than `before`; returns how many events. */
  prune(before: number): number {
    this.#s.occurrencePrune.run(before);
    const n = Number(this.#s.prune.run(before).changes);
    if (n > 0) this.#s.pruneRouted.run();
    return n;
  }
}
