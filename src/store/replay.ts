/**
 * ReplayCache: the keys of requests already answered (a webhook-id, a used token's nonce),
 * each with its answer, until it expires: a replayed request gets the first answer again and
 * changes nothing.
 */
import type { Db } from './db.ts';

export class ReplayCache {
  readonly #s;

  constructor(db: Db) {
    this.#s = {
      get: db.prepare('SELECT response FROM replay WHERE key = ? AND expires_at > ?'),
      insert: db.prepare('INSERT OR IGNORE INTO replay (key, response, expires_at) VALUES (?, ?, ?)'),
      prune: db.prepare('DELETE FROM replay WHERE expires_at <= ?'),
    };
  }

  /** remember records a key with the response given; false when it was already there. */
  remember(key: string, response: string | null, ttlMs: number, now: number = Date.now()): boolean {
    this.#s.prune.run(now);
    return Number(this.#s.insert.run(key, response, now + ttlMs).changes) === 1;
  }

  /** recalled returns what was answered for a key still remembered, or undefined. */
  recalled(key: string, now: number = Date.now()): string | null | undefined {
    const row = this.#s.get.get<{ response: string | null }>(key, now);
    return row === undefined ? undefined : row.response;
  }
}
