/**
 * The console's timeline: the fleet's pending events over a range of time (the next hour, 24
 * hours or 7 days, with a little of the past for what is under way), one lane per group and one
 * row per member, each maintenance from NotBefore for its duration (unknown: 15 minutes, as the
 * calendar's conflicts count it), in its state; each group with its budget against the members
 * down or unhealthy, its pause and its collision. Pure: the snapshot in, the model out.
 */
import { Calendar } from '../calendar/calendar.ts';
import { UNKNOWN_DURATION_MS } from '../calendar/conflict.ts';
import { stateOf } from '../fleet/view/ics.ts';
import { lower, type FleetEvent } from '../fleet/view/events.ts';
import type { FleetSnapshot } from '../fleet/view/snapshot.ts';
import type { GroupStatus } from '../fleet/budget/group.ts';

type SnapshotMember = GroupStatus['members'][number];

export const RANGES = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 } as const;
export type Range = keyof typeof RANGES;
export const rangeOf = (s: string | null): Range | null => (s !== null && Object.hasOwn(RANGES, s) ? (s as Range) : null);

export interface Bar {
  readonly eventId: string;
  readonly vm: string;
  readonly eventType: string;
  readonly state: string;
  /** Where it starts and ends on the range, from 0 (its start) to 1 (its end), clipped. */
  readonly from: number;
  readonly to: number;
  readonly startsAt: string;
  readonly endsAt: string;
  readonly durationKnown: boolean;
  /** Scheduled and not approved yet: a person may approve it. */
  readonly approvable: boolean;
}

/** A stretch of the range in which its member's calendar holds early approval: a blackout, or outside the windows. */
export interface Shade {
  readonly kind: 'blackout' | 'closed';
  /** The blackout's name (null: outside the windows). */
  readonly name: string | null;
  readonly from: number;
  readonly to: number;
  readonly startsAt: string;
  readonly endsAt: string;
}

export interface Row {
  readonly vm: string;
  /** healthy, not healthy, or unknown (it checks none, or has no record). */
  readonly health: 'healthy' | 'unhealthy' | 'unknown';
  readonly healthDetail: string | null;
  readonly stale: boolean;
  /** A VM only Azure lists: no member record. */
  readonly unwatched: boolean;
  readonly holdsSlot: boolean;
  readonly heartbeatAt: string | null;
  readonly bars: readonly Bar[];
  /** Its calendar's blackouts and the time outside its windows, over the range (the calendar its members published). */
  readonly shades: readonly Shade[];
}

export interface Lane {
  readonly group: string | null;
  readonly maxUnavailable: number | null;
  readonly down: number;
  readonly unhealthy: number;
  readonly stale: number;
  readonly pause: { readonly by: string; readonly why: string } | null;
  readonly collision: { readonly from: string; readonly due: number; readonly at: number } | null;
  readonly rows: readonly Row[];
}

export interface Timeline {
  readonly readAt: number;
  readonly range: Range;
  readonly from: number;
  readonly to: number;
  /** Where now is on the range (0 to 1). */
  readonly now: number;
  readonly lanes: readonly Lane[];
  readonly pending: number;
}

