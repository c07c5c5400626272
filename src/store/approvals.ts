/**
 * Approvals: who approved which event, how and when: one record per EventId, written with its
 * `approved` CloudEvent in one transaction.
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
    };
  }

  /** record stores who approved an event, with its `approved` CloudEvent, atomically. */
  record(a: ApprovalRecord, event: PendingEvent): void {
    this.#journal.appendEvents([event], () => void this.#s.insert.run(a.eventId, a.by, a.via, a.reason, a.at, a.ceId));
  }

  /** of is the approval of an event, or null. */
  of(eventId: string): ApprovalRecord | null {
    return this.#s.get.get<ApprovalRecord>(eventId) ?? null;
  }
}
