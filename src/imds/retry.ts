/**
 * The one IMDS retry policy, for every caller of IMDS: the poll loop, the approval service
 * (StartRequests) and `se-bridge status`.
 *
 * - Only an ImdsError that is retryable is tried again (410, 429, 5xx, network, timeout,
 *   unparsable); a 400 or 404 will not change by asking again.
 * - The pause grows with full jitter from the caller's interval and never passes
 *   `maxPauseMs`, a Retry-After included: a Spot eviction gives 30 s of notice, so the bridge
 *   must not look away for longer than a few seconds whatever IMDS says. The shared
 *   5 requests/s budget (rate-budget.ts) keeps the retries polite.
 * - 410 Gone is documented as "retry after some time, for at most 70 s": GONE_LIMIT_MS.
 */
import { fullJitter, sleep } from '../lib/time.ts';
import { ImdsError } from './errors.ts';

/** IMDS documents 410 as "retry after some time, for at most 70 s". */
export const GONE_LIMIT_MS = 70_000;

/**
 * retryPause is how long to wait after `failures` failed IMDS requests in a row:
 * full jitter that grows from the poll interval, never below the interval and never above
 * `maxPauseMs` (itself never below the interval). A Retry-After is honoured up to that cap:
 * a Spot eviction gives 30 s of notice, so the bridge must not look away for longer than a
 * few seconds whatever IMDS says, and the shared 5 requests/s budget keeps it polite.
 */
export function retryPause(
  failures: number,
  o: { intervalMs: number; maxPauseMs: number; retryAfterMs?: number | undefined },
  random: () => number = Math.random,
): number {
  const cap = Math.max(o.intervalMs, o.maxPauseMs);
  const jitter = fullJitter(Math.max(0, failures - 1), o.intervalMs, cap, random);
  return Math.min(cap, Math.max(o.intervalMs, jitter, o.retryAfterMs ?? 0));
}

export interface RetryOptions {
  /** The least pause, and where the jitter starts. */
  readonly intervalMs: number;
  /** The longest pause between two attempts. */
  readonly maxPauseMs: number;
  /** Give up after this many attempts (default: no limit). */
  readonly maxAttempts?: number;
  /** Give up once this long has passed since the first attempt; for 410, at least GONE_LIMIT_MS. */
  readonly deadlineMs?: number;
  readonly signal?: AbortSignal | undefined;
  readonly random?: () => number;
}

/** retryImds runs `attempt` until it succeeds, fails for good, or the attempts or the time run out. */
export async function retryImds<T>(attempt: () => Promise<T>, o: RetryOptions): Promise<T> {
  const started = Date.now();
  for (let failures = 1; ; failures++) {
    try {
      return await attempt();
    } catch (err) {
      if (!(err instanceof ImdsError) || !err.retryable) throw err;
      if (o.maxAttempts !== undefined && failures >= o.maxAttempts) throw err;
      const limit = err.code === 'IMDS_GONE' && o.deadlineMs !== undefined ? Math.max(GONE_LIMIT_MS, o.deadlineMs) : o.deadlineMs;
      if (limit !== undefined && Date.now() - started > limit) throw err;
      await sleep(retryPause(failures, { ...o, retryAfterMs: err.retryAfterMs }, o.random), o.signal);
    }
  }
}

/**
 * GoneWatch follows a run of 410 answers for a caller that never gives up (the poll loop):
 * `failed` says true once, when the run has lasted longer than the documented 70 s.
 */
export class GoneWatch {
  #since: number | null = null;
  #reported = false;

  failed(err: unknown, now: number = Date.now()): boolean {
    if (!(err instanceof ImdsError) || err.code !== 'IMDS_GONE') {
      this.succeeded();
      return false;
    }
    this.#since ??= now;
    if (this.#reported || now - this.#since <= GONE_LIMIT_MS) return false;
    this.#reported = true;
    return true;
  }

  /** How long the run of 410s has lasted. */
  sinceMs(now: number = Date.now()): number {
    return this.#since === null ? 0 : now - this.#since;
  }

  succeeded(): void {
    this.#since = null;
    this.#reported = false;
  }
}
