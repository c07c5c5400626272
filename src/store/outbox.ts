/**
 * Outbox: one row per (CloudEvent, sink) until it is delivered or dead-lettered, and the dead
 * letters with their last error. Within a sink, rows of one EventId become due in the order
 * they were committed.
 */
import type { Db } from './db.ts';
import { RELEASE } from './journal.ts';

export interface OutboxRow {
  readonly rowId: number;
  readonly sink: string;
  readonly ceId: string;
  readonly eventId: string;
  /** The CloudEvent's transition (scheduled, updated, ...), as the journal recorded it. */
  readonly transition: string;
  /** Attempts started (an attempt counts from its start, so one the process died in counts too). */
  readonly attempts: number;
  readonly createdAt: number;
  readonly json: string;
  /** The last failure, or null before the first. */
  readonly lastError: string | null;
}

export interface DeadLetter {
  readonly id: number;
  readonly sink: string;
  readonly ceId: string;
  readonly eventId: string;
  readonly transition: string;
  readonly attempts: number;
  readonly lastError: string;
  readonly createdAt: number;
  readonly deadAt: number;
  readonly json: string;
}

export class Outbox {
  readonly #db: Db;
  readonly #s;

  constructor(db: Db) {
    this.#db = db;
    this.#s = {
      due: db.prepare(
        `SELECT o.id AS rowId, o.sink, o.ce_id AS ceId, o.event_id AS eventId, j.transition, o.attempts, o.created_at AS createdAt, j.body AS json,
                o.last_error AS lastError
           FROM outbox o JOIN journal j ON j.ce_id = o.ce_id
          WHERE o.sink = ? AND o.next_attempt_at <= ?
            AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.sink = o.sink AND p.event_id = o.event_id AND p.id < o.id)
          ORDER BY o.id LIMIT ?`,
      ),
      nextDue: db.prepare(
        `SELECT MIN(o.next_attempt_at) AS at FROM outbox o
          WHERE o.sink = ?
            AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.sink = o.sink AND p.event_id = o.event_id AND p.id < o.id)`,
      ),
      deleteOutbox: db.prepare('DELETE FROM outbox WHERE id = ?'),
      release: db.prepare(RELEASE),
      reschedule: db.prepare('UPDATE outbox SET attempts = ?, next_attempt_at = ?, last_error = ? WHERE id = ?'),
      begin: db.prepare(
        `UPDATE outbox SET attempts = attempts + 1,
           last_error = 'ATTEMPT_INTERRUPTED: the process stopped during attempt ' || (attempts + 1) || ' (a crash, a kill or a power cut)'
         WHERE id = ?`,
      ),
      insertDead: db.prepare(
        `INSERT INTO dead_letters (sink, ce_id, event_id, attempts, last_error, created_at, dead_at)
         SELECT sink, ce_id, event_id, ?, ?, created_at, ? FROM outbox WHERE id = ?`,
      ),
      depth: db.prepare('SELECT sink, COUNT(*) AS n FROM outbox GROUP BY sink'),
      sinksInOutbox: db.prepare('SELECT DISTINCT sink FROM outbox'),
      outboxIdsOfSink: db.prepare('SELECT id FROM outbox WHERE sink = ?'),
      deadAll: db.prepare(
        `SELECT d.id, d.sink, d.ce_id AS ceId, d.event_id AS eventId, j.transition, d.attempts, d.last_error AS lastError,
                d.created_at AS createdAt, d.dead_at AS deadAt, j.body AS json
           FROM dead_letters d JOIN journal j ON j.ce_id = d.ce_id ORDER BY d.id`,
      ),
      replayDead: db.prepare(
        'INSERT INTO outbox (sink, ce_id, event_id, attempts, created_at, next_attempt_at) SELECT sink, ce_id, event_id, 0, ?, ? FROM dead_letters WHERE id = ?',
      ),
      deleteDead: db.prepare('DELETE FROM dead_letters WHERE id = ?'),
    };
  }

  /** due returns the rows of `sink` ready to send: at most one per EventId (the oldest), in order. */
  due(sink: string, now: number, limit: number): OutboxRow[] {
    return this.#s.due.all<OutboxRow>(sink, now, limit);
  }

  /** nextDueAt is when the next row of `sink` becomes ready (ms since epoch), or null when none is pending. */
  nextDueAt(sink: string): number | null {
    return this.#s.nextDue.get<{ at: number | null }>(sink)?.at ?? null;
  }

  /**
   * markDelivered removes delivered rows. It does not wait for the disk (synchronous=NORMAL for
   * this one transaction): losing it in a power cut only means delivering those events again,
   * which at-least-once delivery allows, and it spares one fsync per delivery.
   */
  markDelivered(rowIds: readonly number[]): void {
    this.#db.relaxed(() =>
      this.#db.transaction(() => {
        for (const id of rowIds) this.#s.deleteOutbox.run(id);
      }),
    );
  }

  /**
   * beginAttempts counts an attempt on each row before it is made, with a reason that stays if
   * it never ends: a row whose sending kills the process runs out of attempts like any other.
   * Not waited to the disk (a power cut only forgets the count), but kept through a crash.
   */
  beginAttempts(rowIds: readonly number[]): void {
    this.#db.relaxed(() =>
      this.#db.transaction(() => {
        for (const id of rowIds) this.#s.begin.run(id);
      }),
    );
  }

  /** release makes an event's deferred rows (never tried, waiting for a window) due now; how many. */
  release(eventId: string, now: number = Date.now()): number {
    return Number(this.#s.release.run(now, eventId, now).changes);
  }

  reschedule(rowId: number, attempts: number, nextAttemptAt: number, lastError: string): void {
    this.#s.reschedule.run(attempts, nextAttemptAt, lastError, rowId);
  }

  /** deadLetter moves an outbox row to the dead letters with its last error. */
  deadLetter(rowId: number, attempts: number, lastError: string, now: number = Date.now()): void {
    this.#db.transaction(() => {
      this.#s.insertDead.run(attempts, lastError, now, rowId);
      this.#s.deleteOutbox.run(rowId);
    });
  }

  /** deadLetterSink moves every outbox row of a sink that is no longer configured to the dead letters. */
  deadLetterSink(sink: string, reason: string, now: number = Date.now()): number {
    const rows = this.#s.outboxIdsOfSink.all<{ id: number }>(sink);
    this.#db.transaction(() => {
      for (const { id } of rows) {
        this.#s.insertDead.run(0, reason, now, id);
        this.#s.deleteOutbox.run(id);
      }
    });
    return rows.length;
  }

  sinks(): string[] {
    return this.#s.sinksInOutbox.all<{ sink: string }>().map((r) => r.sink);
  }

  depth(): Map<string, number> {
    return new Map(this.#s.depth.all<{ sink: string; n: number }>().map((r) => [r.sink, r.n]));
  }

  deadLetters(sink?: string): DeadLetter[] {
    const all = this.#s.deadAll.all<DeadLetter>();
    return sink === undefined ? all : all.filter((d) => d.sink === sink);
  }

  /** replayDeadLetters puts dead letters back into the outbox; returns how many. */
  replayDeadLetters(sink?: string, now: number = Date.now()): number {
    const rows = this.deadLetters(sink);
    this.#db.transaction(() => {
      for (const d of rows) {
        this.#s.replayDead.run(now, now, d.id);
        this.#s.deleteDead.run(d.id);
      }
    });
    return rows.length;
  }
}
