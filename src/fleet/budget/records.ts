/**
 * The records a fleet budget keeps in its store, and the pure rules over them. Each slot is a
 * record (`slot-0` … `slot-<maxUnavailable-1>`), free when it has no holder or its holder's
 * recorded end (`until`) has passed. A member that goes down without a free slot (its event
 * Started at NotBefore, or a forced approval) writes an overflow record (`slot-x-<member>`) that
 * counts against the group's free slots, so the others wait for it too. Each member also writes
 * its own record (`member-<member>`): its events, its slot, its heartbeat.
 */
import type { CalendarNow } from '../../calendar/calendar.ts';
import { createHash } from 'node:crypto';
import type { ScheduledEvent } from '../../imds/wire.ts';
import { MAX_MEMBER_EVENTS, SlotSchema, type EndedEvent, type WaveWord } from './schemas.ts';

/** Why a member holds a slot: approved early, forced past the budget, or its event Started without an early approval. */
export type HoldMode = 'early' | 'forced' | 'started';

/** An early approval as a slot record keeps it for the group's rate (rate.ts): when, and of which maintenance. */
export interface Stamp {
  readonly at: string;
  readonly eventId: string;
}

export interface SlotRecord {
  /** The member's key; null when the slot is free. */
  readonly member: string | null;
  readonly vm?: string;
  readonly resourceId?: string | null;
  readonly eventIds?: readonly string[];
  readonly since?: string;
  /** The holder's recorded end: past it, the slot may be taken over. */
  readonly until?: string;
  readonly mode?: HoldMode;
  readonly by?: string;
  readonly reason?: string;
  /** The holder's availability zone, when it has one (for `zones: one-at-a-time`). */
  readonly zone?: string | null;
  /** The early approvals that took this slot within the group's rate window (rate.ts): kept when the slot is given back. */
  readonly approvals?: readonly Stamp[];
  /** How many times the slot was taken (served.ts): kept when the slot is given back. */
  readonly takes?: number;
  /** Only as read: the record names a holder but does not read by its schema (why): held, with no end, and nobody's own. */
  readonly unread?: string;
}

export interface MemberEvent {
  readonly eventId: string;
  readonly eventType: string;
  readonly status: string;
  readonly notBefore: string | null;
  readonly durationInSeconds: number;
  readonly approved: boolean;
  /** The budget holds its early approval: since when, the slots' holders, the path that asked, the members not healthy that counted, how many stood ahead. */
  readonly held?: {
    readonly since: string;
    readonly by: readonly string[];
    readonly via?: string;
    readonly need?: number;
    readonly unhealthy?: readonly { readonly vm: string; readonly since: string }[];
    readonly ahead?: number;
    /** Held by the group's rate: when the next early approval may come. */
    readonly next?: string;
  };
  /** Who approved it, how and when (`approvals`), once it is approved by any path. */
  readonly approval?: EventApproval;
  /** When this member first saw it listed, and Started (its journal's times): the event's transitions beside its approval's. */
  readonly seen?: { readonly scheduled?: string; readonly started?: string };
  /** Where each of its preparations stands. */
  readonly preparations?: readonly { readonly sink: string; readonly state: string }[];
}

/** An approval as a member record says it: never its reason (free text a person typed stays on the VM). */
export interface EventApproval {
  readonly by: string;
  readonly via: string;
  readonly at: string;
}

/** What a member says of one of its events besides IMDS's own fields: its approval and its preparations. */
export type EventNotes = ((eventId: string) => Pick<MemberEvent, 'approval' | 'preparations' | 'seen'>) & {
  /** This VM's events that ended within the last day, as its journal says them (the console draws them), newest first. */
  readonly ended?: () => readonly EndedEvent[];
};

export interface MemberRecord {
  readonly member: string;
  readonly vm: string;
  readonly resourceId: string | null;
  readonly heartbeatAt: string;
  readonly heartbeatSeconds: number;
  readonly events: readonly MemberEvent[];
  /** The slot record this member holds, if any. */
  readonly slot: string | null;
  /** Its availability zone, when it has one. */
  readonly zone?: string | null;
  /** Its health, when it checks it (`fleet.health`). */
  readonly health?: { readonly healthy: boolean; readonly since: string; readonly detail?: string };
  /** What its calendar says (`fleet.calendar`), with a digest of the calendar: members of one group should share one. */
  readonly calendar?: MemberCalendar;
  /** The version of the bridge that wrote it. */
  readonly version?: string;
  /** The group's budget as this member has it configured; absent for a member without a budget (`fleet: {group, store}`). */
  readonly maxUnavailable?: number | string;
  /** With a budget: how long a member not healthy counts against the group, as this member has it configured. */
  readonly unhealthyCountsForSeconds?: number;
  /** With health checks: how long this member must be healthy after its maintenance before its slot is given back. */
  readonly settleSeconds?: number;
  /** The last word it said as the speaker of a collision wave (waves.ts). */
  readonly wave?: WaveWord;
  /** Its events that ended within the last day (Completed, Canceled): never counted, only drawn. */
  readonly ended?: readonly EndedEvent[];
}

