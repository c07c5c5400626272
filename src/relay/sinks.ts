/**
 * RelaySinks: the relay's own CloudEvents (`azure.scheduledevent.unwatched`) delivered to the
 * sinks of its configuration, with the bridge's sink types and code. The relay keeps no outbox:
 * each event is tried up to `delivery.maxAttempts` times (at most ten here) with full-jitter
 * backoff, each attempt within `delivery.timeoutMs`, and one that cannot be delivered is logged
 * with RELAY_SINK_FAILED and counted; the store keeps that it was said, so it is not said twice.
 */
import type { Logger } from 'pino';
import type { SinkConfig } from '../config/schema.ts';
import { errorFields, messageOf } from '../lib/errors.ts';
import { deadline, fullJitter, sleep } from '../lib/time.ts';
import { matchesFilter } from '../pipeline/filter.ts';
import { transitionOf, type BridgeEvent } from '../pipeline/cloudevent.ts';
import { sinkModuleOf } from '../registry/sinks.ts';
import type { Sink } from '../sinks/contract.ts';

const MOST_ATTEMPTS = 10;

interface Made {
  readonly config: SinkConfig;
  readonly sink: Sink;
}
type OnOutcome = (sink: string, result: 'delivered' | 'failed') => void;

export class RelaySinks {
  readonly #sinks: Made[];
  readonly #logger: Logger;
  readonly #onOutcome: OnOutcome;

  private constructor(sinks: Made[], logger: Logger, onOutcome: OnOutcome) {
    this.#sinks = sinks;
    this.#logger = logger;
    this.#onOutcome = onOutcome;
  }

  static async create(
    configs: readonly SinkConfig[],
    logger: Logger,
    stdout: NodeJS.WritableStream,
    onOutcome: OnOutcome = () => undefined,
  ): Promise<RelaySinks> {
    const sinks: Made[] = [];
    try {
      for (const config of configs)
        sinks.push({ config, sink: await sinkModuleOf(config).create(config, { logger: logger.child({ sink: config.name }), stdout }) });
    } catch (err) {
      await Promise.allSettled(sinks.map((s) => s.sink.close()));
      throw err;
    }
    return new RelaySinks(sinks, logger, onOutcome);
  }

  /** chat: the sinks named, in that order, that can say the fleet's digest (slack, teams), with how long a call may take. */
  chat(names: readonly string[]): { name: string; sink: Sink; timeoutMs: number }[] {
    return names.flatMap((name) => {
      const s = this.#sinks.find((x) => x.config.name === name);
      return s?.sink.digest === undefined
        ? []
        : [{ name, sink: s.sink, timeoutMs: s.sink.attemptTimeoutMs ?? s.config.delivery.timeoutMs }];
    });
  }

  get size(): number {
    return this.#sinks.length;
  }

  /** emit delivers the event to every sink whose filter takes it; true when every one of them took it. */
  async emit(event: BridgeEvent, signal?: AbortSignal): Promise<boolean> {
    const subject = {
      transition: transitionOf(event),
      eventType: event.data.eventType,
      eventSource: event.data.eventSource,
      resources: event.data.resources,
      eventId: event.data.eventId,
    };
    const results = await Promise.all(
      this.#sinks.filter((s) => matchesFilter(s.config.filter, subject, null)).map((s) => this.#send(s, event, signal)),
    );
    return results.every(Boolean);
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.#sinks.map((s) => s.sink.close()));
  }

  async #send(s: Made, event: BridgeEvent, signal?: AbortSignal): Promise<boolean> {
    const d = s.config.delivery;
    const attempts = Math.min(MOST_ATTEMPTS, d.maxAttempts);
    let why = '';
    for (let attempt = 1; attempt <= attempts && signal?.aborted !== true; attempt++) {
      const limit = deadline(s.sink.attemptTimeoutMs ?? d.timeoutMs, signal);
      try {
        const [outcome] = await s.sink.send([event], { signal: limit.signal });
        if (outcome?.status === 'delivered') {
          this.#onOutcome(s.config.name, 'delivered');
          return true;
        }
        why = outcome === undefined ? 'no outcome' : outcome.reason;
        if (outcome?.status === 'reject') break;
      } catch (err) {
        why = messageOf(err);
      } finally {
        limit.release();
      }
      if (attempt < attempts) await sleep(fullJitter(attempt, d.initialBackoffMs, d.maxBackoffMs), signal).catch(() => undefined);
    }
    this.#onOutcome(s.config.name, 'failed');
    this.#logger.error(
      { ...errorFields(new Error(why)), code: 'RELAY_SINK_FAILED', sink: s.config.name, ceId: event.id },
      `relay: ${event.type} could not be delivered to ${s.config.name}: ${why}`,
    );
    return false;
  }
}
