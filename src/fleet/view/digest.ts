/**
 * digestOf: the fleet digest (present/digest.ts) of a snapshot of the store and its pending
 * events. Pure: the snapshot and its events in, the digest out. Its `key` names what it says
 * without the instant it was made, so a message is updated only when the fleet changed, never
 * because a minute went by.
 */
import { createHash } from 'node:crypto';
import { stateOf } from './ics.ts';
import type { FleetEvent } from './events.ts';
import type { FleetSnapshot } from './snapshot.ts';
import type { DigestGroup, FleetDigest } from '../../present/digest.ts';

/**
 * digestOf: the fleet's pending events that begin before `now + hours` (an event with no NotBefore,
 * or one under way, counts), by group; a group with nothing coming is left out unless it is paused
 * or faces a collision.
 */
export function digestOf(
  snapshot: FleetSnapshot,
  events: readonly FleetEvent[],
  now: number,
  o: { readonly hours: number; readonly consoleUrl?: string | null },
): FleetDigest {
  const until = now + o.hours * 3_600_000;
  const coming = events.filter((e) => {
    const nb = e.notBefore === null ? NaN : Date.parse(e.notBefore);
    return !Number.isFinite(nb) || nb < until;
  });
  const groupOf = (name: string | null): DigestGroup => {
    const mine = coming.filter((e) => e.group === name);
    const g = name === null ? undefined : snapshot.groups.find((x) => x.group === name);
    const times = mine.flatMap((e) => (e.notBefore === null || !Number.isFinite(Date.parse(e.notBefore)) ? [] : [e.notBefore])).sort();
    const types = new Map<string, number>();
    const states: Record<string, number> = {};
    for (const e of mine) {
      types.set(e.eventType, (types.get(e.eventType) ?? 0) + 1);
      const s = stateOf(e);
      states[s] = (states[s] ?? 0) + 1;
    }
    const c = g?.collision ?? null;
    const blackout = mine.find((e) => e.blackout !== undefined)?.blackout ?? null;
    return {
      ...{ group: name, count: mine.length, first: times[0] ?? null, last: times.at(-1) ?? null, states },
      types: [...types].map(([type, count]) => ({ type, count })).sort((a, b) => b.count - a.count || (a.type < b.type ? -1 : 1)),
      maxUnavailable: g?.maxUnavailable ?? null,
      down: g?.slots.length ?? 0,
      unhealthy: g?.members.filter((m) => m.unavailable?.counts === true).length ?? 0,
      stale: g?.members.filter((m) => m.stale).length ?? 0,
      pause: g?.pause ? { by: g.pause.who ?? g.pause.by, why: g.pause.why, until: g.pause.until ?? null } : null,
      collision: c === null ? null : { from: c.from, due: c.due.length },
      blackout,
    };
  };
  const groups = [
    ...snapshot.groups.map((g) => groupOf(g.group)).filter((g) => g.count > 0 || g.pause !== null || g.collision !== null),
    ...(coming.some((e) => e.group === null) ? [groupOf(null)] : []),
  ];
  const unread = snapshot.unread.map((u) => `${u.what}: ${u.why}`);
  const said = { hours: o.hours, groups, unread, consoleUrl: o.consoleUrl ?? null };
  // the span's end moves each minute: the key names the events, not the instant
  const key = createHash('sha256').update(JSON.stringify(said)).digest('hex').slice(0, 32);
  return { at: new Date(now).toISOString(), until: new Date(until).toISOString(), total: coming.length, ...said, key };
}