/** A member's calendar in its record: a digest of the calendar, and whether early approval is open now and until when. */
export interface MemberCalendar extends CalendarNow {
  readonly digest: string;
}

/** How far ahead of a reader's clock a heartbeat may be and still count: members' clocks differ by seconds, not minutes. */
export const CLOCK_SKEW_MS = 5 * 60_000;

/** staleAt: no record for three heartbeats, or one written more than CLOCK_SKEW_MS ahead of now (no sign of life: it counts no more than a silent one). */
export const staleAt = (m: Pick<MemberRecord, 'heartbeatAt' | 'heartbeatSeconds'>, now: number): boolean => {
  const at = Date.parse(m.heartbeatAt);
  return !(at - now <= CLOCK_SKEW_MS) || now - at > 3 * m.heartbeatSeconds * 1000;
};

/** memberEventsOf: this member's events as its record says them: whether its slot is held for each, and the approvals the budget holds. */
export function memberEventsOf(
  events: readonly ScheduledEvent[],
  heldFor: readonly string[],
  held: ReadonlyMap<string, NonNullable<MemberEvent['held']>>,
  notes?: EventNotes,
): MemberEvent[] {
  // a record stays far below a store's limit however many events IMDS lists
  return events.slice(0, MAX_MEMBER_EVENTS).map((e) => {
    const h = held.get(e.eventId);
    return {
      ...notes?.(e.eventId),
      eventId: e.eventId,
      eventType: e.eventType,
      status: e.eventStatus,
      notBefore: e.notBefore,
      durationInSeconds: e.durationInSeconds,
      approved: heldFor.includes(e.eventId),
      ...(h === undefined ? {} : { held: h }),
    };
  });
}

export interface Holder {
  readonly vm: string;
  readonly eventId: string | null;
  readonly since: string | null;
  readonly until: string | null;
  readonly mode: HoldMode | null;
}

export const SLOT_PREFIX = 'slot-';
export const OVERFLOW_PREFIX = 'slot-x-';
export const MEMBER_PREFIX = 'member-';
/** The queue's entries (queue-entries.ts): one per waiting member, named in the queue's order: held, and asking (not held yet). */
export const QUEUE_PREFIX = 'queue-';
export const ASKING_PREFIX = 'asking-';
/** The notices of the group's collision waves (wave-board.ts), listed with the slots. */
export const WAVE_PREFIX = 'slot-wave-';

export const slotName = (i: number): string => `${SLOT_PREFIX}${i}`;
export const overflowName = (member: string): string => `${OVERFLOW_PREFIX}${member}`;
export const memberName = (member: string): string => `${MEMBER_PREFIX}${member}`;

/** memberKey: a store-safe key for a VM, stable across restarts (its name, and a digest of its resource id). */
export function memberKey(vm: { readonly name: string; readonly resourceId: string | null }): string {
  const name =
    vm.name
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40) || 'vm';
  const digest = createHash('sha256')
    .update((vm.resourceId ?? vm.name).toLowerCase())
    .digest('hex')
    .slice(0, 8);
  return `${name}-${digest}`;
}

/**
 * asSlot reads a slot record by its schema. One that does not read but names a holder (a `member`
 * that is text: a time it cannot write, another version's shape) fails closed: it counts as held,
 * with no end to take it over at, and is nobody's own, so no member extends or renews it; it holds
 * its slot until it is written whole again or removed. Anything else (no holder, not JSON) is free.
 * No power is given away: any member may write a readable record that holds a slot as long.
 */
