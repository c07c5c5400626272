/**
 * PollLoop polls IMDS for ever: one `pollOnce` per interval, each change committed to the
 * store in one transaction (document, CloudEvents, outbox rows). A failed read never looks
 * like "no events": it produces no transitions, counts as a failure, and the next read comes
 * after the one IMDS retry policy's pause (imds/retry.ts).
 */
import { uptime } from 'node:os';
import type { Logger } from 'pino';
import type { ImdsClient } from '../imds/client.ts';
import { ImdsError } from '../imds/errors.ts';
import { GoneWatch, retryPause } from '../imds/retry.ts';
import type { EventsDocument } from '../imds/wire.ts';
import { errorFields, messageOf } from '../lib/errors.ts';
import { sleep } from '../lib/time.ts';
import { isDrill } from '../imds/drill-id.ts';
import type { Metrics } from '../observability/metrics.ts';
import { MappingError, type BridgeEvent } from '../pipeline/cloudevent.ts';
import { pollOnce, type Baseline, type PollResult } from '../pipeline/poll.ts';
import type { BridgeState } from '../imds/view.ts';
import { StoreError, type Journal, type PendingEvent, type StoredDocument } from '../store/store.ts';

export interface PollLoopOptions {
  readonly client: ImdsClient;
  /** Where each change is committed. */
  readonly journal: Journal;
  /** The last document the store held when it opened. */
  readonly last: StoredDocument | null;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly intervalMs: number;
  readonly maxRetryPauseMs: number;
  /** The read model: the poll loop writes `document` and `goodReads`, and reads `vm`. */
  readonly state: BridgeState;
  /** Routes CloudEvents to the sinks whose filters they pass. */
  readonly route: (events: readonly BridgeEvent[]) => PendingEvent[];
  /** Called after a change is committed, with its CloudEvents and the new document. */
  readonly committed: (events: readonly BridgeEvent[], document: EventsDocument) => void;
  /** Called after every successful read (changed or not), with the document it left current. */
  readonly read?: (document: EventsDocument) => void;
  /** Whether IMDS accepted this bridge's StartRequests for an event (the approval records). */
  readonly approved?: (eventId: string) => boolean;
  /** When the system booted (ms since epoch; default from the system's uptime), or null when unknown. */
  readonly bootedAt?: number | null;
}

/** How often, at most, the time of an unchanged good read is written down (see #remember). */
const READ_TIME_SAVE_MS = 60_000;

export class PollLoop {
  readonly #o: PollLoopOptions;
  /** The ETag of the document in the read model. */
  #etag: string | null;
  #failures = 0;
  #lastError: string | null = null;
  #lastErrorWasImds = true;
  #firstPollAt: number | null = null;
  /** When the last good read was made: at start, the last one the store knows of. */
  #lastReadAt: number | null;
  #readAtSaved = 0;
  readonly #bootedAt: number | null;

  constructor(options: PollLoopOptions) {
    this.#o = options;
    const last = options.last;
    this.#etag = last?.etag ?? null;
    options.state.document = last?.document ?? null;
    const at = last === null ? Number.NaN : Date.parse(last.observedAt);
    this.#lastReadAt = Number.isFinite(at) ? at : null;
    this.#bootedAt = options.bootedAt === undefined ? systemBootedAt() : options.bootedAt;
  }

  /** The document diffed against: the read model's (committed, or read back from the store at start), with its ETag. */
  get #baseline(): Baseline | null {
    const document = this.#o.state.document;
    return document === null ? null : { document, etag: this.#etag };
  }

  get failures(): number {
    return this.#failures;
  }

  get lastError(): string | null {
    return this.#lastError;
  }

  get goodReads(): number {
    return this.#o.state.goodReads;
  }

  get firstPollAt(): number | null {
    return this.#firstPollAt;
  }

  /** Why the bridge is not ready, in words for /readyz. */
  reason(ready: boolean): string {
    const what = this.#lastErrorWasImds ? 'IMDS reads' : 'polls';
    if (ready) return 'IMDS reads succeed';
    return this.#o.state.goodReads === 0 ? 'no good IMDS read yet' : `${this.#failures} ${what} failed in a row (${this.#lastError})`;
  }

  async run(signal: AbortSignal): Promise<void> {
    const { logger, metrics, journal, intervalMs } = this.#o;
    const gone = new GoneWatch();
    while (!signal.aborted) {
      // The interval runs from the end of one poll to the start of the next, so a slow answer or a
      // wait for the shared rate budget never bunches the following polls together.
      let wait: number;
      this.#firstPollAt ??= Date.now();
      try {
        const readAt = new Date();
        const result = await pollOnce(this.#o.client, this.#baseline, this.#o.state.vm, {
          signal,
          now: () => readAt,
          priorOccurrences: (key) => journal.priorOccurrences(key),
          end: {
            lastReadAt: this.#lastReadAt,
            bootedAt: this.#bootedAt,
            approved: this.#o.approved ?? (() => false),
            statusOnly: isDrill,
          },
        });
        this.#apply(result, readAt);
        this.#remember(result, readAt);
        const document = this.#o.state.document;
        if (document !== null) this.#o.read?.(document);
        metrics.polls.inc({ result: result.kind, code: '' });
        metrics.consecutiveFailures.set(0);
        if (this.#failures > 0) logger.info({ failures: this.#failures }, 'polls recovered');
        this.#failures = 0;
        this.#lastError = null;
        this.#o.state.goodReads += 1;
        gone.succeeded();
        wait = intervalMs;
      } catch (err) {
        if (signal.aborted) break;
        wait = this.#failed(err, gone);
      }
      try {
        await sleep(wait, signal);
      } catch {
        break;
      }
    }
  }

