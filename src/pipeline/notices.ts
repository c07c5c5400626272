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
 * toCollisionCloudEvent is `fleet.collision`: its id is the wave's (`fleet.collision/<wave id>`),
 * so every member's first word of one wave is the same event to a consumer that deduplicates; a
 * later word of the same wave, as members are seen or complete, is
 * `fleet.collision/<wave id>/<members due>`. Its data is this member's own colliding event, with
 * the collision beside it.
 */
export function toCollisionCloudEvent(
  own: ScheduledEvent,
  incarnation: number,
  collision: CollisionInfo,
  ctx: MappingContext,
  update = false,
): BridgeEvent {
  const id = `fleet.collision/${collision.id}${update ? `/${collision.due.length}` : ''}`;
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
