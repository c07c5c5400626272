/**
 * The group at a glance: its members (their events, whether they hold a slot, when they last
 * beat), who holds the slots and since when, and a collision foretold (more members due at once
 * than the group allows). Read straight from the store, so `se-bridge fleet status` and
 * `se-bridge status` show it from any member, whether its daemon runs or not.
 */
import { messageOf } from '../../lib/errors.ts';
import { countedText, MARGIN_SECONDS, slotsFor, UNHEALTHY_COUNTS_FOR_SECONDS, type FleetConfig } from './config.ts';
import { openFleetStore } from './stores/open.ts';
import {
  asSlot,
  holderOf,
  live,
  MEMBER_PREFIX,
  SLOT_PREFIX,
  staleAt,
  type Holder,
  type EventApproval,
  type MemberCalendar,
  type MemberEvent,
  type MemberRecord,
} from './records.ts';
import type { Versioned } from './stores/port.ts';
import { collisionOf, windowsOf } from './windows.ts';
import { membersOf, skippedOf, type Skipped } from './parse.ts';
import { pauseOf, pauseState, type PauseState } from './pause.ts';
import { boundsOf, unavailableOf, type CountBounds } from './unavailable.ts';

export interface GroupStatus {
  readonly group: string;
  /** How many of its members may be down at once by an early approval; null: the group has no budget (a fleet view only). */
  readonly maxUnavailable: number | null;
  /** How a percentage came to `maxUnavailable` ("30 % of 5 members = 2", rounded up); null for a number, or no budget. */
  readonly counted: string | null;
  readonly store: string;
  readonly members: readonly {
    readonly vm: string;
    readonly resourceId: string | null;
    readonly events: readonly {
      eventId: string;
      eventType: string;
      status: string;
      notBefore: string | null;
      durationInSeconds: number;
      /** The budget holds its early approval: since when, and what holds it (the slots' holders, members not healthy, its place in the queue). */
      held?: MemberEvent['held'];
      approval?: EventApproval;
      preparations?: readonly { readonly sink: string; readonly state: string }[];
      seen?: MemberEvent['seen'];
    }[];
    readonly holdsSlot: boolean;
    readonly heartbeatAt: string;
    readonly heartbeatSeconds: number;
    /** The bridge's version that wrote the record. */
    readonly version?: string;
    readonly zone?: string;
    /** Its heartbeat stopped: no record for three heartbeats. */
    readonly stale: boolean;
    /** Its health, when it checks it: healthy or not, since when, why not. */
    readonly health?: { readonly healthy: boolean; readonly since: string; readonly detail?: string };
    /** What its calendar says, when it has one (`fleet.calendar`). */
    readonly calendar?: MemberCalendar;
    /** Its maintenances that ended within the last day (Completed, Canceled), as its record draws them. */
    readonly ended?: MemberRecord['ended'];
    /**
     * Not healthy (or its record stale while it checks its health) and holding no slot: why, since
     * when, and whether it counts as down (until `countsUntil`), or no longer does (since then).
     */
    readonly unavailable?: { readonly since: string; readonly why: string; readonly counts: boolean; readonly countsUntil: string };
  }[];
  readonly slots: readonly ({ readonly slot: string } & Holder)[];
  /** The pause that holds the group now (a person's, or its circuit breaker's): no early approval while it holds. */
  readonly pause: PauseState | null;
  /** The records of another shape (another version's, edited by hand, not JSON, too large): left out, each named once. */
  readonly skipped: readonly Skipped[];
  /** What could not be read (the slots, the members' records) and why: the rest is shown all the same. */
  readonly unread: readonly { readonly what: string; readonly why: string }[];
  /** How long a member not healthy counts against the group (the members' `unhealthyCountsForSeconds`). */
  readonly unhealthyCountsForSeconds: number;
  /**
   * More members due for maintenance at once than the group allows, when their records say so:
   * when, who (`due`: each member's maintenance), and the members not healthy outside it that
   * count as down (the group has that many slots less for it).
   */
  readonly collision: {
    readonly from: string;
    readonly to: string;
    readonly vms: readonly string[];
    readonly eventIds: readonly string[];
    readonly due: readonly { readonly vm: string; readonly eventId: string; readonly eventType: string; readonly notBefore: string }[];
    readonly unhealthy: readonly string[];
  } | null;
}

/** readGroup reads the group's records once (the store's client library is loaded now). */
export async function readGroup(config: FleetConfig, now: number = Date.now()): Promise<GroupStatus> {
  const store = await openFleetStore(config.store, config.group, config.storeTimeoutMs);
  try {
    // each list has its deadline; one that fails leaves the other to show
    const [slotsRead, membersRead] = await Promise.allSettled([store.list(SLOT_PREFIX), store.list(MEMBER_PREFIX)]);
    const unread = [
      ...(slotsRead.status === 'rejected' ? [{ what: 'the slots', why: messageOf(slotsRead.reason) }] : []),
      ...(membersRead.status === 'rejected' ? [{ what: "the members' records", why: messageOf(membersRead.reason) }] : []),
    ];
    const records = [slotsRead, membersRead].flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
    const bounds = boundsOf(config);
    return groupOf({ group: config.group, maxUnavailable: config.maxUnavailable, store: store.where, bounds }, records, unread, now);
  } finally {
    await store.close();
  }
}

