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

export class Approvals {
  readonly #journal: Journal;
  readonly #s;

  constructor(db: Db, journal: Journal) {
    this.#journal = journal;
    this.#s = {
      get: db.prepare('SELECT event_id AS eventId, by_whom AS by, via, reason, at, ce_id AS ceId FROM approvals WHERE event_id = ?'),
      insert: db.prepare('INSERT INTO approvals (event_id, by_whom, via, reason, at, ce_id) VALUES (?, ?, ?, ?, ?, ?)'),
      hookDone: db.prepare('INSERT OR IGNORE INTO hook_results (event_id, sink, at) VALUES (?, ?, ?)'),
      hooksOf: db.prepare('SELECT sink FROM hook_results WHERE event_id = ?'),
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

  hookSucceeded(eventId: string, sink: string, now: number = Date.now()): void {
    this.#s.hookDone.run(eventId, sink, now);
  }

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
