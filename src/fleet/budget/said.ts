/**
 * What a member says of its slots: why an early approval is held (HELD), and when something is
 * not as it should be: it went down past the group's budget (FLEET_OVER_BUDGET), it took over a
 * slot whose holder's recorded end had passed (FLEET_SLOT_TAKEN_OVER), or the slot it held is
 * another's now, gone, or past its own recorded end (FLEET_SLOT_LOST).
 */
import type { Logger } from 'pino';
import type { HoldReason } from '../../observability/fleet-metrics.ts';
import { ApprovalError, type Grant } from '../../approval/service.ts';
import { unhealthyText, type Unhealthy } from './unavailable.ts';
import type { ScheduledEvent } from '../../imds/wire.ts';
import type { Versioned } from './stores/port.ts';
import { asSlot, live, type Holder, type HoldMode, type SlotRecord } from './records.ts';

/**
 * heldError: an early approval held, and exactly what holds it: the members holding the slots
 * (and since when), the members not healthy that count as down, the zone in maintenance, or its
 * turn in the group's queue, which has not come. Its reason is the zone's, else health's when the
 * slots alone would have let it through, else the budget's.
 */
export function heldError(
  g: { readonly group: string; readonly maxUnavailable: number },
  holders: readonly Holder[],
  sick: readonly Unhealthy[],
  zoneWhy: string | null,
  queued: boolean,
): ApprovalError {
  const who = holders.map((h) => `${h.vm}${h.eventId ? ` (${h.eventId})` : ''}${h.since ? ` since ${h.since}` : ''}`).join(', ');
  const slots =
    who !== ''
      ? `held by ${who}`
      : sick.length > 0
        ? 'none in maintenance'
        : queued
          ? "a slot is free, and this member waits its turn in the group's queue"
          : 'the slots were being taken by other members';
  const allows = `group ${g.group} allows ${g.maxUnavailable} member${g.maxUnavailable === 1 ? '' : 's'} in maintenance at once`;
  const why = [allows, slots, ...(sick.length > 0 ? [unhealthyText(sick)] : []), ...(zoneWhy === null ? [] : [zoneWhy])].join('; ');
  const reason = holdReason(zoneWhy, sick.length > 0 && !queued && holders.length < g.maxUnavailable);
  return new ApprovalError('HELD', why, undefined, [...holders], [...sick], undefined, reason);
}

/** holdReason: what holds an early approval the slots' rules held: a zone in maintenance, members not healthy (`sick`: they alone took the room), or the budget. */
export const holdReason = (zoneWhy: string | null, sick: boolean): HoldReason => (zoneWhy !== null ? 'zone' : sick ? 'health' : 'budget');

/** overflowed: a member is down with its overflow record `name`; said loudly when the group is past its budget with it. */
export function overflowed(
  logger: Logger,
  config: { readonly group: string; readonly maxUnavailable: number },
  o: { name: string; vm: string; event: ScheduledEvent; mode: HoldMode; slots: readonly Versioned[]; others: readonly Holder[] },
  now: number,
): Grant {
  const { group, maxUnavailable } = config;
  const down = o.slots.filter((r) => live(asSlot(r.value), now));
  if (down.length > maxUnavailable || o.mode === 'forced')
    logger.warn(
      { code: 'FLEET_OVER_BUDGET', slot: o.name, eventId: o.event.eventId, group, mode: o.mode, holders: o.others },
      `fleet budget: ${o.vm} is down past the budget of ${group} (${o.mode})`,
    );
  else logger.info({ slot: o.name, eventId: o.event.eventId, group, mode: o.mode }, 'fleet budget: down, counted');
  return { forced: o.mode === 'forced', slot: o.name };
}

/**
 * slotLost: the slot a member held is another's now (taken over past its recorded end), gone, or
 * still in its name with its recorded end passed (the member did not renew it in time: it counts
 * for nobody, and this member takes a slot again, counted, if it is down).
 */
export function slotLost(logger: Logger, group: string, held: Versioned, current: Versioned | undefined, now: number): void {
  const s = asSlot(held.value);
  const to = current === undefined ? null : asSlot(current.value);
  const mine = to !== null && to.member === s.member && !live(to, now);
  const why = mine
    ? `still in this member's name, but its recorded end (${to.until ?? '?'}) has passed, so it counts for nobody`
    : to?.member
      ? `held by ${to.vm ?? to.member} now`
      : 'gone from the store';
  logger.error(
    { code: 'FLEET_SLOT_LOST', slot: held.name, eventIds: s.eventIds ?? [], until: s.until, to: mine ? null : (to?.vm ?? null), group },
    `fleet budget: ${held.name}, held for ${(s.eventIds ?? []).join(', ')}, is ${why}; this member no longer counts as down`,
  );
}

/** takenOver: a member took `name` over from `previous`, a holder whose recorded end had passed (its own lapsed record is no one else's: not said). */
export function takenOver(logger: Logger, name: string, previous: SlotRecord, me: string): void {
  if (previous.member === null || previous.member === me) return;
  logger.warn(
    { code: 'FLEET_SLOT_TAKEN_OVER', slot: name, from: previous.vm, eventIds: previous.eventIds, until: previous.until },
    `fleet budget: took over ${name} from ${previous.vm}, whose recorded end has passed`,
  );
}
