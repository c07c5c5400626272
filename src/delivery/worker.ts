/**
 * Worker delivers the outbox rows of one sink: it reads only that sink's rows, sends them in
 * batches within the per-attempt timeout, and records each outcome (delivered, retry with
 * backoff, dead letter), so a sink that hangs or is down never delays another.
 */
import type { Logger } from 'pino';
import type { DeliveryConfig, Outcome, Sink } from '../sinks/contract.ts';
import type { FilterConfig } from '../pipeline/filter.ts';
import { fromJson } from '../pipeline/cloudevent.ts';
import { deadline, fullJitter } from '../lib/time.ts';
import { errorFields } from '../lib/errors.ts';
import { printable } from '../lib/printable.ts';
import type { Outbox, OutboxRow } from '../store/store.ts';

export interface DispatchTarget {
  readonly name: string;
  readonly type: string;
  readonly sink: Sink;
  readonly delivery: DeliveryConfig;
  readonly maxBatchSize: number;
  /** Which CloudEvents the sink takes. */
  readonly filter: FilterConfig;
  /** A preparation: its success can approve an event (a sink with `prepare: true`). */
  readonly prepare: boolean;
  /** A sink that prepares the VM and gives it back (it takes completed and canceled too). */
  readonly undoes: boolean;
  /** A preparation that acts on an Advisory too (a kubernetes sink with advisory: cordon). */
  readonly advisories?: boolean;
}

export interface OutcomeReport {
  sink: string;
  ceId: string;
  eventId: string;
  /** The CloudEvent's transition: never parsed out of its id, which an EventId may shape. */
  transition: string;
  outcome: 'delivered' | 'retry' | 'dead-letter';
  attempts: number;
  reason?: string;
  createdAt: number;
  /** How long the attempt took. */
  durationMs: number;
  /** What the sink said it did, when delivered. */
  detail?: string;
}

export interface DispatcherOptions {
  outbox: Outbox;
  targets: readonly DispatchTarget[];
  logger: Logger;
  now?: () => number;
  random?: () => number;
  /** Called after every attempt's outcome is recorded. */
  onOutcome?: (report: OutcomeReport) => void;
  /** Cleans a failure reason before it is stored (peers may echo credentials back). */
  scrub?: (text: string) => string;
}

/** How long a stopping daemon lets in-flight deliveries finish (SIGTERM to exit). */
export const SHUTDOWN_DEADLINE_MS = 10_000;

const ABORTED = Symbol('aborted');
/** The longest failure reason kept (in the outbox, the dead letters and the logs). */
const MAX_REASON = 300;

/** isOutcome: one of the three outcomes of the sink contract, well-formed. */
function isOutcome(o: unknown): o is Outcome {
  if (o === null || typeof o !== 'object') return false;
  const v = o as { status?: unknown; reason?: unknown; retryAfterMs?: unknown };
  if (v.status === 'delivered') return true;
  if (typeof v.reason !== 'string') return false;
  if (v.status === 'reject') return true;
  return (
    v.status === 'retry' &&
    (v.retryAfterMs === undefined || (typeof v.retryAfterMs === 'number' && Number.isFinite(v.retryAfterMs) && v.retryAfterMs >= 0))
  );
}

function describe(o: unknown): string {
  try {
    return (JSON.stringify(o) ?? String(o)).slice(0, 100);
  } catch {
    return typeof o;
  }
}
const RESCAN_MS = 5000;

export class Worker {
  readonly #t: DispatchTarget;
  readonly #o: Required<Pick<DispatcherOptions, 'now' | 'random'>> & DispatcherOptions;
  readonly #abort = new AbortController();
  #wake: (() => void) | null = null;
  #pending = false;
  #stopping = false;
  #idleTimer: NodeJS.Timeout | null = null;
  done: Promise<void> = Promise.resolve();

  constructor(target: DispatchTarget, options: Required<Pick<DispatcherOptions, 'now' | 'random'>> & DispatcherOptions) {
    this.#t = target;
    this.#o = options;
  }

  start(): void {
    this.done = this.#loop();
  }

  notify(): void {
    this.#pending = true;
    this.#wake?.();
  }

