/**
 * Store is the bridge's journal on SQLite (node:sqlite, WAL, synchronous=FULL): the last
 * IMDS document, every CloudEvent produced, the outbox (one row per event and sink until it
 * is delivered or dead-lettered) and the dead letters.
 *
 * `commit` writes a new document, its CloudEvents and their outbox rows in one transaction,
 * so after a crash either all of a change is recorded or none of it is, and the next poll
 * diffs against exactly what was last committed.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { BridgeError } from '../lib/errors.ts';
import type { EventsDocument } from '../imds/wire.ts';
import { deepFreeze } from '../imds/wire.ts';

const SCHEMA_VERSION = 4;

export class StoreError extends BridgeError<'STORE_OPEN_FAILED' | 'STORE_DAMAGED' | 'STORE_SCHEMA_TOO_NEW' | 'STORE_WRITE_FAILED' | 'STORE_LOCKED'> {
  constructor(code: StoreError['code'], message: string, cause?: unknown) {
    super(code, message, { cause });
  }
}

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
}

export interface OutboxRow {
  readonly rowId: number;
  readonly sink: string;
  readonly ceId: string;
  readonly eventId: string;
  readonly attempts: number;
  readonly createdAt: number;
  readonly json: string;
}

export interface ApprovalRecord {
  readonly eventId: string;
  readonly by: string;
  readonly via: string;
  readonly reason: string;
  readonly at: string;
  readonly ceId: string;
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

export class Store {
  readonly path: string;
  readonly #db: DatabaseSync;
  readonly #stmts: ReturnType<Store['prepare']>;

  private constructor(path: string, db: DatabaseSync) {
    this.path = path;
    this.#db = db;
    this.#stmts = this.prepare();
  }

  /**
   * open creates the database (and its directory) when missing, migrates it, and checks it
   * (PRAGMA quick_check): a damaged file is reported as such, with SQLite's own words and what
   * to do, never as a crash later on.
   */
  static open(path: string): Store {
    let db: DatabaseSync | undefined;
    try {
      if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
      db = new DatabaseSync(path);
      db.exec('PRAGMA busy_timeout = 5000');
      db.exec('PRAGMA journal_mode = WAL');
      db.exec('PRAGMA synchronous = FULL');
      db.exec('PRAGMA foreign_keys = ON');
      migrate(db);
      const check = (db.prepare('PRAGMA quick_check(1)').get() as { quick_check: string } | undefined)?.quick_check ?? 'no answer';
      if (check !== 'ok') throw new StoreError('STORE_DAMAGED', damaged(path, check));
      const store = new Store(path, db);
      store.loadDocument();
      return store;
    } catch (err) {
      try {
        if (db?.isOpen) db.close();
      } catch {
        /* the handle of a file that could not be opened */
      }
      if (err instanceof StoreError) throw err;
      const e = err as { code?: string; errcode?: number; errstr?: string; message?: string };
      // SQLITE_CORRUPT (11) and SQLITE_NOTADB (26): a file that is there but unusable
      if (e.errcode === 11 || e.errcode === 26) throw new StoreError('STORE_DAMAGED', damaged(path, e.errstr ?? String(e.message)), err);
      const code = e.errstr ?? e.code ?? e.message;
      const hint = code === 'EEXIST' || code === 'ENOTDIR' ? ` (ENOTDIR: a part of ${dirname(path)} is not a directory)` : `: ${code}`;
      throw new StoreError('STORE_OPEN_FAILED', `cannot open state database ${path}${hint}`, err);
    }
  }

  private prepare() {
    const db = this.#db;
    return {
      loadDocument: db.prepare('SELECT incarnation, body, etag, observed_at FROM document WHERE id = 1'),
      saveEtag: db.prepare('UPDATE document SET etag = ? WHERE id = 1'),
      saveDocument: db.prepare(
        `INSERT INTO document (id, incarnation, body, etag, observed_at) VALUES (1, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET incarnation = excluded.incarnation, body = excluded.body,
           etag = excluded.etag, observed_at = excluded.observed_at`,
      ),
      insertJournal: db.prepare(
        'INSERT OR IGNORE INTO journal (ce_id, event_id, transition, body, created_at) VALUES (?, ?, ?, ?, ?)',
      ),
      occurrenceGet: db.prepare(
        `SELECT MAX(n) AS n FROM (SELECT n FROM occurrences WHERE key = ? UNION ALL SELECT COUNT(*) AS n FROM journal WHERE ce_id = ?)`,
      ),
      occurrenceSet: db.prepare(
        'INSERT INTO occurrences (key, n, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET n = excluded.n, updated_at = excluded.updated_at',
      ),
      occurrencePrune: db.prepare('DELETE FROM occurrences WHERE updated_at < ?'),
      insertOutbox: db.prepare(
        'INSERT INTO outbox (sink, ce_id, event_id, attempts, created_at, next_attempt_at) VALUES (?, ?, ?, 0, ?, ?)',
      ),
      due: db.prepare(
        `SELECT o.id AS rowId, o.sink, o.ce_id AS ceId, o.event_id AS eventId, o.attempts, o.created_at AS createdAt, j.body AS json
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
      reschedule: db.prepare('UPDATE outbox SET attempts = ?, next_attempt_at = ?, last_error = ? WHERE id = ?'),
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
      journalAll: db.prepare('SELECT ce_id AS id, transition, body AS json FROM journal ORDER BY rowid'),
      approvalGet: db.prepare('SELECT event_id AS eventId, by_whom AS by, via, reason, at, ce_id AS ceId FROM approvals WHERE event_id = ?'),
      approvalInsert: db.prepare('INSERT INTO approvals (event_id, by_whom, via, reason, at, ce_id) VALUES (?, ?, ?, ?, ?, ?)'),
      eventKnown: db.prepare('SELECT 1 AS known FROM journal WHERE event_id = ? LIMIT 1'),
      replayGet: db.prepare('SELECT response FROM replay WHERE key = ? AND expires_at > ?'),
      replayInsert: db.prepare('INSERT OR IGNORE INTO replay (key, response, expires_at) VALUES (?, ?, ?)'),
      replayPrune: db.prepare('DELETE FROM replay WHERE expires_at <= ?'),
      hookDone: db.prepare('INSERT OR IGNORE INTO hook_results (event_id, sink, at) VALUES (?, ?, ?)'),
      hooksOf: db.prepare('SELECT sink FROM hook_results WHERE event_id = ?'),
      stateGet: db.prepare('SELECT value FROM sink_state WHERE sink = ? AND key = ?'),
      stateSet: db.prepare(
        'INSERT INTO sink_state (sink, key, value, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (sink, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at',
      ),
      statePrune: db.prepare('DELETE FROM sink_state WHERE updated_at < ?'),
      prune: db.prepare(
        `DELETE FROM journal WHERE created_at < ?
           AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.ce_id = journal.ce_id)
           AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.ce_id = journal.ce_id)`,
      ),
    };
  }

  /** loadDocument returns the last committed document, or null before the first one. */
  loadDocument(): StoredDocument | null {
    const row = this.#stmts.loadDocument.get() as
      | { incarnation: number; body: string; etag: string | null; observed_at: string }
      | undefined;
    if (row === undefined) return null;
    let document: EventsDocument;
    try {
      document = deepFreeze(JSON.parse(row.body) as EventsDocument);
      if (!Number.isInteger(document.incarnation) || !Array.isArray(document.events)) throw new Error('not a Scheduled Events document');
    } catch (err) {
      throw new StoreError('STORE_DAMAGED', damaged(this.path, `the last document is unreadable: ${(err as Error).message}`), err);
    }
    return { document, etag: row.etag, observedAt: row.observed_at };
  }

  /**
   * commit records a new document, the CloudEvents it produced and one outbox row per
   * (event, sink), atomically, and counts each transition's occurrence. A CloudEvent id already
   * journaled keeps its first body: ids are unique per occurrence, so that only happens when
   * the very same change is committed twice.
   */
  commit(input: { document: EventsDocument; etag: string | null; observedAt: string; events: readonly PendingEvent[]; now?: number }): void {
    const now = input.now ?? Date.now();
    this.transaction(() => {
      const s = this.#stmts;
      s.saveDocument.run(input.document.incarnation, JSON.stringify(input.document), input.etag, input.observedAt);
      for (const e of input.events) {
        s.insertJournal.run(e.id, e.eventId, e.transition, e.json, now);
        if (e.occurrence !== undefined) s.occurrenceSet.run(e.occurrence.key, e.occurrence.n, now);
        for (const sink of e.sinks) s.insertOutbox.run(sink, e.id, e.eventId, now, now);
      }
    });
  }

  /**
   * priorOccurrences tells how often a transition (by its occurrence key, the id of its first
   * occurrence) was committed before. A journal written before occurrences were counted still
   * answers 1 for a transition it holds.
   */
  priorOccurrences(key: string): number {
    const row = this.#stmts.occurrenceGet.get(key, key) as { n: number | null } | undefined;
    return row?.n ?? 0;
  }

  /** saveEtag remembers a new ETag for an unchanged document. */
  saveEtag(etag: string | null): void {
    this.#write(() => this.#stmts.saveEtag.run(etag));
  }

  /** due returns the rows of `sink` ready to send: at most one per EventId (the oldest), in order. */
  due(sink: string, now: number, limit: number): OutboxRow[] {
    return this.#stmts.due.all(sink, now, limit) as unknown as OutboxRow[];
  }

  /** nextDueAt is when the next row of `sink` becomes ready (ms since epoch), or null when none is pending. */
  nextDueAt(sink: string): number | null {
    const row = this.#stmts.nextDue.get(sink) as { at: number | null } | undefined;
    return row?.at ?? null;
  }

  /**
   * markDelivered removes delivered rows. It does not wait for the disk (synchronous=NORMAL for
   * this one transaction): losing it in a power cut only means delivering those events again,
   * which at-least-once delivery allows, and it spares one fsync per delivery.
   */
  markDelivered(rowIds: readonly number[]): void {
    this.#db.exec('PRAGMA synchronous = NORMAL');
    try {
      this.transaction(() => {
        for (const id of rowIds) this.#stmts.deleteOutbox.run(id);
      });
    } finally {
      this.#db.exec('PRAGMA synchronous = FULL');
    }
  }

  reschedule(rowId: number, attempts: number, nextAttemptAt: number, lastError: string): void {
    this.#write(() => this.#stmts.reschedule.run(attempts, nextAttemptAt, lastError, rowId));
  }

  /** deadLetter moves an outbox row to the dead letters with its last error. */
  deadLetter(rowId: number, attempts: number, lastError: string, now: number = Date.now()): void {
    this.transaction(() => {
      this.#stmts.insertDead.run(attempts, lastError, now, rowId);
      this.#stmts.deleteOutbox.run(rowId);
    });
  }

  /** deadLetterSink moves every outbox row of a sink that is no longer configured to the dead letters. */
  deadLetterSink(sink: string, reason: string, now: number = Date.now()): number {
    const rows = this.#stmts.outboxIdsOfSink.all(sink) as { id: number }[];
    this.transaction(() => {
      for (const { id } of rows) {
        this.#stmts.insertDead.run(0, reason, now, id);
        this.#stmts.deleteOutbox.run(id);
      }
    });
    return rows.length;
  }

  outboxSinks(): string[] {
    return (this.#stmts.sinksInOutbox.all() as { sink: string }[]).map((r) => r.sink);
  }

  outboxDepth(): Map<string, number> {
    return new Map((this.#stmts.depth.all() as { sink: string; n: number }[]).map((r) => [r.sink, r.n]));
  }

  deadLetters(sink?: string): DeadLetter[] {
    const all = this.#stmts.deadAll.all() as unknown as DeadLetter[];
    return sink === undefined ? all : all.filter((d) => d.sink === sink);
  }

  /** replayDeadLetters puts dead letters back into the outbox; returns how many. */
  replayDeadLetters(sink?: string, now: number = Date.now()): number {
    const rows = this.deadLetters(sink);
    this.transaction(() => {
      for (const d of rows) {
        this.#stmts.replayDead.run(now, now, d.id);
        this.#stmts.deleteDead.run(d.id);
      }
    });
    return rows.length;
  }

  /** journal lists every CloudEvent ever committed and still kept, oldest first (for tests and tools). */
  journal(): { id: string; transition: string; json: string }[] {
    return this.#stmts.journalAll.all() as { id: string; transition: string; json: string }[];
  }

  /** appendEvents journals CloudEvents that come with no new document (approvals), with their outbox rows. */
  appendEvents(events: readonly PendingEvent[], extra?: () => void, now: number = Date.now()): void {
    this.transaction(() => {
      for (const e of events) {
        this.#stmts.insertJournal.run(e.id, e.eventId, e.transition, e.json, now);
        for (const sink of e.sinks) this.#stmts.insertOutbox.run(sink, e.id, e.eventId, now, now);
      }
      extra?.();
    });
  }

  /** recordApproval stores who approved an event, with its `approved` CloudEvent, atomically. */
  recordApproval(a: ApprovalRecord, event: PendingEvent): void {
    this.appendEvents([event], () => void this.#stmts.approvalInsert.run(a.eventId, a.by, a.via, a.reason, a.at, a.ceId));
  }

  approval(eventId: string): ApprovalRecord | null {
    return (this.#stmts.approvalGet.get(eventId) as ApprovalRecord | undefined) ?? null;
  }

  /** knowsEvent tells whether any CloudEvent was ever committed for this EventId. */
  knowsEvent(eventId: string): boolean {
    return this.#stmts.eventKnown.get(eventId) !== undefined;
  }

  /** remember records a replay key (a webhook-id, a used token) with the response given; false when it was already there. */
  remember(key: string, response: string | null, ttlMs: number, now: number = Date.now()): boolean {
    return this.#write(() => {
      this.#stmts.replayPrune.run(now);
      return Number(this.#stmts.replayInsert.run(key, response, now + ttlMs).changes) === 1;
    });
  }

  /** recalled returns what was answered for a replay key still remembered, or undefined. */
  recalled(key: string, now: number = Date.now()): string | null | undefined {
    const row = this.#stmts.replayGet.get(key, now) as { response: string | null } | undefined;
    return row === undefined ? undefined : row.response;
  }

  hookSucceeded(eventId: string, sink: string, now: number = Date.now()): void {
    this.#write(() => this.#stmts.hookDone.run(eventId, sink, now));
  }

  hooksDone(eventId: string): Set<string> {
    return new Set((this.#stmts.hooksOf.all(eventId) as { sink: string }[]).map((r) => r.sink));
  }

  /** sinkState is the key-value memory of one sink. */
  sinkState(sink: string): { get(key: string): string | undefined; set(key: string, value: string): void } {
    return {
      get: (key) => (this.#stmts.stateGet.get(sink, key) as { value: string } | undefined)?.value,
      set: (key, value) => void this.#write(() => this.#stmts.stateSet.run(sink, key, value, Date.now())),
    };
  }

  /** prune forgets delivered CloudEvents and sink state older than `maxAgeMs`. */
  prune(maxAgeMs: number, now: number = Date.now()): number {
    this.#stmts.statePrune.run(now - maxAgeMs);
    this.#stmts.occurrencePrune.run(now - maxAgeMs);
    return Number(this.#stmts.prune.run(now - maxAgeMs).changes);
  }

  close(): void {
    if (this.#db.isOpen) this.#db.close();
  }

  /** write runs one statement that changes the database; every failure becomes a StoreError with SQLite's reason. */
  #write<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      const detail = (err as { errstr?: string }).errstr ?? (err as Error).message;
      throw new StoreError('STORE_WRITE_FAILED', `state database ${this.path}: write failed: ${detail}`, err);
    }
  }

  private transaction(fn: () => void): void {
    this.#db.exec('BEGIN IMMEDIATE');
    try {
      fn();
      this.#db.exec('COMMIT');
    } catch (err) {
      try {
        if (this.#db.isTransaction) this.#db.exec('ROLLBACK');
      } catch {
        /* SQLite rolled back by itself (e.g. on a full disk) */
      }
      const detail = (err as { errstr?: string }).errstr ?? (err as Error).message;
      throw new StoreError('STORE_WRITE_FAILED', `state database ${this.path}: write failed: ${detail}`, err);
    }
  }
}

function damaged(path: string, reason: string): string {
  const said = reason.replace(/\*\*\* in database \w+ \*\*\*\s*/g, '').trim().replace(/\s*\n\s*/g, '; ');
  return `state database ${path} is damaged (${said}); move it aside to start afresh (the events it had not yet delivered are lost) or restore it from a backup`;
}

function migrate(db: DatabaseSync): void {
  db.exec('CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)');
  const row = db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string } | undefined;
  const version = row === undefined ? 0 : Number(row.value);
  if (version > SCHEMA_VERSION) {
    throw new StoreError(
      'STORE_SCHEMA_TOO_NEW',
      `state database schema version ${version} is newer than this se-bridge understands (${SCHEMA_VERSION})`,
    );
  }
  if (version === SCHEMA_VERSION) return;
  db.exec(`
    BEGIN IMMEDIATE;
    CREATE TABLE IF NOT EXISTS document (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      incarnation INTEGER NOT NULL,
      body TEXT NOT NULL,
      etag TEXT,
      observed_at TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS journal (
      ce_id TEXT PRIMARY KEY,
      event_id TEXT NOT NULL,
      transition TEXT NOT NULL,
      body TEXT NOT NULL,
      created_at INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS outbox (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      sink TEXT NOT NULL,
      ce_id TEXT NOT NULL REFERENCES journal (ce_id),
      event_id TEXT NOT NULL,
      attempts INTEGER NOT NULL,
      created_at INTEGER NOT NULL,
      next_attempt_at INTEGER NOT NULL,
      last_error TEXT
    );
    CREATE INDEX IF NOT EXISTS outbox_by_sink_event ON outbox (sink, event_id, id);
    CREATE TABLE IF NOT EXISTS dead_letters (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      sink TEXT NOT NULL,
      ce_id TEXT NOT NULL REFERENCES journal (ce_id),
      event_id TEXT NOT NULL,
      attempts INTEGER NOT NULL,
      last_error TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      dead_at INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS sink_state (
      sink TEXT NOT NULL,
      key TEXT NOT NULL,
      value TEXT NOT NULL,
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (sink, key)
    );
    CREATE TABLE IF NOT EXISTS approvals (
      event_id TEXT PRIMARY KEY,
      by_whom TEXT NOT NULL,
      via TEXT NOT NULL,
      reason TEXT NOT NULL,
      at TEXT NOT NULL,
      ce_id TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS replay (
      key TEXT PRIMARY KEY,
      response TEXT,
      expires_at INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS hook_results (
      event_id TEXT NOT NULL,
      sink TEXT NOT NULL,
      at INTEGER NOT NULL,
      PRIMARY KEY (event_id, sink)
    );
    CREATE TABLE IF NOT EXISTS occurrences (
      key TEXT PRIMARY KEY,
      n INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    );
    INSERT INTO meta (key, value) VALUES ('schema_version', '${SCHEMA_VERSION}')
      ON CONFLICT (key) DO UPDATE SET value = excluded.value;
    COMMIT;
  `);
}

