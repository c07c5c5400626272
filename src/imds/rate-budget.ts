/**
 * RateBudget shares IMDS's documented limit of 5 requests per second per VM among every
 * caller in the process (the poller, identity, approvals): `acquire` waits until one more
 * request fits in the last second. A sliding window, so no burst ever exceeds the limit.
 */
import { sleep } from '../lib/time.ts';

export class RateBudget {
  readonly perSecond: number;
  readonly #stamps: number[] = [];
  readonly #now: () => number;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  /** A test passes its own clock and sleep (both in milliseconds) to see the window's decisions in virtual time. */
  constructor(
    perSecond = 5,
    now: () => number = () => performance.now(),
    pause: (ms: number, signal?: AbortSignal) => Promise<void> = sleep,
  ) {
    this.perSecond = perSecond;
    this.#now = now;
    this.#sleep = pause;
  }

  async acquire(signal?: AbortSignal): Promise<void> {
    for (;;) {
      signal?.throwIfAborted();
      const now = this.#now();
      while (this.#stamps.length > 0 && this.#stamps[0]! <= now - 1000) this.#stamps.shift();
      if (this.#stamps.length < this.perSecond) {
        this.#stamps.push(now);
        return;
      }
      await this.#sleep(Math.max(1, Math.ceil(this.#stamps[0]! + 1000 - now)), signal);
    }
  }
}
