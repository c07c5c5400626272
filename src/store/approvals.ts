/**
 * Approvals: who approved which event, how and when (one record per EventId, written with its
 * `approved` CloudEvent in one transaction), which preparation hooks succeeded for it, and
 * where each preparation stands (pending, done, failed, undone) with what it said.
 */
import type { Db } from './db.ts';
import type { Journal, PendingEvent } from './journal.ts';

export interface ApprovalRecord {
  readonly eventId: string;
  readonly by: string;
  readonly via: string;
  readonly reason: string;
  readonly at: string;
  readonly ceId: string;
}

export type PreparationStateName = 'pending' | 'done' | 'failed' | 'undone';

export interface PreparationRecord {
  readonly sink: string;
  readonly state: PreparationStateName;
  readonly detail: string | null;
  /** epoch ms */
  readonly at: number;
}

/** current: the CloudEvent (parameter `ce`) of the EventId (parameter `ev`) is journaled, and no end of the EventId after it. */
const current = (ev: string, ce: string) => `EXISTS (SELECT 1 FROM journal WHERE ce_id = ${ce})
  AND NOT EXISTS (SELECT 1 FROM journal e WHERE e.event_id = ${ev} AND e.transition IN ('canceled', 'completed')
                    AND e.rowid > (SELECT rowid FROM journal WHERE ce_id = ${ce}))`;

export class Approvals {
  readonly #journal: Journal;
  readonly #s;

  constructor(db: Db, journal: Journal) {
    this.#journal = journal;
    this.#s = {
      get: db.prepare('SELECT event_id AS eventId, by_whom AS by, via, reason, at, ce_id AS ceId FROM approvals WHERE event_id = ?'),
      insert: db.prepare('INSERT INTO approvals (event_id, by_whom, via, reason, at, ce_id) VALUES (?, ?, ?, ?, ?, ?)'),
      // only while the occurrence is current: no end (canceled, completed) journaled after the CloudEvent it answered
      hookDone: db.prepare(
        `INSERT INTO preparation_results (event_id, sink, ce_id, at)
           SELECT ?1, ?2, ?3, ?4 WHERE ${current('?1', '?3')}
           ON CONFLICT (event_id, sink) DO UPDATE SET ce_id = excluded.ce_id, at = excluded.at`,
      ),
      hooksOf: db.prepare('SELECT sink FROM preparation_results WHERE event_id = ?'),
      current: db.prepare(`SELECT 1 AS yes WHERE ${current('?1', '?2')}`),
      prepSet: db.prepare(
        `INSERT INTO preparations (event_id, sink, state, detail, at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (event_id, sink) DO UPDATE SET state = excluded.state, detail = excluded.detail, at = excluded.at`,
      ),
      prepOf: db.prepare('SELECT sink, state, detail, at FROM preparations WHERE event_id = ? ORDER BY sink'),
      prepPrune: db.prepare('DELETE FROM preparations WHERE at < ?'),
    };
  }

  /** record stores who approved an event, with its `approved` CloudEvent, atomically. */
  record(a: ApprovalRecord, event: PendingEvent): void {
    this.#journal.appendEvents([event], () => void this.#s.insert.run(a.eventId, a.by, a.via, a.reason, a.at, a.ceId));
  }

  of(eventId: string): ApprovalRecord | null {
    return this.#s.get.get<ApprovalRecord>(eventId) ?? null;
  }

  /**
   * hookSucceeded records a preparation's success for the occurrence of the CloudEvent it
   * answered (`ceId`), and says whether it counted: a success that comes after its occurrence
   * ended (the event was canceled, or completed, while the preparation ran) does not.
   */
  hookSucceeded(eventId: string, sink: string, ceId: string, now: number = Date.now()): boolean {
    return Number(this.#s.hookDone.run(eventId, sink, ceId, now).changes) > 0;
  }

  /** occurrenceCurrent: no end of the EventId was journaled after this CloudEvent of it. */
  occurrenceCurrent(eventId: string, ceId: string): boolean {
    return this.#s.current.get(eventId, ceId) !== undefined;
  }

  /** hooksDone: the preparations that succeeded for the current occurrence of the event (an end drops them). */
  hooksDone(eventId: string): Set<string> {
    return new Set(this.#s.hooksOf.all<{ sink: string }>(eventId).map((r) => r.sink));
  }

  recordPreparation(eventId: string, sink: string, state: PreparationStateName, detail: string | null, now: number = Date.now()): void {
    this.#s.prepSet.run(eventId, sink, state, detail, now);
  }

  preparations(eventId: string): PreparationRecord[] {
    return this.#s.prepOf.all<PreparationRecord>(eventId);
  }

  prunePreparations(before: number): void {
    this.#s.prepPrune.run(before);
  }
}
