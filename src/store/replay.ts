/**
 * ReplayCache: requests already answered, each until it expires, one kind of key per method: the
 * approval API's answers by webhook-id (a replayed request gets the first answer again and
 * changes nothing), the nonces of approval tokens already spent, and the fleet commands already
 * applied with their outcome.
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

  /** answer is what the approval API answered to a webhook-id, or undefined. */
  answer(webhookId: string, now?: number): string | undefined {
    return this.#recalled(`webhook-id:${webhookId}`, now) ?? undefined;
  }
  /** rememberAnswer keeps what the approval API answered to a webhook-id; false when it was already kept. */
  rememberAnswer(webhookId: string, answer: string, ttlMs: number, now?: number): boolean {
    return this.#remember(`webhook-id:${webhookId}`, answer, ttlMs, now);
  }

  /** tokenSpent: an approval token with this nonce was used (through this VM's page or its fleet inbox). */
  tokenSpent(nonce: string, now?: number): boolean {
    return this.#recalled(`token:${nonce}`, now) !== undefined;
  }
  /** spendToken records that the token with this nonce was used; false when it already was. */
  spendToken(nonce: string, ttlMs: number, now?: number): boolean {
    return this.#remember(`token:${nonce}`, null, ttlMs, now);
  }

  /** command is what was recorded when the fleet command with this id was applied, or undefined. */
  command(id: string, now?: number): string | undefined {
    return this.#recalled(`command:${id}`, now) ?? undefined;
  }
  /** rememberCommand records a fleet command as applied, with what it did; false when it already was. */
  rememberCommand(id: string, record: string, ttlMs: number, now?: number): boolean {
    return this.#remember(`command:${id}`, record, ttlMs, now);
  }

  #remember(key: string, response: string | null, ttlMs: number, now: number = Date.now()): boolean {
    this.#s.prune.run(now);
    return Number(this.#s.insert.run(key, response, now + ttlMs).changes) === 1;
  }

  #recalled(key: string, now: number = Date.now()): string | null | undefined {
    const row = this.#s.get.get<{ response: string | null }>(key, now);
    return row === undefined ? undefined : row.response;
  }
}
