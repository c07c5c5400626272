/**
 * The collision forecast: when the members' records show more members due for maintenance at
 * once than the group allows, and this VM is one of them, it commits a `fleet.collision`
 * CloudEvent, routed like any other change. One wave of overlapping windows has one id on every
 * member (waves.ts), carried in `data.collision.id`; a member says it once for each set of members
 * due in the wave (more are seen, or they complete), down to the word that the wave is within the
 * budget now, and each word's CloudEvent id is a digest of the wave and the set it says is due, so
 * every member's copy of one word has one id and a consumer that deduplicates sees it once. Chat
 * updates its message of the member's maintenance in place.
 */
import type { Logger } from 'pino';
import type { BridgeView } from '../../imds/view.ts';
import type { ScheduledEvent } from '../../imds/wire.ts';
import { staleAt, type MemberRecord, type SlotRecord } from './records.ts';
import { collisionOf, windowsOf, type Window } from './windows.ts';
import { MARGIN_SECONDS, slotsFor, UNHEALTHY_COUNTS_FOR_SECONDS } from './config.ts';
import { unavailableOf, type Unhealthy } from './unavailable.ts';
import type { BridgeEvent } from '../../pipeline/cloudevent.ts';
import type { CollisionInfo } from '../../pipeline/info.ts';
import { toCollisionCloudEvent } from '../../pipeline/notices.ts';
import type { Journal, PendingEvent } from '../../store/store.ts';
import type { Wave, Waves } from './waves.ts';

export interface CollisionDeps {
  readonly group: string;
  /** maxUnavailable as configured: a number, or a percentage of the members with a fresh record. */
  readonly maxUnavailable: number | string;
  readonly view: BridgeView;
  readonly journal: Journal;
  readonly logger: Logger;
  readonly route: (event: BridgeEvent) => PendingEvent;
  /** Called after the collision was committed. */
  readonly committed: (event: BridgeEvent) => void;
  readonly waves: Waves;
  /** The group's settle time (fleet.health.settleSeconds): a member is unavailable that long past its window. */
  readonly settleSeconds?: number;
  /** How long a member not healthy counts against the group (fleet.unhealthyCountsForSeconds; an hour unless said). */
  readonly unhealthyCountsForSeconds?: number;
  /** What is added to a holder's recorded end (fleet.marginSeconds; half an hour unless said). */
  readonly marginSeconds?: number;
}

export class Forecast {
  readonly #d: CollisionDeps;
  /** Per wave: the EventIds due (sorted) when this member last said it. */
  readonly #said = new Map<string, string>();
  /** The group's slots at the last read of its members. */
  #k = 1;
  /** The members not healthy now, outside the wave: the group has that many slots less for it. */
  #unhealthy: Unhealthy[] = [];

  constructor(deps: CollisionDeps) {
    this.#d = deps;
  }

