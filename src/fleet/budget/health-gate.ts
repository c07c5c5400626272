/**
 * The health gate of a fleet budget: a member is unavailable until it is whole again, and an
 * unhealthy member counts against the budget. `Settling` says when a member whose maintenance is
 * over may give its slot back (healthy without a break for settleSeconds since, or past
 * timeoutSeconds, said loudly); `unhealthyOf` finds the other members that count as unavailable
 * from their records (not healthy, or their record stale while they check their health).
 */
import type { Logger } from 'pino';
import type { HealthMonitor } from '../../health/monitor.ts';
import { staleAt, type MemberRecord } from './records.ts';

/** A member that counts as unavailable although it holds no slot. */
export interface Unhealthy {
  readonly key: string;
  readonly vm: string;
  readonly since: string;
  readonly why: string;
}

/** unhealthyOf: the other members whose records say they are not healthy, or went stale while they checked their health. */
export function unhealthyOf(members: readonly MemberRecord[], me: string, now: number): Unhealthy[] {
  return members.flatMap((m) => {
    if (m.member === me || m.health === undefined) return [];
    if (staleAt(m, now)) return [{ key: m.member, vm: m.vm, since: m.heartbeatAt, why: 'its record went stale' }];
    return m.health.healthy ? [] : [{ key: m.member, vm: m.vm, since: m.health.since, why: m.health.detail ?? 'not healthy' }];
  });
}

/** unhealthyText: the unhealthy members, in words. */
export const unhealthyText = (u: readonly Unhealthy[]): string =>
  u.map((x) => `${x.vm} is not healthy since ${x.since} (${x.why})`).join('; ');

export class Settling {
  readonly #monitor: HealthMonitor | undefined;
  readonly #logger: Logger;
  /** When each maintenance was first seen over. */
  readonly #ended = new Map<string, number>();
  readonly #timedOut = new Set<string>();

  constructor(monitor: HealthMonitor | undefined, logger: Logger) {
    this.#monitor = monitor;
    this.#logger = logger;
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
    if (!this.#timedOut.has(eventId))
      this.#logger.warn(
        { code: 'FLEET_HEALTH_TIMEOUT', eventId, health: monitor.state, timeoutSeconds: config.timeoutSeconds },
        `fleet budget: this member is still not healthy ${config.timeoutSeconds} s after its maintenance; its slot is given back all the same`,
      );
    this.#timedOut.add(eventId);
    return true;
  }

  /** keep forgets the maintenances no longer held for. */
  keep(held: ReadonlySet<string>): void {
    for (const id of this.#ended.keys()) if (!held.has(id)) this.#ended.delete(id);
    for (const id of this.#timedOut) if (!held.has(id)) this.#timedOut.delete(id);
  }
}
