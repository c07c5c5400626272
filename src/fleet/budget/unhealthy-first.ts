/**
 * Unhealthy first (`fleet.unhealthyMembers: alwaysAllow`), as a PodDisruptionBudget's
 * `unhealthyPodEvictionPolicy: AlwaysAllow` lets a pod that is not Ready go without spending the
 * budget, and a scale set's rolling upgrade takes its unhealthy instances first. A member that the
 * group counts as unavailable for its health already (its checks fail, and it has not been failing
 * for longer than `unhealthyCountsForSeconds`, past which the others leave it out of the count)
 * takes its own maintenance without a further slot: it is down already, and its maintenance takes
 * nothing more down. It goes on counting against the group as a member not healthy, as before.
 * With the default `ifHealthyBudget` it needs a slot like any member (it counts once, by the slot).
 */
import type { Logger } from 'pino';
import type { Grant } from '../../approval/service.ts';
import type { HealthState } from '../../sinks/contract.ts';
import type { FleetConfig } from './config.ts';

/**
 * countedForHealth: the group counts this member as unavailable for its health now: its last
 * check failed, less than `unhealthyCountsForSeconds` ago (its record says so, and the others
 * count it until then).
 */
export function countedForHealth(health: HealthState | null | undefined, unhealthyCountsForSeconds: number, now: number): boolean {
  if (health == null || health.healthy) return false;
  const since = Date.parse(health.since);
  return Number.isFinite(since) && now - since < unhealthyCountsForSeconds * 1000;
}

/** goesFirst: with `unhealthyMembers: alwaysAllow`, this member is counted as unavailable for its health now, and needs no slot. */
export const goesFirst = (
  config: Pick<FleetConfig, 'unhealthyMembers' | 'unhealthyCountsForSeconds'>,
  health: HealthState | null | undefined,
  now: number,
): boolean => config.unhealthyMembers === 'alwaysAllow' && countedForHealth(health, config.unhealthyCountsForSeconds, now);

/**
 * unhealthyFirst: the grant of an early approval of `eventId` that needs no slot (the member is
 * counted as unavailable for its health, and the group's `unhealthyMembers` is alwaysAllow), said
 * in the log; or null when it needs one. A maintenance that names other members of the group
 * (`named` more than 1) needs their slots all the same.
 */
export function unhealthyFirst(
  o: { readonly config: Pick<FleetConfig, 'unhealthyMembers' | 'unhealthyCountsForSeconds' | 'group'>; readonly logger: Logger },
  health: HealthState | null | undefined,
  e: { readonly eventId: string; readonly named: number; readonly now: number },
): Grant | null {
  const { config, logger } = o;
  if (e.named > 1 || !goesFirst(config, health, e.now)) return null;
  logger.info(
    { eventId: e.eventId, group: config.group, since: health!.since },
    'fleet budget: not healthy, so counted as unavailable already: approved without a further slot (unhealthyMembers: alwaysAllow)',
  );
  return { forced: false, slot: null };
}
