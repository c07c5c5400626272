/**
 * The health gate of a fleet budget: a member is unavailable until it is whole again. `Settling`
 * says when a member whose maintenance is over may give its slot back (healthy without a break
 * for settleSeconds since, or past timeoutSeconds, said loudly); the other members that count as
 * unavailable without a slot are found in unavailable.ts.
 */
import type { Logger } from 'pino';
import type { HealthMonitor } from '../../health/monitor.ts';

export class Settling {
  readonly #monitor: HealthMonitor | undefined;
  readonly #logger: Logger;
  /** When each maintenance was first seen over. */
  readonly #ended = new Map<string, number>();
  readonly #timedOut = new Set<string>();

  readonly #onTimeout: ((eventId: string) => void) | undefined;

  /** `timedOut`: told once of each maintenance this member was still not healthy timeoutSeconds after (the circuit breaker counts it). */
  constructor(monitor: HealthMonitor | undefined, logger: Logger, timedOut?: (eventId: string) => void) {
    this.#monitor = monitor;
    this.#logger = logger;
    this.#onTimeout = timedOut;
  }

  /**
   * settled: whether the member is whole again after the maintenance `eventId`, over now: healthy
   * without a break for settleSeconds since it ended, or still not after timeoutSeconds (said
   * once, with FLEET_HEALTH_TIMEOUT). Without health checks, at once.
   */
  settled(eventId: string, now: number): boolean {
    const monitor = this.#monitor;
    if (monitor === undefined) return true;
    const config = monitor.config;
    const ended = this.#ended.get(eventId) ?? now;
    this.#ended.set(eventId, ended);
    if (Math.min(monitor.healthyFor(now), now - ended) >= config.settleSeconds * 1000) return true;
    if (now - ended < config.timeoutSeconds * 1000) return false;
    if (!this.#timedOut.has(eventId)) {
      this.#onTimeout?.(eventId);
      this.#logger.warn(
        { code: 'FLEET_HEALTH_TIMEOUT', eventId, health: monitor.state, timeoutSeconds: config.timeoutSeconds },
        `fleet budget: this member is still not healthy ${config.timeoutSeconds} s after its maintenance; its slot is given back all the same`,
      );
    }
    this.#timedOut.add(eventId);
    return true;
  }

  /** keep forgets the maintenances no longer held for. */
  keep(held: ReadonlySet<string>): void {
    for (const id of this.#ended.keys()) if (!held.has(id)) this.#ended.delete(id);
    for (const id of this.#timedOut) if (!held.has(id)) this.#timedOut.delete(id);
  }
}
