/**
 * Store is the bridge's state on one SQLite connection (db.ts): the journal of documents and
 * CloudEvents (journal.ts), the outbox and dead letters (outbox.ts), approvals and hook
 * results and preparation states (approvals.ts), the replay cache of the approval API (replay.ts) and the sinks' own
 * memory (sink-state.ts). Every failure of any of them is a StoreError.
 */
import { Approvals, type ApprovalRecord, type PreparationRecord, type PreparationStateName } from './approvals.ts';
import { Db } from './db.ts';
import { Journal, type PendingEvent, type StoredDocument } from './journal.ts';
import { Outbox, type DeadLetter, type OutboxRow } from './outbox.ts';
import { ReplayCache } from './replay.ts';
import { SinkStates, type KeyValue } from './sink-state.ts';

export { StoreError } from './db.ts';
export type { ApprovalRecord, DeadLetter, OutboxRow, PendingEvent, PreparationRecord, PreparationStateName, StoredDocument };

export class Store {
  readonly path: string;
  readonly #journal: Journal;
  readonly #outbox: Outbox;
  readonly #approvals: Approvals;
  readonly #replay: ReplayCache;
  readonly #states: SinkStates;
  readonly #db: Db;

  private constructor(db: Db) {
    this.#db = db;
    this.path = db.path;
    this.#journal = new Journal(db);
    this.#outbox = new Outbox(db);
    this.#approvals = new Approvals(db, this.#journal);
    this.#replay = new ReplayCache(db);
    this.#states = new SinkStates(db);
  }

  /** open opens (creating, migrating and checking) the state database, and reads its last document back. */
  static open(path: string): Store {
    const db = Db.open(path);
    try {
      const store = new Store(db);
      store.loadDocument();
      return store;
    } catch (err) {
      db.close();
      throw err;
    }
  }

  loadDocument(): StoredDocument | null {
    return this.#journal.loadDocument();
  }
  commit(input: Parameters<Journal['commit']>[0]): { superseded: number } {
    return this.#journal.commit(input);
  }
  priorOccurrences(key: string): number {
    return this.#journal.priorOccurrences(key);
  }
  saveEtag(etag: string | null): void {
    this.#journal.saveEtag(etag);
  }
  knowsEvent(eventId: string): boolean {
    return this.#journal.knowsEvent(eventId);
  }
  due(sink: string, now: number, limit: number): OutboxRow[] {
    return this.#outbox.due(sink, now, limit);
  }
  nextDueAt(sink: string): number | null {
    return this.#outbox.nextDueAt(sink);
  }
  markDelivered(rowIds: readonly number[]): void {
    this.#outbox.markDelivered(rowIds);
  }
  ongoing(eventId: string): ReturnType<Journal['ongoing']> {
    return this.#journal.ongoing(eventId);
  }
  addRoutes(routes: Parameters<Journal['addRoutes']>[0]): void {
    this.#journal.addRoutes(routes);
  }
  beginAttempts(rowIds: readonly number[]): void {
    this.#outbox.beginAttempts(rowIds);
  }
  reschedule(rowId: number, attempts: number, nextAttemptAt: number, lastError: string): void {
    this.#outbox.reschedule(rowId, attempts, nextAttemptAt, lastError);
  }
  deadLetter(rowId: number, attempts: number, lastError: string, now?: number): void {
    this.#outbox.deadLetter(rowId, attempts, lastError, now);
  }
  deadLetterSink(sink: string, reason: string, now?: number): number {
    return this.#outbox.deadLetterSink(sink, reason, now);
  }
  outboxSinks(): string[] {
    return this.#outbox.sinks();
  }
  outboxDepth(): Map<string, number> {
    return this.#outbox.depth();
  }
  deadLetters(sink?: string): DeadLetter[] {
    return this.#outbox.deadLetters(sink);
  }
  replayDeadLetters(sink?: string, now?: number): number {
    return this.#outbox.replayDeadLetters(sink, now);
  }
  recordApproval(a: ApprovalRecord, event: PendingEvent): void {
    this.#approvals.record(a, event);
  }
  approval(eventId: string): ApprovalRecord | null {
    return this.#approvals.of(eventId);
  }
  hookSucceeded(eventId: string, sink: string, ceId: string, now?: number): boolean {
    return this.#approvals.hookSucceeded(eventId, sink, ceId, now);
  }
  occurrenceCurrent(eventId: string, ceId: string): boolean {
    return this.#approvals.occurrenceCurrent(eventId, ceId);
  }
  hooksDone(eventId: string): Set<string> {
    return this.#approvals.hooksDone(eventId);
  }
  /** recordPreparation keeps where one preparation stands for one event. */
  recordPreparation(eventId: string, sink: string, state: PreparationStateName, detail: string | null, now?: number): void {
    this.#approvals.recordPreparation(eventId, sink, state, detail, now);
  }
  preparations(eventId: string): PreparationRecord[] {
    return this.#approvals.preparations(eventId);
  }
  remember(key: string, response: string | null, ttlMs: number, now?: number): boolean {
    return this.#replay.remember(key, response, ttlMs, now);
  }
  recalled(key: string, now?: number): string | null | undefined {
    return this.#replay.recalled(key, now);
  }

  /** journal lists every CloudEvent ever committed and still kept, oldest first (for tests and tools). */
  journal(): { id: string; transition: string; json: string }[] {
    return this.#journal.all();
  }

  /** sinkState is the key-value memory of one sink. */
  sinkState(sink: string): KeyValue {
    return this.#states.of(sink);
  }

  /** prune forgets delivered CloudEvents, occurrence counts and sink state older than `maxAgeMs`. */
  prune(maxAgeMs: number, now: number = Date.now()): number {
    this.#states.prune(now - maxAgeMs);
    this.#approvals.prunePreparations(now - maxAgeMs);
    return this.#journal.prune(now - maxAgeMs);
  }

  close(): void {
    this.#db.close();
  }
}
