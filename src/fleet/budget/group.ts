/**
 * The group at a glance: its members (their events, whether they hold a slot, when they last
 * beat), who holds the slots and since when, and a collision foretold (more members due at once
 * than the group allows). Read straight from the store, so `se-bridge fleet status` and
 * `se-bridge status` show it from any member, whether its daemon runs or not.
 */
import { messageOf } from '../../lib/errors.ts';
import { slotsFor, type FleetConfig } from './config.ts';
import { openFleetStore } from './stores/open.ts';
import { calendarNowText } from '../../calendar/calendar.ts';
import {
  asSlot,
  collisionOf,
  holderOf,
  live,
  MEMBER_PREFIX,
  SLOT_PREFIX,
  staleAt,
  windowsOf,
  type Holder,
  type EventApproval,
  type MemberCalendar,
} from './records.ts';
import type { Versioned } from './stores/port.ts';
import { membersOf, skippedOf, type Skipped } from './parse.ts';

export interface GroupStatus {
  readonly group: string;
  /** How many of its members may be down at once by an early approval; null: the group has no budget (a fleet view only). */
  readonly maxUnavailable: number | null;
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
      /** The budget holds its early approval: since when, by the members holding the slots. */
      held?: { since: string; by: readonly string[] };
      approval?: EventApproval;
      preparations?: readonly { readonly sink: string; readonly state: string }[];
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
  }[];
  readonly slots: readonly ({ readonly slot: string } & Holder)[];
  /** The records of another shape (another version's, edited by hand, not JSON, too large): left out, each named once. */
  readonly skipped: readonly Skipped[];
  /** What could not be read (the slots, the members' records) and why: the rest is shown all the same. */
  readonly unread: readonly { readonly what: string; readonly why: string }[];
  /** More members due for maintenance at once than the group allows, when their records say so. */
  readonly collision: {
    readonly from: string;
    readonly to: string;
    readonly vms: readonly string[];
    readonly eventIds: readonly string[];
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
    return groupOf({ group: config.group, maxUnavailable: config.maxUnavailable, store: store.where }, records, unread, now);
  } finally {
    await store.close();
  }
}

/**
 * groupOf: a group as its records say it (its slots' and its members'). `maxUnavailable` is the
 * budget as configured, or, when the reader has no member's configuration (the relay), as the
 * members' records say it; null when the group has no budget.
 */
export function groupOf(
  g: { readonly group: string; readonly maxUnavailable: number | string | undefined; readonly store: string },
  records: readonly Versioned[],
  unread: GroupStatus['unread'],
  now: number,
): GroupStatus {
  const slotRecords = records.filter((r) => r.name.startsWith(SLOT_PREFIX));
  const memberRecords = records.filter((r) => r.name.startsWith(MEMBER_PREFIX));
  const slots = slotRecords
    .map((r) => ({ name: r.name, s: asSlot(r.value) }))
    .filter((x) => live(x.s, now))
    .map(({ name, s }) => ({ slot: name, ...holderOf(s) }));
  const members = membersOf(memberRecords).sort((a, b) => a.vm.localeCompare(b.vm));
  const fresh = members.filter((m) => !staleAt(m, now));
  const configured = g.maxUnavailable ?? fresh.find((m) => m.maxUnavailable !== undefined)?.maxUnavailable;
  const k = configured === undefined ? null : slotsFor(configured, Math.max(1, fresh.length));
  const c = k === null ? null : collisionOf(windowsOf(members), k);
  return {
    group: g.group,
    maxUnavailable: k,
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
        ...(e.preparations === undefined ? {} : { preparations: e.preparations }),
      })),
      holdsSlot: slots.some((s) => s.vm === m.vm),
      heartbeatAt: m.heartbeatAt,
      heartbeatSeconds: m.heartbeatSeconds,
      stale: staleAt(m, now),
      ...(m.health === undefined ? {} : { health: m.health }),
      ...(m.calendar === undefined ? {} : { calendar: m.calendar }),
      ...(m.version === undefined ? {} : { version: m.version }),
      ...(m.zone ? { zone: m.zone } : {}),
    })),
    slots,
    skipped: skippedOf(records),
    unread,
    collision:
      c === null
        ? null
        : {
            from: new Date(c.from).toISOString(),
            to: new Date(c.to).toISOString(),
            vms: [...new Set(c.windows.map((w) => w.vm))],
            eventIds: c.windows.map((w) => w.eventId),
          },
  };
}

/** heldText: an approval the budget holds, in words: by whom, since when. */
export function heldText(held: { readonly since: string; readonly by: readonly string[] }): string {
  return `held by the budget (slots held by ${held.by.join(', ') || 'others'}) since ${held.since}`;
}

/** groupText: the group as a person reads it. */
export function groupText(g: GroupStatus, table: (header: string[], rows: string[][]) => string): string {
  const out = [
    `Group ${g.group}: ${g.maxUnavailable === null ? 'no budget' : `${g.slots.length} of ${g.maxUnavailable} slot${g.maxUnavailable === 1 ? '' : 's'} held`}; ${g.members.length} member${g.members.length === 1 ? '' : 's'} (${g.store})`,
  ];
  if (g.slots.length > 0)
    out.push(
      '',
      table(
        ['SLOT', 'VM', 'EVENT ID', 'SINCE', 'UNTIL', 'WHY'],
        g.slots.map((s) => [s.slot, s.vm, s.eventId ?? '-', s.since ?? '-', s.until ?? '-', s.mode ?? '-']),
      ),
    );
  const withHealth = g.members.some((m) => m.health !== undefined);
  const withCalendar = g.members.some((m) => m.calendar !== undefined);
  if (g.members.length > 0)
    out.push(
      '',
      table(
        ['MEMBER', 'SLOT', 'EVENTS', 'HEARTBEAT', ...(withHealth ? ['HEALTH'] : []), ...(withCalendar ? ['EARLY APPROVAL'] : [])],
        g.members.map((m) => [
          m.vm,
          m.holdsSlot ? 'yes' : '-',
          m.events
            .map(
              (e) => `${e.eventType} ${e.status}${e.notBefore ? ` not before ${e.notBefore}` : ''}${e.held ? `, ${heldText(e.held)}` : ''}`,
            )
            .join('; ') || '-',
          `${m.heartbeatAt}${m.stale ? ' (stopped)' : ''}`,
          ...(withHealth ? [healthText(m.health)] : []),
          ...(withCalendar ? [m.calendar === undefined ? 'no calendar' : calendarNowText(m.calendar)] : []),
        ]),
      ),
    );
  const digests = new Set(g.members.map((m) => m.calendar?.digest ?? 'none'));
  if (withCalendar && digests.size > 1)
    out.push(
      '',
      `The members' calendars differ (${digests.size} kinds, by digest): every member of a group should name the same fleet.calendar.`,
    );
  for (const s of g.skipped) out.push('', `Record ${s.key} left out: ${s.why}.`);
  for (const u of g.unread) out.push('', `Could not read ${u.what}: ${u.why}.`);
  if (g.collision !== null)
    out.push(
      '',
      `Collision foretold: ${g.collision.vms.length} of ${g.group}'s ${g.members.length} members are due for maintenance between ${g.collision.from} and ${g.collision.to}; the group allows ${g.maxUnavailable}.`,
    );
  return `${out.join('\n')}\n`;
}

/** healthText: a member's health as a person reads it. */
const healthText = (h: GroupStatus['members'][number]['health']): string =>
  h === undefined ? '-' : `${h.healthy ? 'healthy' : `not healthy (${h.detail ?? 'no detail'})`} since ${h.since}`;