export function asSlot(value: unknown): SlotRecord {
  const r = SlotSchema.safeParse(value);
  if (r.success) return r.data;
  const o = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  if (typeof o.member !== 'string' || o.member === '') return { member: null };
  const line = (v: unknown): string | undefined => (typeof v === 'string' ? v.slice(0, 256) : undefined);
  const ids = Array.isArray(o.eventIds) ? o.eventIds.slice(0, 8).flatMap((id) => (typeof id === 'string' ? [id.slice(0, 256)] : [])) : [];
  const issue = r.error.issues[0];
  return {
    member: o.member.slice(0, 256),
    vm: line(o.vm) ?? o.member.slice(0, 256),
    eventIds: ids,
    ...(line(o.since) === undefined ? {} : { since: line(o.since) }),
    unread: issue === undefined ? 'not a slot record' : `${issue.path.join('.') || '(record)'}: ${issue.message}`,
  };
}

/** live: the slot has a holder whose recorded end has not passed. */
export const live = (s: SlotRecord, now: number): boolean => s.member !== null && (s.until === undefined || Date.parse(s.until) > now);

/** ownedBy: the slot is `member`'s own: in its name and live (one past its recorded end is nobody's: taking it again counts like any take). */
export const ownedBy = (s: SlotRecord, member: string, now: number): boolean =>
  s.member === member && s.unread === undefined && live(s, now);

/** How far ahead the budget looks: a month. Azure announces a maintenance at most about a week ahead. */
export const HORIZON_MS = 31 * 86_400_000;

/**
 * recordedEnd: when a member's maintenance for this event is over at the latest, as far as the
 * group knows: NotBefore (or now, once approved or Started) plus the expected interruption plus
 * the margin, and at most HORIZON_MS from now (renewed while the event is listed), so it is always
 * a time every member's schema reads. Past it, a holder that stopped renewing loses its slot.
 */
export function recordedEnd(e: Pick<ScheduledEvent, 'notBefore' | 'durationInSeconds'>, now: number, marginSeconds: number): number {
  const start = Math.max(now, e.notBefore === null ? now : Date.parse(e.notBefore) || now);
  const end = start + Math.max(0, e.durationInSeconds) * 1000 + marginSeconds * 1000;
  return Number.isFinite(end) ? Math.min(end, now + HORIZON_MS) : now + HORIZON_MS;
}

/**
 * renewedEnd: the recorded end a holder's slot `s` moves to, past the windows of its listed
 * events, or null while it has moved by less than a heartbeat (at most one write a heartbeat, and
 * a holder's slot always has its margin less one heartbeat ahead of it).
 */
export function renewedEnd(
  s: SlotRecord,
  listed: readonly ScheduledEvent[],
  now: number,
  c: { readonly marginSeconds: number; readonly heartbeatSeconds: number },
): string | null {
  const ends = listed.filter((e) => (s.eventIds ?? []).includes(e.eventId)).map((e) => recordedEnd(e, now, c.marginSeconds));
  if (ends.length === 0) return null;
  const until = new Date(Math.max(...ends)).toISOString();
  return s.until !== undefined && Date.parse(until) - Date.parse(s.until) < c.heartbeatSeconds * 1000 ? null : until;
}

/** slotRecordOf: a member's slot record for `event`, from `now`. */
export function slotRecordOf(
  me: { readonly key: string; readonly vm: { readonly name: string; readonly resourceId: string | null; readonly zone?: string | null } },
  event: Pick<ScheduledEvent, 'eventId' | 'notBefore' | 'durationInSeconds'>,
  mode: HoldMode,
  request: { readonly by: string; readonly reason?: string | undefined },
  now: number,
  marginSeconds: number,
): SlotRecord {
  return {
    member: me.key,
    vm: me.vm.name,
    resourceId: me.vm.resourceId,
    eventIds: [event.eventId],
    since: new Date(now).toISOString(),
    until: new Date(recordedEnd(event, now, marginSeconds)).toISOString(),
    mode,
    by: request.by,
    ...(request.reason ? { reason: request.reason } : {}),
    ...(me.vm.zone ? { zone: me.vm.zone } : {}),
  };
}

/** A held slot as /readyz and status say it. */
export interface SlotState {
  readonly name: string;
  readonly eventIds: readonly string[];
  readonly since: string | null;
  readonly until: string | null;
  readonly mode: HoldMode | null;
}

export const slotState = (name: string, s: SlotRecord): SlotState => ({
  name,
  eventIds: s.eventIds ?? [],
  since: s.since ?? null,
  until: s.until ?? null,
  mode: s.mode ?? null,
});

export const holderOf = (s: SlotRecord): Holder => ({
  vm: s.vm ?? s.member ?? '?',
  eventId: s.eventIds?.[0] ?? null,
  since: s.since ?? null,
  until: s.until ?? null,
  mode: s.mode ?? null,
});
