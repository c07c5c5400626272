/**
 * Which members of a group count as unavailable although they hold no slot, as a disruption budget
 * counts a pod that is not Ready: a member that checks its health and says it is not healthy, or
 * whose record went stale. A member that no longer exists leaves the count, as it does from
 * Kubernetes' disruption controller: one not healthy (or silent) for longer than
 * `unhealthyCountsForSeconds` counts no more, and is named (FLEET_MEMBER_IGNORED), so a VM scaled
 * in or a check that never passes cannot hold the group for good. The bound starts when it
 * stopped being healthy (or writing), and never before its own maintenance is over: the recorded
 * end of a slot in its name (or of an event its record says Started) plus the settle time (a
 * rebooting VM writes nothing).
 */
import type { Logger } from 'pino';
import type { FleetConfig } from './config.ts';
import { live, staleAt, type MemberRecord, type SlotRecord } from './records.ts';

/** A member that counts as unavailable although it holds no slot. */
export interface Unhealthy {
  readonly key: string;
  readonly vm: string;
  readonly since: string;
  readonly why: string;
  /** Counted because its record went stale (not for what its record says of its health). */
  readonly stale?: boolean;
}

/** A member not healthy, and whether it still counts: until when it counts (or since when it no longer does). */
export interface Unavailable extends Unhealthy {
  readonly counts: boolean;
  readonly countsUntil: string;
}

/**
 * How long a member not healthy counts; how long a member is unavailable past its maintenance
 * (when its record does not say); and the margin a holder's recorded end is given.
 */
export interface CountBounds {
  readonly unhealthyCountsForSeconds: number;
  readonly settleSeconds: number;
  readonly marginSeconds: number;
}

/** boundsOf: a group's bounds as a member's `fleet` block says them. */
export const boundsOf = (f: Pick<FleetConfig, 'unhealthyCountsForSeconds' | 'marginSeconds' | 'health'>): CountBounds => ({
  unhealthyCountsForSeconds: f.unhealthyCountsForSeconds,
  settleSeconds: f.health?.settleSeconds ?? 0,
  marginSeconds: f.marginSeconds,
});

/**
 * unavailableOf: the other members (not `me`) whose records say they are not healthy, or went stale
 * while they checked their health, and that hold no live slot (those count as holders); each with
 * whether it still counts. `slots` are the group's slot records, live or not (a slot past its
 * recorded end still says when its holder's maintenance ended).
 */
export function unavailableOf(
  members: readonly MemberRecord[],
  slots: readonly SlotRecord[],
  me: string,
  now: number,
  bounds: CountBounds,
): Unavailable[] {
  // what a record says is untrusted: a time that does not read is now
  const time = (iso: string | undefined): number => {
    const t = iso === undefined ? NaN : Date.parse(iso);
    return Number.isFinite(t) ? t : now;
  };
  return members.flatMap((m) => {
    if (m.member === me || m.health === undefined) return [];
    const own = slots.filter((s) => s.member === m.member);
    if (own.some((s) => live(s, now))) return [];
    const stale = staleAt(m, now);
    if (!stale && m.health.healthy) return [];
    const since = stale ? Math.min(time(m.heartbeatAt), m.health.healthy ? Infinity : time(m.health.since)) : time(m.health.since);
    const why = stale ? 'its record went stale' : (m.health.detail ?? 'not healthy');
    // the bound starts once its own maintenance is over, and the settle time after it: its slot's recorded end, or
    // for a maintenance its record says Started with no slot in its name, the end a slot would have recorded
    const settle = (m.settleSeconds ?? bounds.settleSeconds) * 1000;
    const started = m.events.filter((e) => e.status === 'Started');
    const ended = Math.max(
      ...own.map((s) => time(s.until) + settle),
      ...started.map((e) => time(m.heartbeatAt) + (Math.max(0, e.durationInSeconds) + bounds.marginSeconds) * 1000 + settle),
    );
    const from = Math.max(since, ended);
    const until = from + bounds.unhealthyCountsForSeconds * 1000;
    return [
      {
        key: m.member,
        vm: m.vm,
        since: new Date(since).toISOString(),
        why,
        stale,
        counts: now < until,
        countsUntil: new Date(until).toISOString(),
      },
    ];
  });
}

/** unhealthyText: the unhealthy members, in words. */
export const unhealthyText = (u: readonly Unhealthy[]): string =>
  u.map((x) => `${x.vm} is not healthy since ${x.since} (${x.why})`).join('; ');

/** ignoredText: a member left out of the count, in words. */
export const ignoredText = (u: Unavailable, bounds: Pick<CountBounds, 'unhealthyCountsForSeconds'>): string =>
  `${u.vm} is not healthy since ${u.since} (${u.why}), and no longer counts against the group since ${u.countsUntil} (unhealthyCountsForSeconds: ${bounds.unhealthyCountsForSeconds})`;

/**
 * CountedMembers: the members that count as unavailable now, each member left out said once in
 * the log (FLEET_MEMBER_IGNORED), with how to forget it if it is gone for good.
 */
export class CountedMembers {
  readonly #logger: Logger;
  readonly #group: string;
  readonly #bounds: CountBounds;
  readonly #said = new Set<string>();

  constructor(logger: Logger, group: string, bounds: CountBounds) {
    this.#logger = logger;
    this.#group = group;
    this.#bounds = bounds;
  }

  get bounds(): CountBounds {
    return this.#bounds;
  }

  /** of: the members that count now; the ones past the bound are said (once each) and left out. */
  of(members: readonly MemberRecord[], slots: readonly SlotRecord[], me: string, now: number): Unhealthy[] {
    const all = unavailableOf(members, slots, me, now, this.#bounds);
    for (const u of all.filter((x) => !x.counts)) {
      const id = `${u.key}@${u.countsUntil}`;
      if (this.#said.has(id)) continue;
      if (this.#said.size >= 10_000) this.#said.clear();
      this.#said.add(id);
      this.#logger.warn(
        {
          code: 'FLEET_MEMBER_IGNORED',
          group: this.#group,
          vm: u.vm,
          member: u.key,
          since: u.since,
          why: u.why,
          countsUntil: u.countsUntil,
        },
        `fleet budget: ${ignoredText(u, this.#bounds)}; if it is gone for good: se-bridge fleet forget ${u.vm}`,
      );
    }
    return all.filter((x) => x.counts).map(({ key, vm, since, why, stale }) => ({ key, vm, since, why, stale }));
  }
}
