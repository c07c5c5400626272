/**
 * StateLock makes sure one daemon at a time uses a state database: two would both deliver
 * every outbox row (each event twice at every sink, each hook run twice).
 *
 * The lock is SQLite's own exclusive lock on a small companion file, `<state>.lock`, held in
 * EXCLUSIVE locking mode for as long as the daemon runs. The operating system drops it when
 * the process ends, however it ends, so a daemon killed with SIGKILL never blocks its restart,
 * and it works the same on Linux (fcntl locks) and Windows (LockFileEx). The state database
 * itself stays open to readers: `status` and `dead-letters list` work beside a running daemon.
 *
 * The lock file sits beside what the path resolves to (links followed), so two daemons that
 * name one database by different paths (a symbolic link to the file or to its directory) still
 * meet at one lock.
 */
import { mkdirSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { StoreError } from './store.ts';

export class StateLock {
  readonly path: string;
  #db: DatabaseSync | null;

  private constructor(path: string, db: DatabaseSync) {
    this.path = path;
    this.#db = db;
  }

  /** acquire takes the lock of the state database at `statePath`, or throws StoreError STORE_LOCKED. */
  static acquire(statePath: string): StateLock {
    let db: DatabaseSync | null = null;
    let real = statePath;
    let path = `${statePath}.lock`;
    try {
      mkdirSync(dirname(statePath), { recursive: true });
      real = resolvedPath(statePath);
      path = `${real}.lock`;
      db = new DatabaseSync(path);
      db.exec('PRAGMA busy_timeout = 0');
      db.exec('PRAGMA locking_mode = EXCLUSIVE');
      // the first write takes the exclusive lock; EXCLUSIVE mode keeps it until close
      db.exec('BEGIN EXCLUSIVE');
      db.exec('CREATE TABLE IF NOT EXISTS owner (pid INTEGER NOT NULL, since TEXT NOT NULL)');
      db.exec('DELETE FROM owner');
      db.prepare('INSERT INTO owner (pid, since) VALUES (?, ?)').run(process.pid, new Date().toISOString());
      db.exec('COMMIT');
      return new StateLock(path, db);
    } catch (err) {
      try {
        db?.close();
      } catch {
        /* closing a handle that failed */
      }
      const e = err as { errcode?: number; errstr?: string; code?: string; message?: string };
      if (e.errcode === 5 || e.errcode === 6) {
        throw new StoreError(
          'STORE_LOCKED',
          `another se-bridge daemon is using the state database ${real}${real === statePath ? '' : ` (${statePath} leads there)`} (it holds ${path}); stop it first, or give this one its own state.path`,
          err,
        );
      }
      throw new StoreError(
        'STORE_OPEN_FAILED',
        `cannot lock the state database ${statePath} (${path}): ${e.errstr ?? e.code ?? e.message}`,
        err,
      );
    }
  }

  /** release lets the next daemon start; the operating system does the same when the process ends. */
  release(): void {
    if (this.#db?.isOpen) this.#db.close();
    this.#db = null;
  }
}

/** resolvedPath: the file a path names, links followed; for a file not made yet, its directory's. */
function resolvedPath(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    try {
      return join(realpathSync(dirname(p)), basename(p));
    } catch {
      return resolve(p);
    }
  }
}
