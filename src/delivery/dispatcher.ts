/**
 * Dispatcher delivers the outbox: one worker per sink, each reading only its own rows, so a
 * sink that hangs or is down never delays another. Within a sink, events of one EventId go
 * out in the order they were committed (a `started` never overtakes its `scheduled`).
 *
 * The dispatcher owns the delivery policy for every sink alike: a per-attempt timeout,
 * full-jitter exponential backoff honouring a capped Retry-After, `maxAttempts` and
 * `maxAgeMs`, then a dead letter holding the last error. A row leaves the outbox only when it
 * is delivered or dead-lettered.
 */

import { SHUTDOWN_DEADLINE_MS, Worker, type DispatcherOptions } from './worker.ts';
import { errorFields } from '../lib/errors.ts';

export { SHUTDOWN_DEADLINE_MS, type DispatcherOptions, type DispatchTarget, type OutcomeReport } from './worker.ts';

export class Dispatcher {
  readonly #workers: Map<string, Worker>;
  readonly #options: DispatcherOptions;

  constructor(options: DispatcherOptions) {
    this.#options = options;
    const full = { now: Date.now, random: Math.random, ...options };
    this.#workers = new Map(options.targets.map((t) => [t.name, new Worker(t, full)]));
  }

  start(): void {
    for (const w of this.#workers.values()) w.start();
  }

  /** notify wakes the workers: new rows were committed. */
  notify(): void {
    for (const w of this.#workers.values()) w.notify();
  }

  /**
   * stop lets in-flight sends finish within `deadlineMs`, then aborts them; what was not
   * delivered stays in the outbox for the next start. Sinks are closed afterwards.
   */
  async stop(deadlineMs = SHUTDOWN_DEADLINE_MS): Promise<void> {
    const workers = [...this.#workers.values()];
    for (const w of workers) w.stop();
    const all = Promise.all(workers.map((w) => w.done));
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([
      all.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), deadlineMs))),
    ]);
    clearTimeout(timer);
    if (late) {
      this.#options.logger.warn(
        { code: 'SHUTDOWN_DEADLINE', deadlineMs },
        'in-flight deliveries aborted at the shutdown deadline; they stay in the outbox',
      );
      for (const w of workers) w.abortInFlight();
      await all;
    }
    await Promise.all(
      this.#options.targets.map((t) =>
        t.sink.close().catch((err: unknown) => this.#options.logger.warn({ sink: t.name, ...errorFields(err) }, 'closing the sink failed')),
      ),
    );
  }
}
