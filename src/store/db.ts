/**
 * Db is the one SQLite connection of the state (node:sqlite, WAL, synchronous=FULL): it opens
 * and checks the file, migrates its schema, and runs every statement so that any failure,
 * read or write, reaches the caller as a StoreError with SQLite's own words.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementResultingChanges } from 'node:sqlite';
import { BridgeError } from '../lib/errors.ts';

export class StoreError extends BridgeError<
  'STORE_OPEN_FAILED' | 'STORE_DAMAGED' | 'STORE_SCHEMA_TOO_NEW' | 'STORE_WRITE_FAILED' | 'STORE_READ_FAILED' | 'STORE_LOCKED'
> {
  constructor(code: StoreError['code'], message: string, cause?: unknown) {
    super(code, message, { cause });
  }
}

/** Stmt is a prepared statement whose every failure is a StoreError. */
export interface Stmt {
  run(...params: SQLInputValue[]): StatementResultingChanges;
  get<T>(...params: SQLInputValue[]): T | undefined;
  all<T>(...params: SQLInputValue[]): T[];
}

/**
 * MIGRATIONS, by the schema version that made each change. A database of an older version runs
 * those newer than its own, in order, in one transaction.
 */
const MIGRATIONS: readonly { readonly version: number; readonly sql: string }[] = [
  {
    version: 1,
    sql: `
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
    );`,
  },
  {
    version: 2,
    sql: `
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
    );`,
  },
  {
    version: 3,
    sql: `
    CREATE TABLE IF NOT EXISTS hook_results (
      event_id TEXT NOT NULL,
      sink TEXT NOT NULL,
      at INTEGER NOT NULL,
      PRIMARY KEY (event_id, sink)
    );`,
  },
  {
    version: 4,
    sql: `
    CREATE TABLE IF NOT EXISTS occurrences (
      key TEXT PRIMARY KEY,
      n INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    );`,
  },
  {
    version: 5,
    sql: `
    CREATE TABLE IF NOT EXISTS preparations (
      event_id TEXT NOT NULL,
      sink TEXT NOT NULL,
      state TEXT NOT NULL,
      detail TEXT,
      at INTEGER NOT NULL,
      PRIMARY KEY (event_id, sink)
    );`,
  },
  {
    // a preparation's success belongs to the occurrence it prepared: the CloudEvent it answered
    version: 6,
    sql: `
    CREATE TABLE IF NOT EXISTS preparation_results (
      event_id TEXT NOT NULL,
      sink TEXT NOT NULL,
      ce_id TEXT NOT NULL,
      at INTEGER NOT NULL,
      PRIMARY KEY (event_id, sink)
    );
    INSERT OR IGNORE INTO preparation_results (event_id, sink, ce_id, at)
      SELECT event_id, sink, event_id || '/scheduled', at FROM hook_results;
    DROP TABLE hook_results;
    -- which sinks each CloudEvent was routed to (sink '' marks that its routing was recorded), so
    -- that routing it again when the VM learns its name never gives a sink the same one twice
    CREATE TABLE IF NOT EXISTS routed (
      ce_id TEXT NOT NULL,
      sink TEXT NOT NULL,
      PRIMARY KEY (ce_id, sink)
    ) WITHOUT ROWID;`,
  },
  {
    // one table of preparations: a success's occurrence (ce_id) beside the state status shows
    version: 7,
    sql: `
    ALTER TABLE preparations ADD COLUMN ce_id TEXT;
    INSERT INTO preparations (event_id, sink, state, detail, at, ce_id)
      SELECT event_id, sink, 'done', NULL, at, ce_id FROM preparation_results WHERE true
      ON CONFLICT (event_id, sink) DO UPDATE SET ce_id = excluded.ce_id;
    DROP TABLE preparation_results;`,
  },
];

const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

const detail = (err: unknown): string => (err as { errstr?: string }).errstr ?? (err as Error).message;

export class Db {
  readonly path: string;
  readonly #db: DatabaseSync;

  private constructor(path: string, db: DatabaseSync) {
    this.path = path;
    this.#db = db;
  }

  /**
   * open creates the database (and its directory) when missing, migrates it, and checks it
   * (PRAGMA quick_check): a damaged file is reported as such, with SQLite's own words and what
   * to do, never as a crash later on.
   */
  static open(path: string): Db {
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
      return new Db(path, db);
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

  /** guard runs `fn`; any failure becomes a StoreError (STORE_READ_FAILED or STORE_WRITE_FAILED) with SQLite's words. */
  #guard<T>(kind: 'read' | 'write', fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      if (err instanceof StoreError) throw err;
      throw new StoreError(
        kind === 'read' ? 'STORE_READ_FAILED' : 'STORE_WRITE_FAILED',
        `state database ${this.path}: ${kind} failed: ${detail(err)}`,
        err,
      );
    }
  }

  /** prepare compiles a statement whose failures become StoreErrors (STORE_WRITE_FAILED, or STORE_READ_FAILED for reads). */
  prepare(sql: string): Stmt {
    const stmt = this.#db.prepare(sql);
    return {
      run: (...p) => this.#guard('write', () => stmt.run(...p)),
      get: <T>(...p: SQLInputValue[]) => this.#guard('read', () => stmt.get(...p) as T | undefined),
      all: <T>(...p: SQLInputValue[]) => this.#guard('read', () => stmt.all(...p) as T[]),
    };
  }

  /** transaction runs `fn` in one IMMEDIATE transaction; any failure rolls it back and is a StoreError. */
  transaction<T>(fn: () => T): T {
    try {
      this.#db.exec('BEGIN IMMEDIATE');
      const out = fn();
      this.#db.exec('COMMIT');
      return out;
    } catch (err) {
      try {
        if (this.#db.isTransaction) this.#db.exec('ROLLBACK');
      } catch {
        /* SQLite rolled back by itself (e.g. on a full disk) */
      }
      if (err instanceof StoreError && err.code === 'STORE_WRITE_FAILED') throw err;
      throw new StoreError('STORE_WRITE_FAILED', `state database ${this.path}: write failed: ${detail(err)}`, err);
    }
  }

  /** relaxed runs `fn` with synchronous=NORMAL: for writes whose loss in a power cut only repeats work. */
  relaxed<T>(fn: () => T): T {
    this.#guard('write', () => this.#db.exec('PRAGMA synchronous = NORMAL'));
    try {
      return fn();
    } finally {
      this.#guard('write', () => this.#db.exec('PRAGMA synchronous = FULL'));
    }
  }

  close(): void {
    if (this.#db.isOpen) this.#db.close();
  }
}

/** damaged words what to do about a damaged database. */
export function damaged(path: string, reason: string): string {
  const said = reason
    .replace(/\*\*\* in database \w+ \*\*\*\s*/g, '')
    .trim()
    .replace(/\s*\n\s*/g, '; ');
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
    ${MIGRATIONS.filter((m) => m.version > version)
      .map((m) => m.sql)
      .join('\n')}
    INSERT INTO meta (key, value) VALUES ('schema_version', '${SCHEMA_VERSION}')
      ON CONFLICT (key) DO UPDATE SET value = excluded.value;
    COMMIT;
  `);
}
