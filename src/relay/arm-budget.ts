/**
 * The budget and calendar of a group, as the relay counts them for an approval `via: arm`.
 * "Unknown" never means "no budget": the relay's own `fleet.groups` states it, else every record of
 * the group is read, stale ones too (after a bad rollout no bridge of the group may be left), and
 * records that state different budgets, or none that states one, refuse. A blackout held by the
 * relay's calendar of the group, or said by any of its members' records, holds the approval; a
 * forced one, with a reason, goes past either, on the record.
 */
import { Calendar } from '../calendar/calendar.ts';
import { HttpError } from '../approval/requests.ts';
import { slotsFor } from '../fleet/budget/config.ts';
import { staleAt, type MemberRecord } from '../fleet/budget/records.ts';
import type { RelayFleetConfig } from './fleet-config.ts';

export interface GroupBudget {
  /** How many members may be down at once, as counted now (a percentage of the fresh records, at least one). */
  readonly k: number;
  /** Where it comes from, in words ("the relay's fleet.groups", "every record of the group"). */
  readonly from: string;
}

/**
 * budgetOf: the group's budget, or the refusal (409, naming the members). A forced approval goes
 * on without one: null then.
 */
export function budgetOf(
  group: string,
  records: readonly MemberRecord[],
  stated: RelayFleetConfig['groups'][string] | undefined,
  force: boolean,
  now: number,
): GroupBudget | null {
  const fresh = Math.max(1, records.filter((m) => !staleAt(m, now)).length);
  if (stated !== undefined) return { k: slotsFor(stated.maxUnavailable, fresh), from: "the relay's fleet.groups" };
  const said = records.filter((m) => m.maxUnavailable !== undefined);
  const values = new Set(said.map((m) => String(m.maxUnavailable)));
  if (values.size === 1) return { k: slotsFor(said[0]!.maxUnavailable!, fresh), from: `every record of the group (${said.length})` };
  if (force) return null;
  const names = (list: readonly MemberRecord[]) => list.map((m) => m.vm).join(', ') || 'none';
  if (values.size === 0)
    throw new HttpError(
      409,
      'FLEET_BUDGET_UNKNOWN',
      `group ${group}'s budget is unknown: the relay's fleet.groups does not state it, and none of its records does (members: ${names(records)}); state it there, or force with a reason`,
    );
  throw new HttpError(
    409,
    'FLEET_BUDGET_DISAGREES',
    `group ${group}'s records state different budgets (${said.map((m) => `${m.vm}: ${String(m.maxUnavailable)}`).join(', ')}); state the group's in the relay's fleet.groups, or force with a reason`,
  );
}

/** blackoutOf: the blackout that holds the group's early approvals now, in words, or null. */
export function blackoutOf(
  records: readonly MemberRecord[],
  stated: RelayFleetConfig['groups'][string] | undefined,
  now: number,
): string | null {
  if (stated?.calendar !== undefined) {
    const name = new Calendar(stated.calendar).stateAt(now).blackout;
    return name === null ? null : `the blackout ${name} of the group's calendar in the relay's fleet.groups`;
  }
  // a member's word can only hold an approval here, never open one
  const closed = records.find(
    (m) => m.calendar !== undefined && !m.calendar.open && (m.calendar.until === null || Date.parse(m.calendar.until) > now),
  );
  if (closed?.calendar === undefined) return null;
  const until = closed.calendar.until === null ? '' : ` until ${closed.calendar.until}`;
  return `the blackout ${closed.calendar.blackout ?? '(unnamed)'}${until}, as ${closed.vm}'s record says`;
}

/** noBudget: the refusal of an approval of a VM no record names, so no group's budget covers it. */
export const noBudget = (vm: string): HttpError =>
  new HttpError(
    409,
    'FLEET_BUDGET_UNKNOWN',
    `no member's record names ${vm}, so no group's budget is known for it: force with a reason to approve it past any budget, on the record`,
  );
