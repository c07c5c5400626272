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
 * meet at one lock. A hard link has no path to resolve, so the database file's device and inode
 * are locked too: `.se-bridge-<dev>-<ino>.lock` beside it (a hard link in the same directory),
 * and the same name in the temporary directory's `se-bridge-locks/` (one elsewhere on the
 * machine, where services share it), removed again when the lock is released.
 */
import { closeSync, mkdirSync, openSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { StoreError } from './store.ts';

export class StateLock {
  readonly path: string;
  #dbs: DatabaseSync[];
  /** The lock in the shared temporary folder, removed at release: one per database ever started would pile up there. */
  readonly #shared: string | null;

  private constructor(path: string, dbs: DatabaseSync[], shared: string | null) {
    this.path = path;
    this.#dbs = dbs;
    this.#shared = shared;
  }

  /** acquire takes the lock of the state database at `statePath`, or throws StoreError STORE_LOCKED. */
  static acquire(statePath: string): StateLock {
    const held: DatabaseSync[] = [];
    let real = statePath;
    let path = `${statePath}.lock`;
    try {
      mkdirSync(dirname(statePath), { recursive: true });
      // the database file is made (empty: SQLite starts it) so that it has an inode to lock
      closeSync(openSync(statePath, 'a'));
      real = resolvedPath(statePath);
      path = `${real}.lock`;
      held.push(lockFile(path));
      const { dev, ino } = statSync(real);
      const inodeLock = `.se-bridge-${dev}-${ino}.lock`;
      path = join(dirname(real), inodeLock);
      held.push(lockFile(path));
      const shared = join(tmpdir(), 'se-bridge-locks');
      path = join(shared, inodeLock.slice(1));
      try {
        mkdirSync(shared, { recursive: true, mode: 0o1777 });
      } catch {
        /* no shared temporary directory: the two locks above still hold */
      }
      let sharedLock: string | null = null;
      try {
        held.push(lockFile(path));
        sharedLock = path;
      } catch (err) {
        const code = (err as { errcode?: number }).errcode;
        if (code === 5 || code === 6) throw err;
        /* not writable for this user: the two locks above still hold */
      }
      return new StateLock(`${real}.lock`, held, sharedLock);
    } catch (err) {
      for (const db of held) {
        try {
          db.close();
        } catch {
          /* closing a handle that failed */
        }
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
    const held = this.#dbs.length > 0;
    for (const db of this.#dbs) if (db.isOpen) db.close();
    this.#dbs = [];
    // the locks beside the database stay (they are the ones that count); the shared one goes
    if (held && this.#shared !== null) rmSync(this.#shared, { force: true });
  }
}

/** lockFile takes SQLite's exclusive lock of a small file, kept until it is closed; SQLITE_BUSY when another process has it. */
function lockFile(path: string): DatabaseSync {
  const db = new DatabaseSync(path);
  try {
    db.exec('PRAGMA busy_timeout = 0');
    // no journal file beside it: the lock is the file's lock, and nothing in it needs a rollback
    db.exec('PRAGMA journal_mode = MEMORY');
    db.exec('PRAGMA locking_mode = EXCLUSIVE');
    // the first write takes the exclusive lock; EXCLUSIVE mode keeps it until close
    db.exec('BEGIN EXCLUSIVE');
    db.exec('CREATE TABLE IF NOT EXISTS owner (pid INTEGER NOT NULL, since TEXT NOT NULL)');
    db.exec('DELETE FROM owner');
    db.prepare('INSERT INTO owner (pid, since) VALUES (?, ?)').run(process.pid, new Date().toISOString());
    db.exec('COMMIT');
    return db;
  } catch (err) {
    db.close();
    throw err;
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
