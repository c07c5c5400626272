/**
 * Time helpers: jittered backoff, Retry-After, abortable sleep and per-operation deadlines.
 * @see https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/ ("full jitter")
 */
import { setTimeout as sleepTimer } from 'node:timers/promises';

/** fullJitter returns a delay in [0, min(cap, base * 2^attempt)). `attempt` counts from 0. */
export function fullJitter(attempt: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * ceiling);
}

/**
 * spread: a period of `ms` varied by up to `fraction` either way ([ms·(1−f), ms·(1+f)]), so that
 * processes started together (a scale set's members) do not keep acting in the same instant.
 */
export function spread(ms: number, fraction: number, random: () => number = Math.random): number {
  return Math.round(ms * (1 - fraction + 2 * fraction * random()));
}

/** parseRetryAfter reads an HTTP Retry-After value (seconds or an HTTP date) as milliseconds. */
export function parseRetryAfter(value: string | string[] | undefined, now: number = Date.now()): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || text.trim() === '') return undefined;
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000;
  const at = Date.parse(text);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

/** sleep resolves after `ms`, or rejects with the signal's reason when it aborts. */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal === undefined) return sleepTimer(ms);
  try {
    await sleepTimer(ms, undefined, { signal });
  } catch (err) {
    throw signal.aborted ? signal.reason : err;
  }
}

/**
 * beating runs `beat` about every `seconds` (varied by a fifth either way, so that members started
 * together drift apart) until the signal aborts.
 */
export async function beating(seconds: number, signal: AbortSignal, beat: () => Promise<unknown>): Promise<void> {
  while (!signal.aborted) {
    await beat();
    await sleep(spread(seconds * 1000, 0.2), signal).catch(() => undefined);
  }
}

/**
 * deadline makes a per-operation AbortSignal that aborts when `parent` aborts or `ms` pass,
 * and detaches from `parent` on `release()`: long-lived parents (the process's shutdown
 * signal) must not collect one listener per request.
 */
export interface Deadline {
  readonly signal: AbortSignal;
  /** True when the time ran out (as opposed to the parent aborting). */
  readonly timedOut: boolean;
  /** Resolves when the signal aborts, for racing against work that ignores signals. */
  readonly aborted: Promise<void>;
  release(): void;
}

export function deadline(ms: number, parent?: AbortSignal): Deadline {
  const controller = new AbortController();
  let timedOut = false;
  let resolveAborted!: () => void;
  const aborted = new Promise<void>((resolve) => (resolveAborted = resolve));
  controller.signal.addEventListener('abort', () => resolveAborted(), { once: true });
  const onParent = () => controller.abort(parent?.reason);
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error(`timed out after ${ms} ms`));
  }, ms);
  if (parent?.aborted) onParent();
  else parent?.addEventListener('abort', onParent, { once: true });
  return {
    signal: controller.signal,
    get timedOut() {
      return timedOut;
    },
    aborted,
    release() {
      clearTimeout(timer);
      parent?.removeEventListener('abort', onParent);
    },
  };
}

/** withDeadline settles as `work` does, or rejects with `late()` after `ms` (`late` may also cancel the work). */
export async function withDeadline<T>(work: Promise<T> | T, ms: number, late: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([work, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(late()), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** parseDuration reads a duration on a command line ('90' or '90s', '250ms', '5m', '1h') as milliseconds, or null when it is none of these. */
export function parseDuration(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (m === null) return null;
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  return Math.round(Number(m[1]) * unit);
}