  stop(): void {
    this.#stopping = true;
    this.#wake?.();
  }

  abortInFlight(): void {
    this.#abort.abort(new Error('shutdown deadline reached'));
  }

  async #loop(): Promise<void> {
    const { outbox, logger } = this.#o;
    while (!this.#stopping) {
      this.#pending = false;
      let rows: OutboxRow[];
      try {
        rows = outbox.due(this.#t.name, this.#o.now(), this.#t.maxBatchSize);
      } catch (err) {
        logger.error({ sink: this.#t.name, ...errorFields(err) }, 'cannot read the outbox');
        await this.#idle(1000);
        continue;
      }
      if (rows.length === 0) {
        // Rows may also arrive from another process (dead-letters replay): look again now and then.
        const next = outbox.nextDueAt(this.#t.name);
        await this.#idle(Math.min(RESCAN_MS, next === null ? RESCAN_MS : Math.max(0, next - this.#o.now())));
        continue;
      }
      try {
        rows = this.#begin(rows);
      } catch (err) {
        logger.error({ sink: this.#t.name, ...errorFields(err) }, 'cannot record the start of an attempt');
        await this.#idle(1000);
        continue;
      }
      if (rows.length === 0) continue;
      const started = performance.now();
      const outcomes = await this.#attempt(rows);
      try {
        this.#record(rows, outcomes, performance.now() - started);
      } catch (err) {
        logger.error({ sink: this.#t.name, ...errorFields(err) }, 'cannot record delivery outcomes; they will be sent again');
        await this.#idle(1000);
      }
    }
  }

  /**
   * begin counts the attempt on every row before it is made. A row whose earlier attempts all
   * died with the process (it has started maxAttempts already) is dead-lettered instead, with
   * the reason, and not sent again.
   */
  #begin(rows: OutboxRow[]): OutboxRow[] {
    const { outbox, logger } = this.#o;
    const max = this.#t.delivery.maxAttempts;
    const spent = rows.filter((r) => r.attempts >= max);
    for (const r of spent) {
      const why = `gave up after ${r.attempts} attempts: ${r.lastError ?? 'ATTEMPT_INTERRUPTED'}`;
      outbox.deadLetter(r.rowId, r.attempts, why, this.#o.now());
      logger.error(
        { sink: this.#t.name, eventId: r.eventId, ceId: r.ceId, attempts: r.attempts, code: 'DELIVERY_EXHAUSTED' },
        `${why}; dead-lettered`,
      );
      this.#report(r, 'dead-letter', r.attempts, 0, r.lastError ?? 'ATTEMPT_INTERRUPTED');
    }
    const live = spent.length === 0 ? rows : rows.filter((r) => r.attempts < max);
    if (live.length > 0) outbox.beginAttempts(live.map((r) => r.rowId));
    return live;
  }

  /** report tells onOutcome what became of one row. */
  #report(row: OutboxRow, outcome: OutcomeReport['outcome'], attempts: number, durationMs: number, reason?: string, detail?: string): void {
    this.#o.onOutcome?.({
      sink: this.#t.name,
      ceId: row.ceId,
      eventId: row.eventId,
      transition: row.transition,
      outcome,
      attempts,
      createdAt: row.createdAt,
      durationMs,
      ...(reason ? { reason } : {}),
      ...(detail ? { detail } : {}),
    });
  }

  /** idle waits for a notify, a stop, or `ms`. */
  async #idle(ms: number): Promise<void> {
    if (this.#pending || this.#stopping) return;
    await new Promise<void>((resolve) => {
      this.#wake = resolve;
      this.#idleTimer = setTimeout(resolve, ms);
    });
    this.#wake = null;
    if (this.#idleTimer) clearTimeout(this.#idleTimer);
    this.#idleTimer = null;
  }

  async #attempt(rows: readonly OutboxRow[]): Promise<Outcome[]> {
    const { timeoutMs } = this.#t.delivery;
    const attempt = deadline(timeoutMs, this.#abort.signal);
    try {
      const events = rows.map((r) => fromJson(r.json));
      const result = await Promise.race([this.#t.sink.send(events, { signal: attempt.signal }), attempt.aborted.then(() => ABORTED)]);
      if (result === ABORTED) {
        const reason = attempt.timedOut ? `TIMEOUT: no answer within ${timeoutMs} ms` : 'SHUTDOWN: send aborted at shutdown';
        return rows.map(() => ({ status: 'retry', reason }));
      }
      if (!Array.isArray(result) || result.length !== rows.length) {
        throw new Error(
          `sink ${this.#t.name} returned ${Array.isArray(result) ? result.length : typeof result} outcomes for ${rows.length} events`,
        );
      }
      return result.map((o: unknown) => {
        if (isOutcome(o)) return o;
        const reason = `SINK_INVALID_OUTCOME: the sink returned ${describe(o)}; an outcome is { status: 'delivered' }, { status: 'retry', reason } or { status: 'reject', reason }`;
        this.#o.logger.error({ sink: this.#t.name, code: 'SINK_INVALID_OUTCOME' }, reason);
        return { status: 'retry', reason };
      });
    } catch (err) {
      const f = errorFields(err);
      this.#o.logger.error({ sink: this.#t.name, ...f }, 'sink failed unexpectedly; the events stay in the outbox');
      return rows.map(() => ({ status: 'retry', reason: `${f.code}: ${f.err}` }));
    } finally {
      attempt.release();
    }
  }

  #record(rows: readonly OutboxRow[], outcomes: readonly Outcome[], durationMs: number): void {
    const { outbox, logger } = this.#o;
    const now = this.#o.now();
    const d = this.#t.delivery;
    const deliveredIds: number[] = [];
    // scrubbed first, then cut: a secret that straddled the cut would leave its prefix behind
    const scrub = this.#o.scrub ?? ((t: string) => t);
    const clean = (t: string) => printable(scrub(t), MAX_REASON);
    rows.forEach((row, i) => {
      const raw = outcomes[i]!;
      const outcome: Outcome = raw.status === 'delivered' ? raw : { ...raw, reason: clean(raw.reason) };
      const attempts = row.attempts + 1;
      const fields = { sink: this.#t.name, eventId: row.eventId, ceId: row.ceId, attempts };
      const report = (o: OutcomeReport['outcome'], reason?: string, detail?: string) =>
        this.#report(row, o, attempts, durationMs, reason, detail);
      if (outcome.status === 'delivered') {
        deliveredIds.push(row.rowId);
        const detail = typeof outcome.detail === 'string' ? clean(outcome.detail) : undefined;
        logger.debug(detail ? { ...fields, detail } : fields, 'delivered');
        report('delivered', undefined, detail);
        return;
      }
      if (outcome.status === 'reject') {
        outbox.deadLetter(row.rowId, attempts, `rejected: ${outcome.reason}`, now);
        logger.error({ ...fields, code: 'DELIVERY_REJECTED', err: outcome.reason }, 'rejected by the sink; dead-lettered');
        report('dead-letter', outcome.reason);
        return;
      }
      const backoff = fullJitter(row.attempts, d.initialBackoffMs, d.maxBackoffMs, this.#o.random);
      const delay = Math.max(backoff, Math.min(outcome.retryAfterMs ?? 0, d.maxBackoffMs));
      const expired = now + delay - row.createdAt > d.maxAgeMs;
      if (attempts >= d.maxAttempts || expired) {
        const why = attempts >= d.maxAttempts ? `gave up after ${attempts} attempts` : `gave up after ${d.maxAgeMs} ms`;
        outbox.deadLetter(row.rowId, attempts, `${why}: ${outcome.reason}`, now);
        logger.error({ ...fields, code: 'DELIVERY_EXHAUSTED', err: outcome.reason }, `${why}; dead-lettered`);
        report('dead-letter', outcome.reason);
        return;
      }
      outbox.reschedule(row.rowId, attempts, now + delay, outcome.reason);
      logger.warn({ ...fields, code: 'DELIVERY_RETRY', err: outcome.reason, retryInMs: delay }, 'delivery failed; will retry');
      report('retry', outcome.reason);
    });
    if (deliveredIds.length > 0) outbox.markDelivered(deliveredIds);
  }
}