  /** foretell reads the members' records (and the slots, which say when a member's maintenance ends); it returns the CloudEvent it committed, or null. */
  async foretell(members: readonly MemberRecord[], slots: readonly SlotRecord[] = []): Promise<BridgeEvent | null> {
    const d = this.#d;
    const document = d.view.document;
    if (document === null || !d.view.vm.nameKnown) return null;
    const me = d.view.vm.name.toLowerCase();
    // a member is unavailable past its maintenance until it has settled; one not healthy now is unavailable already
    const now = Date.now();
    const windows = windowsOf(members, now, (d.settleSeconds ?? 0) * 1000);
    this.#k = slotsFor(d.maxUnavailable, Math.max(1, members.filter((m) => !staleAt(m, now)).length));
    const bounds = {
      unhealthyCountsForSeconds: d.unhealthyCountsForSeconds ?? UNHEALTHY_COUNTS_FOR_SECONDS,
      settleSeconds: d.settleSeconds ?? 0,
      marginSeconds: d.marginSeconds ?? MARGIN_SECONDS,
    };
    this.#unhealthy = unavailableOf(members, slots, '', now, bounds).filter((u) => u.counts && !windows.some((w) => w.vm === u.vm));
    const c = collisionOf(windows, Math.max(0, this.#k - this.#unhealthy.length));
    let wave: Wave | undefined;
    let due: readonly Window[];
    if (c !== null && c.windows.some((w) => w.vm.toLowerCase() === me)) {
      wave = await d.waves.waveOf(
        c.windows.map((w) => w.eventId),
        c.to,
      );
      due = c.windows;
    } else {
      // a wave this member spoke of: as members complete, how many of it are still due
      const mine = windows.find((w) => w.vm.toLowerCase() === me && d.waves.known(w.eventId) !== undefined);
      wave = mine === undefined ? undefined : d.waves.known(mine.eventId);
      due = wave === undefined ? [] : windows.filter((w) => wave!.eventIds.includes(w.eventId));
    }
    const ownWindow = due.find((w) => w.vm.toLowerCase() === me);
    const own = ownWindow === undefined ? undefined : document.events.find((e) => e.eventId === ownWindow.eventId);
    if (wave === undefined || own === undefined) return null;
    const last = this.#said.get(wave.id);
    const said = due
      .map((w) => w.eventId)
      .sort()
      .join('\n');
    if (last === said) return null;
    const ce = this.#commit(own, document.incarnation, this.#infoOf(wave, due, members.length), last !== undefined);
    if (this.#said.size > 10_000) this.#said.clear();
    this.#said.set(wave.id, said);
    if (due.length + this.#unhealthy.length <= this.#k) d.waves.forget(wave);
    return ce;
  }

  #infoOf(wave: Wave, due: readonly Window[], members: number): CollisionInfo {
    const peak = collisionOf(due, 0);
    return {
      id: wave.id,
      group: this.#d.group,
      maxUnavailable: this.#k,
      members,
      from: new Date(Math.min(...due.map((w) => w.from))).toISOString(),
      to: new Date(Math.max(...due.map((w) => w.to))).toISOString(),
      due: due.map((w) => ({ vm: w.vm, eventId: w.eventId, eventType: w.eventType, notBefore: new Date(w.from).toISOString() })),
      atOnce: new Set(peak?.windows.map((w) => w.vm) ?? []).size,
      ...(this.#unhealthy.length > 0 ? { unhealthy: this.#unhealthy.map((u) => u.vm) } : {}),
    };
  }

  #commit(own: ScheduledEvent, incarnation: number, collision: CollisionInfo, update: boolean): BridgeEvent | null {
    const d = this.#d;
    const ce = toCollisionCloudEvent(own, incarnation, collision, { vm: d.view.vm, observedAt: new Date().toISOString() });
    if (d.journal.knowsCloudEvent(ce.id)) return null;
    d.journal.appendEvents([d.route(ce)]);
    const { due, from, to, atOnce } = collision;
    const n = `${due.length} member${due.length === 1 ? '' : 's'} of ${d.group} ${due.length === 1 ? 'is' : 'are'}`;
    // why it is a collision: who is due, and what the group allows (less the members not healthy, down already)
    const sick = this.#unhealthy.map((u) => u.vm);
    const allows = `the group allows ${this.#k}${sick.length === 0 ? '' : ` and ${sick.join(', ')} ${sick.length === 1 ? 'is' : 'are'} not healthy, counted as down`}`;
    const who = due.map((w) => `${w.vm} ${w.eventType} not before ${w.notBefore}`).join(', ');
    if (update)
      d.logger.info(
        { group: d.group, ceId: ce.id, wave: collision.id, due: due.length, atOnce },
        `fleet budget: ${n} still due in the collision (${who}); ${allows}`,
      );
    else
      d.logger.warn(
        { code: 'FLEET_COLLISION', group: d.group, ceId: ce.id, wave: collision.id, due, from, to, atOnce, unhealthy: sick },
        `fleet budget: ${n} due for maintenance at once (${who}); ${allows}`,
      );
    d.committed(ce);
    return ce;
  }
}

/**
 * ForecastReads says when this member reads the group's records for the forecast: at the read
 * that writes a new or changed maintenance of its own, and again one and five seconds later (the
 * members of one wave see their events within a read or two of each other, so the last of them
 * is seen at once, not a heartbeat later).
 */
export class ForecastReads {
  readonly #seen = new Map<string, string>();
  #again: number[] = [];

  /** due: whether to read the group now, given this member's events and whether its record was just written. */
  due(mine: readonly ScheduledEvent[], wrote: boolean, now: number): boolean {
    const listed = new Set(mine.map((e) => e.eventId));
    for (const id of this.#seen.keys()) if (!listed.has(id)) this.#seen.delete(id);
    const fresh = wrote ? mine.filter((e) => e.eventStatus === 'Scheduled' && this.#seen.get(e.eventId) !== (e.notBefore ?? '')) : [];
    for (const e of fresh) this.#seen.set(e.eventId, e.notBefore ?? '');
    if (fresh.length > 0) this.#again = [now + 1000, now + 5000];
    const again = this.#again.length > 0 && this.#again[0]! <= now;
    this.#again = this.#again.filter((t) => t > now);
    return fresh.length > 0 || again;
  }
}
