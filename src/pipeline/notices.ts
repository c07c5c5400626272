/**
 * The CloudEvents the bridge derives from what it sees, beside the transitions IMDS shows:
 * `fleet.collision` (a fleet group's members due at once past its budget) and
 * `calendar.conflict` (a maintenance that falls where the calendar says it hurts). Each carries
 * this VM's own event as its data, with what was found beside it.
 */
import { createHash } from 'node:crypto';
import type { CalendarConflict } from '../calendar/conflict.ts';
import type { ScheduledEvent } from '../imds/wire.ts';
import { build, dataWith, type BridgeEvent, type MappingContext } from './cloudevent.ts';
import type { CollisionInfo } from './info.ts';

/**
 * collisionIdOf: the CloudEvent id of one word about a wave of colliding maintenance: a digest of
 * the wave's id and the EventIds the word says are due (sorted, each once). Every member that says
 * the same of the same wave says it under the same id, so copies deduplicate; a word about
 * another set of members due (more are seen, or some complete) is a new id.
 */
export function collisionIdOf(waveId: string, eventIds: readonly string[]): string {
  const due = [...new Set(eventIds)].sort();
  return `fleet.collision/${createHash('sha256')
    .update(JSON.stringify([waveId, due]))
    .digest('hex')
    .slice(0, 40)}`;
}

/**
 * toCollisionCloudEvent is `fleet.collision`: its id is collisionIdOf the wave and the members
 * due, and `data.collision.id` the wave's own id, the same in every word of one wave. Its data is
 * this member's own colliding event, with the collision beside it.
 */
export function toCollisionCloudEvent(
  own: ScheduledEvent,
  incarnation: number,
  collision: CollisionInfo,
  ctx: MappingContext,
): BridgeEvent {
  const id = collisionIdOf(
    collision.id,
    collision.due.map((d) => d.eventId),
  );
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
