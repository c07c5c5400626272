/**
 * The collision forecast's pure rules: each member's maintenance windows as its record says them,
 * and the moment the most members' windows overlap.
 */
import { isDrill } from '../../imds/drill-id.ts';
import type { MemberRecord } from './records.ts';

/** A member's expected maintenance window, for the collision forecast. */
export interface Window {
  readonly vm: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly from: number;
  readonly to: number;
}

/** The last time a record's time may say: the end of the year 9999. */
const LAST_TIME = Date.parse('9999-12-31T23:59:59.999Z');

/** How long a maintenance is taken to last when its duration is unknown or short: the typical Started-to-gone time. */
export const TYPICAL_MAINTENANCE_MS = 10 * 60_000;

/** windowsOf: the maintenance windows of the members' pending events (one per event with a NotBefore). */
export function windowsOf(members: readonly MemberRecord[], settleMs = 0): Window[] {
  return members.flatMap((m) =>
    m.events
      // a drill is never due: a record that shows one (written by an older version) is read without it
      .flatMap((e) =>
        e.notBefore !== null && e.status === 'Scheduled' && !isDrill(e.eventId) ? [{ ...e, from: Date.parse(e.notBefore) }] : [],
      )
      // a NotBefore that does not read, or past the year 9999, is no window (its end could not be written as a time)
      .filter((e) => Number.isFinite(e.from) && Math.abs(e.from) <= LAST_TIME)
      .map((e) => {
        const from = e.from;
        return {
          vm: m.vm,
          eventId: e.eventId,
          eventType: e.eventType,
          from,
          to: from + Math.max(TYPICAL_MAINTENANCE_MS, e.durationInSeconds * 1000) + settleMs,
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
 * allows are due at once; null otherwise. The windows returned are those that overlap there,
 * sorted by EventId, so every member that reads the same records finds the same collision.
 */
export function collisionOf(windows: readonly Window[], maxUnavailable: number): Collision | null {
  let best: { at: number; members: Set<string> } | null = null;
  for (const w of windows) {
    const at = w.from;
    const members = new Set(windows.filter((x) => x.from <= at && x.to > at).map((x) => x.vm));
    if (members.size > maxUnavailable && (best === null || members.size > best.members.size)) best = { at, members };
  }
  if (best === null) return null;
  const at = best.at;
  const overlapping = windows.filter((x) => x.from <= at && x.to > at).sort((a, b) => a.eventId.localeCompare(b.eventId));
  return {
    from: Math.min(...overlapping.map((w) => w.from)),
    to: Math.max(...overlapping.map((w) => w.to)),
    windows: overlapping,
  };
}
