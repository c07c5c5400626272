/**
 * RateLimiter: a token bucket per client address. `take` says 0 when the request may go on,
 * else how many milliseconds until it may. Buckets are forgotten wholesale past 10,000
 * clients, so a spray of addresses cannot grow the map without bound.
 */
export class RateLimiter {
  readonly #perSecond: number;
  readonly #burst: number;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(rate: { readonly perSecond: number; readonly burst: number }) {
    this.#perSecond = rate.perSecond;
    this.#burst = rate.burst;
  }

  take(client: string, now: number = Date.now()): number {
    const b = this.#buckets.get(client) ?? { tokens: this.#burst, at: now };
    b.tokens = Math.min(this.#burst, b.tokens + ((now - b.at) / 1000) * this.#perSecond);
    b.at = now;
    this.#buckets.set(client, b);
    if (this.#buckets.size > 10_000) this.#buckets.clear();
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - b.tokens) / this.#perSecond) * 1000);
  }
}
