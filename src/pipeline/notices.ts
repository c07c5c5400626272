/**
 * The CloudEvents the bridge derives from what it sees, beside the transitions IMDS shows:
 * `fleet.collision` (a fleet group's members due at once past its budget), `fleet.paused` (a
 * fleet group paused, no early approval in it but a forced one, or resumed) and
 * `calendar.conflict` (a maintenance that falls where the calendar says it hurts). Each carries
 * this VM's own event as its data, with what was found beside it.
 */
import { createHash } from 'node:crypto';
import type { CalendarConflict } from '../calendar/conflict.ts';
import type { ScheduledEvent } from '../imds/wire.ts';
import { build, dataWith, type BridgeEvent, type MappingContext } from './cloudevent.ts';
import type { CollisionInfo, PauseInfo } from './info.ts';

/**
 * collisionIdOf: the CloudEvent id of one word about a wave of colliding maintenance: a digest of
 * the wave's id and the EventIds the word says are due (sorted, each once), and of the word that
 * the wave is within the budget now (a word of its own). The wave's speaker makes it; every other
 * member due repeats the speaker's word under its id, so copies deduplicate.
 */
export function collisionIdOf(waveId: string, eventIds: readonly string[], resolved = false): string {
  const due = [...new Set(eventIds)].sort();
  return `fleet.collision/${createHash('sha256')
    .update(JSON.stringify(resolved ? [waveId, due, 'resolved'] : [waveId, due]))
    .digest('hex')
    .slice(0, 40)}`;
}

/**
 * toCollisionCloudEvent is `fleet.collision` under the id of the word it carries (collisionIdOf,
 * as the wave's speaker made it), with `data.collision.id` the wave's own id, the same in every
 * word of one wave. Its data is this member's own colliding event, with the collision beside it.
 */
export function toCollisionCloudEvent(
  id: string,
  own: ScheduledEvent,
  incarnation: number,
  collision: CollisionInfo,
  ctx: MappingContext,
): BridgeEvent {
  return build(id, 'fleet.collision', dataWith(own, incarnation, ctx, { collision }), incarnation, ctx);
}

/**
 * toConflictCloudEvent is `calendar.conflict`: its id is `<EventId>/calendar.conflict/<digest>`
 * of the maintenance time and what it meets, the same on every VM that sees the same event with
 * the same calendar, and new when NotBefore or the duration changes.
 */
export function toConflictCloudEvent(
  own: ScheduledEvent,
  incarnation: number,
  conflict: CalendarConflict,
  ctx: MappingContext,
): BridgeEvent {
  const digest = createHash('sha256')
    .update(`${conflict.from}\n${conflict.to}\n${conflict.kind}\n${conflict.blackout ?? ''}`)
    .digest('hex')
    .slice(0, 12);
  return build(
    `${own.eventId}/calendar.conflict/${digest}`,
    'calendar.conflict',
    dataWith(own, incarnation, ctx, { calendar: conflict }),
    incarnation,
    ctx,
  );
}

/**
 * toPauseCloudEvent is `fleet.paused`: its id is `fleet.paused/<digest>` of the group, when the
 * pause began and whether it is said paused or resumed, the same on every member that says it, so
 * a consumer deduplicates the group's copies. Its data is this member's own maintenance the pause
 * holds, with the pause beside it.
 */
export function toPauseCloudEvent(own: ScheduledEvent, incarnation: number, pause: PauseInfo, ctx: MappingContext): BridgeEvent {
  const digest = createHash('sha256')
    .update(JSON.stringify([pause.group, pause.since, pause.by, pause.state]))
    .digest('hex')
    .slice(0, 40);
  return build(`fleet.paused/${digest}`, 'fleet.paused', dataWith(own, incarnation, ctx, { pause }), incarnation, ctx);
}