/**
 * groupOf: a group as its records say it (its slots' and its members'). `maxUnavailable` and
 * `bounds` are the budget as configured, or, when the reader has no member's configuration (the
 * relay), as the members' records say it; `maxUnavailable` null when the group has no budget.
 */
export function groupOf(
  g: {
    readonly group: string;
    readonly maxUnavailable: number | string | undefined;
    readonly store: string;
    readonly bounds?: CountBounds;
  },
  records: readonly Versioned[],
  unread: GroupStatus['unread'],
  now: number,
): GroupStatus {
  const slotRecords = records.filter((r) => r.name.startsWith(SLOT_PREFIX));
  const memberRecords = records.filter((r) => r.name.startsWith(MEMBER_PREFIX));
  const allSlots = slotRecords.map((r) => ({ name: r.name, s: asSlot(r.value) }));
  const slots = allSlots.filter((x) => live(x.s, now)).map(({ name, s }) => ({ slot: name, ...holderOf(s) }));
  const members = membersOf(memberRecords).sort((a, b) => a.vm.localeCompare(b.vm));
  const fresh = members.filter((m) => !staleAt(m, now));
  const configured = g.maxUnavailable ?? fresh.find((m) => m.maxUnavailable !== undefined)?.maxUnavailable;
  const k = configured === undefined ? null : slotsFor(configured, Math.max(1, fresh.length));
  const counted = configured === undefined ? null : countedText(configured, Math.max(1, fresh.length));
  const bounds: CountBounds = g.bounds ?? {
    unhealthyCountsForSeconds:
      fresh.find((m) => m.unhealthyCountsForSeconds !== undefined)?.unhealthyCountsForSeconds ?? UNHEALTHY_COUNTS_FOR_SECONDS,
    settleSeconds: 0,
    marginSeconds: MARGIN_SECONDS,
  };
  const unavailable = new Map(
    unavailableOf(
      members,
      allSlots.map((x) => x.s),
      '',
      now,
      bounds,
    ).map(({ key, ...u }) => [key, u]),
  );
  // as the forecast counts it: a window runs on for the settle time, and a member not healthy outside the collision is down already
  const windows = windowsOf(members, now, bounds.settleSeconds * 1000);
  const sick = [...unavailable.values()].filter((u) => u.counts && !windows.some((w) => w.vm === u.vm)).map((u) => u.vm);
  const c = k === null ? null : collisionOf(windows, Math.max(0, k - sick.length));
  return {
    group: g.group,
    maxUnavailable: k,
    counted,
    store: g.store,
    members: members.map((m) => ({
      vm: m.vm,
      resourceId: m.resourceId,
      events: m.events.map((e) => ({
        eventId: e.eventId,
        eventType: e.eventType,
        status: e.status,
        notBefore: e.notBefore,
        durationInSeconds: e.durationInSeconds,
        ...(e.held === undefined ? {} : { held: e.held }),
        ...(e.approval === undefined ? {} : { approval: e.approval }),
        ...(e.seen === undefined ? {} : { seen: e.seen }),
        ...(e.preparations === undefined ? {} : { preparations: e.preparations }),
      })),
      holdsSlot: slots.some((s) => s.vm === m.vm),
      heartbeatAt: m.heartbeatAt,
      heartbeatSeconds: m.heartbeatSeconds,
      stale: staleAt(m, now),
      ...(m.health === undefined ? {} : { health: m.health }),
      ...(m.calendar === undefined ? {} : { calendar: m.calendar }),
      ...(m.ended === undefined ? {} : { ended: m.ended }),
      ...(m.version === undefined ? {} : { version: m.version }),
      ...(m.zone ? { zone: m.zone } : {}),
      ...(unavailable.has(m.member) ? { unavailable: withoutVm(unavailable.get(m.member)!) } : {}),
    })),
    slots,
    pause: pauseState(pauseOf(slotRecords, now)),
    skipped: skippedOf(records),
    unread,
    unhealthyCountsForSeconds: bounds.unhealthyCountsForSeconds,
    collision:
      c === null
        ? null
        : {
            from: new Date(c.from).toISOString(),
            to: new Date(c.to).toISOString(),
            vms: [...new Set(c.windows.map((w) => w.vm))],
            eventIds: c.windows.map((w) => w.eventId),
            // as a person reads it: the earliest first, then by VM
            due: [...c.windows]
              .sort((x, y) => x.from - y.from || x.vm.localeCompare(y.vm))
              .map((w) => ({
                vm: w.vm,
                eventId: w.eventId,
                eventType: w.eventType,
                notBefore: new Date(w.from).toISOString(),
              })),
            unhealthy: sick,
          },
  };
}

const withoutVm = ({ since, why, counts, countsUntil }: { since: string; why: string; counts: boolean; countsUntil: string }) => ({
  since,
  why,
  counts,
  countsUntil,
});