/** timelineOf: the fleet over `range` from `now` (a twelfth of it before now, for what is under way). */
export function timelineOf(snapshot: FleetSnapshot, events: readonly FleetEvent[], now: number, range: Range): Timeline {
  const span = RANGES[range];
  const [from, to] = [now - span / 12, now + span];
  const at = (t: number) => Math.min(1, Math.max(0, (t - from) / (to - from)));
  const barOf = (e: FleetEvent): Bar | null => {
    const nb = e.notBefore === null ? NaN : Date.parse(e.notBefore);
    const start = Number.isFinite(nb) ? nb : Math.min(now, snapshot.readAt);
    const end = start + (e.durationInSeconds > 0 ? e.durationInSeconds * 1000 : UNKNOWN_DURATION_MS);
    if (end < from || start > to) return null;
    return {
      ...{ eventId: e.eventId, vm: e.vm, eventType: e.eventType, state: stateOf(e), from: at(start), to: at(end) },
      ...{ startsAt: new Date(start).toISOString(), endsAt: new Date(end).toISOString(), durationKnown: e.durationInSeconds > 0 },
      approvable: /^scheduled$/i.test(e.status) && e.approval === undefined,
    };
  };
  const shadesOf = shading(snapshot.calendars, from, to, at);
  // an event that ended (its member's journal says when): Completed up to then, Canceled where it was planned
  const endedBar = (vm: string, e: NonNullable<SnapshotMember['ended']>[number]): Bar | null => {
    const done = Date.parse(e.at);
    const nb = e.notBefore === null ? NaN : Date.parse(e.notBefore);
    const length = e.durationInSeconds > 0 ? e.durationInSeconds * 1000 : UNKNOWN_DURATION_MS;
    const start = Number.isFinite(nb) && (e.status === 'Canceled' || nb < done) ? nb : done - length;
    const end = e.status === 'Completed' ? Math.max(done, start + 60_000) : start + length;
    if (!Number.isFinite(start) || end < from || start > to) return null;
    return {
      ...{ eventId: e.eventId, vm, eventType: e.eventType, state: e.status.toLowerCase(), from: at(start), to: at(end) },
      ...{ startsAt: new Date(start).toISOString(), endsAt: new Date(end).toISOString(), durationKnown: e.durationInSeconds > 0 },
      approvable: false,
    };
  };
  const eventsOf = (group: string | null, vm: string) =>
    events.filter((e) => e.group === group && lower(e.vm) === lower(vm)).flatMap((e) => barOf(e) ?? []);
  const lanes: Lane[] = snapshot.groups.map((g) => {
    const rows: Row[] = g.members.map((m) => ({
      ...{ vm: m.vm, stale: m.stale, unwatched: false, holdsSlot: m.holdsSlot, heartbeatAt: m.heartbeatAt },
      health: m.health === undefined ? 'unknown' : m.health.healthy ? 'healthy' : 'unhealthy',
      healthDetail: m.health?.detail ?? null,
      bars: [...eventsOf(g.group, m.vm), ...(m.ended ?? []).flatMap((e) => endedBar(m.vm, e) ?? [])],
      shades: m.calendar === undefined ? [] : shadesOf(m.calendar.digest),
    }));
    // a VM of this group that Azure lists and no member record names
    for (const e of events.filter((x) => x.group === g.group && x.member === 'none'))
      if (!rows.some((r) => lower(r.vm) === lower(e.vm))) rows.push(unwatchedRow(e.vm, eventsOf(g.group, e.vm)));
    const c = g.collision;
    return {
      ...{ group: g.group, maxUnavailable: g.maxUnavailable, rows: rows.sort((a, b) => (a.vm < b.vm ? -1 : a.vm > b.vm ? 1 : 0)) },
      down: g.slots.length,
      unhealthy: g.members.filter((m) => m.unavailable?.counts === true).length,
      stale: g.members.filter((m) => m.stale).length,
      pause: g.pause === null ? null : { by: g.pause.who ?? g.pause.by, why: g.pause.why },
      collision: c === null ? null : { from: c.from, due: c.due.length, at: at(Date.parse(c.from)) },
    };
  });
  // the events no group's member lists: Azure's alone, with no member record anywhere
  const alone = events.filter((e) => e.group === null);
  if (alone.length > 0) {
    const vms = [...new Set(alone.map((e) => e.vm))].sort();
    const rows = vms.map((vm) => unwatchedRow(vm, eventsOf(null, vm)));
    lanes.push({ group: null, maxUnavailable: null, down: 0, unhealthy: 0, stale: 0, pause: null, collision: null, rows });
  }
  return { readAt: snapshot.readAt, range, from, to, now: at(now), lanes, pending: events.length };
}

const unwatchedRow = (vm: string, bars: Bar[]): Row => ({
  ...{ vm, health: 'unknown', healthDetail: null, stale: false, unwatched: true, holdsSlot: false, heartbeatAt: null, bars, shades: [] },
});

/** The most stretches a calendar is walked into over a range (a window a day for a week is 14). */
const MOST_STRETCHES = 200;

/**
 * shading: each published calendar's shades over the range, walked once per calendar (every member
 * of a group shares one): its blackouts, and the time outside its windows (a calendar with no
 * windows has none); a member whose calendar was not published has none.
 */
function shading(calendars: FleetSnapshot['calendars'], from: number, to: number, at: (t: number) => number) {
  const made = new Map<string, Shade[]>();
  return (digest: string): Shade[] => {
    const config = calendars?.get(digest);
    if (config === undefined) return [];
    let shades = made.get(digest);
    if (shades === undefined) {
      const stretches = new Calendar(config).stretches(from, to, MOST_STRETCHES);
      shades = [];
      for (const [i, s] of stretches.entries()) {
        const kind = s.state.blackout !== null ? 'blackout' : s.state.inWindow ? null : 'closed';
        if (kind === null) continue;
        const end = stretches[i + 1]?.at ?? to;
        const last = shades.at(-1);
        // a window that opens and closes within a blackout changes nothing that is shaded
        if (last !== undefined && last.kind === kind && last.name === s.state.blackout && last.endsAt === new Date(s.at).toISOString())
          shades[shades.length - 1] = { ...last, to: at(end), endsAt: new Date(end).toISOString() };
        else
          shades.push({
            ...{ kind, name: s.state.blackout, from: at(s.at), to: at(end) },
            ...{ startsAt: new Date(s.at).toISOString(), endsAt: new Date(end).toISOString() },
          });
      }
      made.set(digest, shades);
    }
    return shades;
  };
}
