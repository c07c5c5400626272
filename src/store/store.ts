/**
 * Store is the bridge's state on one SQLite connection (db.ts), made of parts that each consumer
 * takes alone: the journal of documents and CloudEvents (journal.ts), the outbox and dead
 * letters (outbox.ts), who approved what (approvals.ts), where each preparation stands
 * (preparations.ts), the replay cache of approvals (replay.ts) and the sinks' own memory
 * (sink-state.ts). Every failure of any of them is a StoreError.
 */
import { Approvals, type ApprovalRecord } from './approvals.ts';
import { Db } from './db.ts';
import { Journal, type PendingEvent, type StoredDocument } from './journal.ts';
import { Outbox, type DeadLetter, type OutboxRow } from './outbox.ts';
import { PreparationTable, type PreparationRecord, type PreparationStateName } from './preparations.ts';
import { ReplayCache } from './replay.ts';
import { SinkStates, type KeyValue } from './sink-state.ts';

export { StoreError } from './db.ts';
export type { ApprovalRecord, DeadLetter, KeyValue, OutboxRow, PendingEvent, PreparationRecord, PreparationStateName, StoredDocument };
export type { Approvals, Journal, Outbox, PreparationTable, ReplayCache, SinkStates };

export class Store {
  readonly path: string;
  readonly journal: Journal;
  readonly outbox: Outbox;
  readonly approvals: Approvals;
  readonly preparations: PreparationTable;
  readonly replay: ReplayCache;
  readonly sinkStates: SinkStates;
  /** The last document the journal holds, as it was when the store was opened (read once). */
  readonly lastDocument: StoredDocument | null;
  readonly #db: Db;

  private constructor(db: Db) {
    this.#db = db;
    this.path = db.path;
    this.journal = new Journal(db);
    this.outbox = new Outbox(db);
    this.approvals = new Approvals(db, this.journal);
    this.preparations = new PreparationTable(db);
    this.replay = new ReplayCache(db);
    this.sinkStates = new SinkStates(db);
    this.lastDocument = this.journal.loadDocument();
  }

  /** open opens (creating, migrating and checking) the state database, and reads its last document back. */
  static open(path: string): Store {
    const db = Db.open(path);
    try {
      return new Store(db);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /** prune forgets delivered CloudEvents, occurrence counts, preparation states and sink state older than `maxAgeMs`. */
  prune(maxAgeMs: number, now: number = Date.now()): number {
    this.sinkStates.prune(now - maxAgeMs);
    this.preparations.prune(now - maxAgeMs);
    return this.journal.prune(now - maxAgeMs);
  }

  close(): void {
    this.#db.close();
  }
}
