/**
 * PreparationTable: where each preparation of an event stands (pending, done, failed, undone),
 * with what it said, and which occurrence its success answered (`ce_id`): a success counts toward
 * approving the event only while that occurrence is current (no end of the EventId journaled
 * after the CloudEvent it answered). src/daemon/preparations.ts decides what to write.
 */
import type { Db } from './db.ts';

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

export class PreparationTable {
  readonly #s;

  constructor(db: Db) {
    this.#s = {
      set: db.prepare(
        `INSERT INTO preparations (event_id, sink, state, detail, at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (event_id, sink) DO UPDATE SET state = excluded.state, detail = excluded.detail, at = excluded.at`,
      ),
      // only while the occurrence is current: no end (canceled, completed) journaled after the CloudEvent it answered
      succeeded: db.prepare(
        `INSERT INTO preparations (event_id, sink, state, detail, at, ce_id)
           SELECT ?1, ?2, 'done', ?4, ?5, ?3 WHERE ${current('?1', '?3')}
           ON CONFLICT (event_id, sink) DO UPDATE SET state = 'done', detail = excluded.detail, at = excluded.at, ce_id = excluded.ce_id`,
      ),
      of: db.prepare('SELECT sink, state, detail, at FROM preparations WHERE event_id = ? ORDER BY sink'),
      counted: db.prepare(
        `SELECT p.sink FROM preparations p WHERE p.event_id = ?1 AND p.ce_id IS NOT NULL AND ${current('?1', 'p.ce_id')}`,
      ),
      current: db.prepare(`SELECT 1 AS yes WHERE ${current('?1', '?2')}`),
      prune: db.prepare('DELETE FROM preparations WHERE at < ?'),
    };
  }

  /** set keeps a preparation's state (pending, failed, undone, or done without counting). */
  set(eventId: string, sink: string, state: PreparationStateName, detail: string | null, now: number = Date.now()): void {
    this.#s.set.run(eventId, sink, state, detail, now);
  }

  /**
   * succeeded records a preparation's success for the occurrence of the CloudEvent it answered
   * (`ceId`), and says whether it counted: a success that comes after its occurrence ended (the
   * event was canceled, or completed, while the preparation ran) changes nothing.
   */
  succeeded(eventId: string, sink: string, ceId: string, detail: string | null, now: number = Date.now()): boolean {
    return Number(this.#s.succeeded.run(eventId, sink, ceId, detail, now).changes) > 0;
  }

  /** of: what the preparations of an event reported, by sink. */
  of(eventId: string): PreparationRecord[] {
    return this.#s.of.all<PreparationRecord>(eventId);
  }

  /** counted: the preparations whose success counts for the current occurrence of the event. */
  counted(eventId: string): Set<string> {
    return new Set(this.#s.counted.all<{ sink: string }>(eventId).map((r) => r.sink));
  }

  /** occurrenceCurrent: no end of the EventId was journaled after this CloudEvent of it. */
  occurrenceCurrent(eventId: string, ceId: string): boolean {
    return this.#s.current.get(eventId, ceId) !== undefined;
  }

  prune(before: number): void {
    this.#s.prune.run(before);
  }
}
