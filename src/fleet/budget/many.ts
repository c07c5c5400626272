/**
 * takeForAll: the slots of a maintenance that takes several members of the group down at once
 * (an availability set's update domain, a scale set's batch: one event whose Resources name
 * them all, approved by any one of them for all). It is approved early only when every member
 * it names holds a slot for it: the approver writes them in the members' names (a member that
 * holds a slot already has the event added to it), and each named member finds its own at its
 * next read and gives it back when its maintenance is over. With too few slots free it is held
 * without keeping any (it never blocks a smaller maintenance behind it); a forced approval writes
 * an overflow record for each member no slot is left for, and says how many go down.
 */
import type { Logger } from 'pino';
import { ApprovalError, type ApprovalRequest } from '../../approval/service.ts';
import { affects } from '../../imds/identity.ts';
import type { ScheduledEvent } from '../../imds/wire.ts';
import type { FleetConfig } from './config.ts';
import type { FleetStore, Versioned } from './stores/port.ts';
import { takenNext } from './served.ts';
import { asSlot, holderOf, live, overflowName, ownedBy, slotName, slotRecordOf, type MemberRecord, type SlotRecord } from './records.ts';
import { giveBackWritten, type Taken, type Written } from './give-back.ts';
import type { MemberSlots } from './slots.ts';
import { zoneConflict } from './zones.ts';
import { pausedError, pauseOf } from './pause.ts';
import { unhealthyText, type Unhealthy } from './unavailable.ts';
import { holdReason } from './said.ts';
import { rateHeld, rateHold, stampsOf, type RateHold } from './rate.ts';

/** A member an event names: its key and identity. */
export interface Named {
  readonly key: string;
  readonly vm: { readonly name: string; readonly resourceId: string | null; readonly zone?: string | null };
}

export interface ManyContext {
  readonly config: FleetConfig;
  readonly store: FleetStore;
  readonly logger: Logger;
  readonly slots: MemberSlots;
  readonly now: () => number;
  /** This member's key. */
  readonly me: string;
  /** How many members may be unavailable at once now. */
  readonly k: () => number;
}

const MAX_ROUNDS = 8;

/** namedIn: the members of the group `event` names, `me` first; none when it names no other member. */
export function namedIn(event: Pick<ScheduledEvent, 'resources'>, me: Named, members: readonly MemberRecord[]): Named[] {
  const others = members
    .filter((m) => m.member !== me.key && affects(event.resources, m.vm))
    .map((m) => ({ key: m.member, vm: { name: m.vm, resourceId: m.resourceId, zone: m.zone ?? null } }));
  return others.length === 0 ? [] : [me, ...others];
}

/** downText: the members a maintenance takes down, in words. */
export const downText = (group: string, named: readonly Named[]): string =>
  `this maintenance takes ${named.length} members of ${group} down at once (${named.map((n) => n.vm.name).join(', ')})`;

/**
 * takeForAll holds a slot for `event` in the name of every member in `named` (this one among
 * them), or throws HELD. `admit` says whether this member's turn in the queue has come for what
 * is free, given how many slots the event needs (which of the free ones are its own to try).
 */
