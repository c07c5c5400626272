/**
 * What a member says of its slots when something is not as it should be: it went down past the
 * group's budget (FLEET_OVER_BUDGET), or the slot it held is another's now or gone (FLEET_SLOT_LOST).
 */
import type { Logger } from 'pino';
import type { Grant } from '../../approval/service.ts';
import type { ScheduledEvent } from '../../imds/wire.ts';
import type { Versioned } from './stores/port.ts';
import { asSlot, live, type Holder, type HoldMode } from './records.ts';

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

/** slotLost: the slot a member held is another's now (taken over past its recorded end) or gone. */
export function slotLost(logger: Logger, group: string, held: Versioned, now: Versioned | undefined): void {
  const s = asSlot(held.value);
  const to = now === undefined ? null : asSlot(now.value);
  logger.error(
    { code: 'FLEET_SLOT_LOST', slot: held.name, eventIds: s.eventIds ?? [], until: s.until, to: to?.vm ?? null, group },
    `fleet budget: ${held.name}, held for ${(s.eventIds ?? []).join(', ')}, is ${to?.member ? `held by ${to.vm ?? to.member} now` : 'gone from the store'}; this member no longer counts as down`,
  );
}
