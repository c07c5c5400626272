/**
 * How a word about a collision wave becomes a member's `fleet.collision` CloudEvent (collisions.ts):
 * what it says of the wave (from the speaker's copy when the word carries one, so every member's
 * copy says the same), committed to the journal under the word's id, and said in a log line.
 */
import type { Logger } from 'pino';
import type { ScheduledEvent } from '../../imds/wire.ts';
import type { BridgeView } from '../../imds/view.ts';
import type { BridgeEvent } from '../../pipeline/cloudevent.ts';
import type { CollisionInfo } from '../../pipeline/info.ts';
import { toCollisionCloudEvent } from '../../pipeline/notices.ts';
import type { Journal, PendingEvent } from '../../store/store.ts';
import type { WordCopy } from './schemas.ts';
import type { Unhealthy } from './unavailable.ts';
import { collisionOf, type Window } from './windows.ts';
import type { WaveWord } from './waves.ts';

/** copyOf: what every copy of a word says of the wave, from the speaker's CollisionInfo. */
export function copyOf(info: CollisionInfo): WordCopy {
  const { maxUnavailable, members, from, to, atOnce, unhealthy, due } = info;
  return { maxUnavailable, members, from, to, atOnce, ...(unhealthy === undefined ? {} : { unhealthy: [...unhealthy] }), due: [...due] };
}

/** infoOfCopy: a word's CollisionInfo as its speaker's copy says it. */
export function infoOfCopy(group: string, word: WaveWord & { readonly copy: WordCopy }): CollisionInfo {
  const { unhealthy, ...copy } = word.copy;
  return { id: word.wave, group, ...copy, ...(unhealthy === undefined || unhealthy.length === 0 ? {} : { unhealthy }), state: word.kind };
}

export interface SayContext {
  readonly group: string;
  readonly view: BridgeView;
  readonly journal: Journal;
  readonly logger: Logger;
  readonly route: (event: BridgeEvent) => PendingEvent;
  readonly committed: (event: BridgeEvent) => void;
}

/** commitCollision commits the word `id` about `own` (this member's event in the wave) once, and says why it is a collision; null when committed before. */
export function commitCollision(
  d: SayContext,
  own: ScheduledEvent,
  incarnation: number,
  id: string,
  collision: CollisionInfo,
  now: number,
): BridgeEvent | null {
  const ce = toCollisionCloudEvent(id, own, incarnation, collision, { vm: d.view.vm, observedAt: new Date(now).toISOString() });
  if (d.journal.knowsCloudEvent(ce.id)) return null;
  d.journal.appendEvents([d.route(ce)]);
  const { due, from, to, atOnce } = collision;
  const n = `${due.length} member${due.length === 1 ? '' : 's'} of ${d.group} ${due.length === 1 ? 'is' : 'are'}`;
  // why it is a collision: who is due, and what the group allows (less the members not healthy, down already)
  const sick = collision.unhealthy ?? [];
  const allows = `the group allows ${collision.maxUnavailable}${sick.length === 0 ? '' : ` and ${sick.join(', ')} ${sick.length === 1 ? 'is' : 'are'} not healthy, counted as down`}`;
  const who = due.map((w) => `${w.vm} ${w.eventType} not before ${w.notBefore}`).join(', ');
  if (collision.state !== 'foreseen')
    d.logger.info(
      { group: d.group, ceId: ce.id, wave: collision.id, state: collision.state, due: due.length, atOnce },
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

/** infoOf: what a word says of the wave as this member sees it: the members due now (none: the span the word says), the budget less the members not healthy. */
export function infoOf(
  group: string,
  k: number,
  unhealthy: readonly Unhealthy[],
  word: WaveWord,
  due: readonly Window[],
  members: number,
): CollisionInfo {
  const peak = collisionOf(due, 0);
  return {
    id: word.wave,
    group,
    maxUnavailable: k,
    members,
    // none still due (the speaker's resolved word, once the others are over): the wave's span as the word says it
    from: due.length === 0 ? word.from : new Date(Math.min(...due.map((w) => w.from))).toISOString(),
    to: due.length === 0 ? word.to : new Date(Math.max(...due.map((w) => w.to))).toISOString(),
    due: due.map((w) => ({ vm: w.vm, eventId: w.eventId, eventType: w.eventType, notBefore: new Date(w.from).toISOString() })),
    atOnce: new Set(peak?.windows.map((w) => w.vm) ?? []).size,
    ...(unhealthy.length > 0 ? { unhealthy: unhealthy.map((u) => u.vm) } : {}),
    state: word.kind,
  };
}