export async function takeForAll(
  ctx: ManyContext,
  event: ScheduledEvent,
  named: readonly Named[],
  mode: 'early' | 'forced',
  request: ApprovalRequest,
  admit?: (free: number, need: number) => Promise<number | null>,
  unhealthy: (records: readonly Versioned[]) => Promise<readonly Unhealthy[]> = async () => [],
): Promise<Taken> {
  const { config, store } = ctx;
  const note = mode === 'forced' ? downText(config.group, named) : undefined;
  let holders: ReturnType<typeof holderOf>[] = [];
  let sick: Unhealthy[] = [];
  let zoneWhy: string | null = null;
  // the members not healthy alone held it: the slots free would have let it through without them
  let sickHeld = false;
  let rated: RateHold | null = null;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const now = ctx.now();
    const records = await ctx.slots.read();
    const pause = mode === 'early' ? pauseOf(records, now) : null;
    if (pause !== null) throw pausedError(config.group, pause);
    const alive = records.filter((r) => live(asSlot(r.value), now));
    holders = alive.map((r) => holderOf(asSlot(r.value)));
    const slotOf = (key: string) => alive.find((r) => ownedBy(asSlot(r.value), key, now));
    const needing = named.filter((n) => !(asSlot(slotOf(n.key)?.value).eventIds ?? []).includes(event.eventId));
    if (needing.length === 0)
      return { forced: mode === 'forced', slot: slotOf(ctx.me)?.name ?? null, writes: [], ...(note ? { note } : {}) };
    const extend = needing.filter((n) => slotOf(n.key) !== undefined);
    const fresh = needing.filter((n) => slotOf(n.key) === undefined);
    const byName = new Map(records.map((r) => [r.name, r]));
    const k = ctx.k();
    const free = Array.from({ length: k }, (_, i) => slotName(i)).filter((n) => !alive.some((r) => r.name === n));
    // an unhealthy member that holds no slot (and is not one this maintenance takes down) counts as one in maintenance
    sick = (await unhealthy(records)).filter((u) => slotOf(u.key) === undefined && !named.some((n) => n.key === u.key));
    // a maintenance of several members is one approval for the group's rate (a forced one goes past it)
    rated = mode === 'early' ? rateHold(config.rate, records, now) : null;
    const available = Math.min(free.length, k - alive.length - sick.length);
    sickHeld = sick.length > 0 && fresh.length > available && fresh.length <= Math.min(free.length, k - alive.length);
    zoneWhy =
      mode === 'early' && config.zones !== undefined
        ? zoneConflict(
            records,
            named.map((n) => n.vm.zone),
            now,
          )
        : null;
    if (zoneWhy !== null || rated !== null || (mode === 'early' && fresh.length > available)) break;
    const turn = mode === 'early' && admit !== undefined ? await admit(available, fresh.length) : 0;
    if (turn === null) break;
    const writes: { name: string; record: SlotRecord; version: string | null }[] = [
      ...extend.map((n) => {
        const r = slotOf(n.key)!;
        const s = asSlot(r.value);
        return { name: r.name, record: { ...s, eventIds: [...(s.eventIds ?? []), event.eventId] }, version: r.version };
      }),
      ...fresh.map((n, i) => {
        const name = i < available ? free[(turn + i) % free.length]! : overflowName(n.key);
        const record = slotRecordOf(n, event, i < available ? 'early' : 'forced', request, now, config.marginSeconds);
        // each slot it takes is stamped with the one EventId: the rate counts the maintenance once
        const prior = asSlot(byName.get(name)?.value);
        const stamps = i < available ? { ...stampsOf(prior, event.eventId, config.rate, now, true), ...takenNext(prior) } : {};
        return { name, record: { ...record, ...stamps }, version: byName.get(name)?.version ?? null };
      }),
    ];
    const done: Written[] = [];
    for (const w of writes) {
      const version = await store.put(w.name, w.record, w.version);
      if (version === null) break;
      done.push({ ...w, version });
    }
    const confirmed = done.length === writes.length && (mode === 'forced' || (await underBudget(ctx, sick.length)));
    if (confirmed) {
      await ctx.slots.read();
      ctx.logger.info(
        { eventId: event.eventId, group: config.group, mode, members: named.map((n) => n.vm.name), slots: done.map((w) => w.name) },
        `fleet budget: ${named.length} slots taken for one maintenance`,
      );
      return {
        forced: mode === 'forced',
        slot: slotOf(ctx.me)?.name ?? done.find((w) => w.record.member === ctx.me)?.name ?? null,
        writes: done,
        ...(note ? { note } : {}),
      };
    }
    // a write lost to another member, or the group past its budget at the read back: what this round wrote is given back
    await giveBackWritten(store, done, event.eventId, now);
    // a pause written between the read and the writes, seen at the read back, holds it as if it had been read first
    const paused = mode === 'early' ? pauseOf(ctx.slots.last, ctx.now()) : null;
    if (paused !== null) throw pausedError(config.group, paused);
    if (done.length === writes.length) break;
  }
  if (rated !== null) throw rateHeld(config.group, config.rate!, rated, holders);
  throw new ApprovalError(
    'HELD',
    `${downText(config.group, named)}; the group allows ${ctx.k()} and has not that many slots free${sick.length > 0 ? `; ${unhealthyText(sick)}` : ''}${zoneWhy === null ? '' : `; ${zoneWhy}`}`,
    undefined,
    holders,
    sick,
    undefined,
    holdReason(zoneWhy, sickHeld),
  );
}

/** underBudget: the slots read back hold no more members than the group allows, nor more approvals than its rate, and no pause. */
async function underBudget(ctx: ManyContext, unhealthy: number): Promise<boolean> {
  const now = ctx.now();
  const slots = await ctx.slots.read();
  const down = slots.filter((r) => live(asSlot(r.value), now)).length + unhealthy;
  return down <= ctx.k() && rateHold(ctx.config.rate, slots, now, 0) === null && pauseOf(slots, now) === null;
}
