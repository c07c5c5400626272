/**
 * Approvals: who approved which event, how and when (one record per EventId, written with its
 * `approved` CloudEvent in one transaction), and which preparation hooks succeeded for it.
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
}
