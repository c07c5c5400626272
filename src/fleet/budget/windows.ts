/**
 * The collision forecast's pure rules: each member's maintenance windows as its record says them,
 * and the moment the most members' windows overlap. Every member and the relay compute it at each
 * read of the group, over what any member may write: it costs O(n log n) in the windows (a sweep
 * over their edges), and a record brings at most 50 events, each within a month ahead.
 */
import { isDrill } from '../../imds/drill-id.ts';
import { HORIZON_MS, type MemberRecord } from './records.ts';

/** A member's expected maintenance window, for the collision forecast. */
export interface Window {
  readonly vm: string;
  /** The member's key (records.ts memberKey), as its record says it. */
  readonly member?: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly from: number;
  readonly to: number;
  /** Since when the budget holds its early approval, as its record says (the queue serves the one held first first); absent when not held. */
  readonly heldSince?: number;
}

/** The last time a record's time may say: the end of the year 9999. */
const LAST_TIME = Date.parse('9999-12-31T23:59:59.999Z');

/** How long a maintenance is taken to last when its duration is unknown or short: the typical Started-to-gone time. */
export const TYPICAL_MAINTENANCE_MS = 10 * 60_000;

/**
 * windowsOf: the maintenance windows of the members' pending events (one per event with a
 * NotBefore no more than HORIZON_MS after `now`: no maintenance is announced further ahead).
 */
export function windowsOf(members: readonly MemberRecord[], now: number, settleMs = 0): Window[] {
  return members.flatMap((m) =>
    m.events
      // a drill is never due: a record that shows one (written by an older version) is read without it
      .flatMap((e) =>
        e.notBefore !== null && e.status === 'Scheduled' && !isDrill(e.eventId) ? [{ ...e, from: Date.parse(e.notBefore) }] : [],
      )
      // a NotBefore that does not read, or past the year 9999, is no window (its end could not be written as a time)
      .filter((e) => Number.isFinite(e.from) && Math.abs(e.from) <= LAST_TIME && e.from <= now + HORIZON_MS)
      .map((e) => {
        const from = e.from;
        const since = e.held === undefined ? NaN : Date.parse(e.held.since);
        return {
          vm: m.vm,
          member: m.member,
          eventId: e.eventId,
          eventType: e.eventType,
          from,
          to: from + Math.max(TYPICAL_MAINTENANCE_MS, e.durationInSeconds * 1000) + settleMs,
          ...(Number.isFinite(since) ? { heldSince: since } : {}),
        };
      }),
  );
}

export interface Collision {
  readonly from: number;
  readonly to: number;
  readonly windows: readonly Window[];
}

/**
 * collisionOf: the moment the most members' windows overlap, when more members than the group
 * allows are due at once; null otherwise. That moment is a window's start (of several as busy,
 * the start of the window listed first). The windows returned are those that overlap there,
 * sorted by EventId, so every member that reads the same records finds the same collision.
 */
export function collisionOf(windows: readonly Window[], maxUnavailable: number): Collision | null {
  const at = busiestStart(windows, maxUnavailable);
  if (at === null) return null;
  const overlapping = windows.filter((x) => x.from <= at && x.to > at).sort((a, b) => a.eventId.localeCompare(b.eventId));
  return {
    from: overlapping.reduce((m, w) => Math.min(m, w.from), Infinity),
    to: overlapping.reduce((m, w) => Math.max(m, w.to), -Infinity),
    windows: overlapping,
  };
}

/**
 * collisionWith: the busiest moment while one of a member's own windows (`own`) is open, when more
 * members than the group allows are due at once then; null otherwise. What the member is due in,
 * whatever moment is busiest in the group: a wave later than another as busy is its members' all
 * the same. Each window is cut to the member's own window, so the moment found is one it is due at.
 */
export function collisionWith(windows: readonly Window[], maxUnavailable: number, own: (w: Window) => boolean): Collision | null {
  let best: Collision | null = null;
  for (const o of windows.filter(own)) {
    const cut = windows
      .filter((w) => w.from < o.to && w.to > o.from)
      .map((w) => ({ ...w, from: Math.max(w.from, o.from), to: Math.min(w.to, o.to) }));
    const ids = new Set(collisionOf(cut, maxUnavailable)?.windows.map((w) => w.eventId));
    if (ids.size === 0 || (best !== null && best.windows.length >= ids.size)) continue;
    const overlapping = windows.filter((w) => ids.has(w.eventId)).sort((a, b) => a.eventId.localeCompare(b.eventId));
    best = { from: Math.min(...overlapping.map((w) => w.from)), to: Math.max(...overlapping.map((w) => w.to)), windows: overlapping };
  }
  return best;
}

/**
 * busiestStart: the window start at which the most members have a window open (from <= t < to,
 * each member counted once), when more than `maxUnavailable`; of several as busy, the start of
 * the window listed first. One sweep over the starts in time order, each window opened once it
 * has started and closed once it has ended: O(n log n) for n windows.
 */
function busiestStart(windows: readonly Window[], maxUnavailable: number): number | null {
  // each moment looked at, with the first window that starts there
  const first = new Map<number, number>();
  windows.forEach((w, i) => {
    if (!first.has(w.from)) first.set(w.from, i);
  });
  // a window that ends before it starts (or whose times do not compare) is open at no moment
  const open = windows.filter((w) => w.from < w.to);
  const starts = [...open].sort((a, b) => a.from - b.from);
  const ends = [...open].sort((a, b) => a.to - b.to);
  const moments = [...first.keys()].sort((a, b) => a - b);
  const members = new Map<string, number>();
  let best: { at: number; count: number; index: number } | null = null;
  let [s, e] = [0, 0];
  for (const at of moments) {
    // a moment that does not compare (NaN) has no window open
    const comparable = !Number.isNaN(at);
    for (; comparable && s < starts.length && starts[s]!.from <= at; s++) members.set(starts[s]!.vm, (members.get(starts[s]!.vm) ?? 0) + 1);
    for (; comparable && e < ends.length && ends[e]!.to <= at; e++) {
      const left = members.get(ends[e]!.vm)! - 1;
      if (left === 0) members.delete(ends[e]!.vm);
      else members.set(ends[e]!.vm, left);
    }
    const count = comparable ? members.size : 0;
    const index = first.get(at)!;
    if (count > maxUnavailable && (best === null || count > best.count || (count === best.count && index < best.index)))
      best = { at, count, index };
  }
  return best === null ? null : best.at;
}