  /** failed counts and reports one failed poll, and says how long to wait before the next. */
  #failed(err: unknown, gone: GoneWatch): number {
    const { logger, metrics } = this.#o;
    this.#failures += 1;
    const f = errorFields(err);
    const imds = err instanceof ImdsError;
    metrics.polls.inc({ result: 'error', code: f.code });
    // only a failed IMDS read counts as one: a store or mapping failure followed a good read
    metrics.consecutiveFailures.set(imds ? this.#failures : 0);
    this.#lastError = f.code;
    this.#lastErrorWasImds = imds;
    const wait = retryPause(this.#failures, {
      intervalMs: this.#o.intervalMs,
      maxPauseMs: this.#o.maxRetryPauseMs,
      retryAfterMs: imds ? err.retryAfterMs : undefined,
    });
    if (gone.failed(err)) {
      logger.error({ ...f, sinceMs: gone.sinceMs() }, 'IMDS has answered 410 for longer than the documented 70 s; still retrying');
    }
    if (imds) {
      logger.warn({ ...f, failures: this.#failures, retryInMs: wait }, 'IMDS read failed; no transitions from this poll');
    } else if (err instanceof StoreError) {
      logger.error(
        { ...f, failures: this.#failures, retryInMs: wait },
        'cannot write the state database; the change is committed on a later poll',
      );
    } else {
      // IMDS answered well; turning its document into CloudEvents failed: a defect of ours
      logger.error(
        { ...f, failures: this.#failures, retryInMs: wait },
        'cannot map the IMDS document to CloudEvents; nothing was committed, the next poll tries again',
      );
    }
    return wait;
  }

  /**
   * remember keeps the time of this good read: the next diff asks whether the system booted after
   * it. The store keeps it too, so that a bridge started after a reboot knows the last read before
   * it: a change writes it with the document; an unchanged read, at the first read of a process
   * and then at most once a minute.
   */
  #remember(result: PollResult, readAt: Date): void {
    const at = readAt.getTime();
    this.#lastReadAt = at;
    if (result.kind === 'changed') {
      this.#readAtSaved = at;
    } else if (this.#o.state.document !== null && at - this.#readAtSaved >= READ_TIME_SAVE_MS) {
      this.#o.journal.saveReadAt(readAt.toISOString());
      this.#readAtSaved = at;
    }
  }

  #apply(result: PollResult, readAt: Date): void {
    const { logger, journal, metrics } = this.#o;
    if (result.kind === 'unchanged') {
      if (result.etagChanged && this.#baseline !== null) {
        journal.saveEtag(result.etag);
        this.#etag = result.etag;
      }
      return;
    }
    const previous = this.#baseline?.document ?? null;
    if (result.duplicates > 0) {
      logger.warn(
        { code: 'IMDS_DUPLICATE_EVENT_IDS', count: result.duplicates },
        'IMDS listed an EventId more than once; kept the entry furthest along',
      );
    }
    if (previous !== null && result.document.incarnation < previous.incarnation) {
      logger.info(
        { from: previous.incarnation, to: result.document.incarnation },
        'DocumentIncarnation went backwards; diffing by EventId against the new baseline',
      );
    }
    let pending: PendingEvent[];
    try {
      pending = this.#o.route(result.events).map((p, i) => ({ ...p, occurrence: result.occurrences[i] }));
    } catch (err) {
      throw new MappingError(`cannot route the CloudEvents of IMDS document ${result.document.incarnation}: ${messageOf(err)}`, err);
    }
    metrics.observeDocument(result.document);
    for (const p of pending) metrics.transitions.inc({ transition: p.transition, drill: String(isDrill(p.eventId)) });
    const { superseded } = journal.commit({
      document: result.document,
      etag: result.etag,
      observedAt: readAt.toISOString(),
      events: pending,
    });
    if (superseded > 0) {
      logger.info({ superseded }, 'preparations of an occurrence that ended stop: delivered as superseded, not tried again');
    }
    this.#etag = result.etag;
    this.#o.state.document = result.document;
    for (const p of pending) {
      logger.info(
        { transition: p.transition, eventId: p.eventId, ceId: p.id, incarnation: result.document.incarnation, sinks: p.sinks },
        `event ${p.transition}`,
      );
    }
    this.#o.committed(pending.length > 0 ? result.events : [], result.document);
  }
}

/** systemBootedAt is when the system booted, from its uptime (ms since epoch), or null when the system does not say. */
export function systemBootedAt(now: number = Date.now()): number | null {
  const up = uptime();
  return Number.isFinite(up) && up > 0 ? now - up * 1000 : null;
}
