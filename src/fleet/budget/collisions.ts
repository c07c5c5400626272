/**
 * foretellCollision turns the fleet group's member records (read at each heartbeat) into one
 * `fleet.collision` CloudEvent when more members are due for maintenance at once than the group
 * allows, and this VM is one of them: committed once per set of EventIds (the same id on every
 * member, so a consumer that deduplicates sees one), routed like any other change.
 */
import type { Logger } from 'pino';
import type { BridgeView } from '../../imds/view.ts';
import { collisionOf, windowsOf, type MemberRecord } from './records.ts';
import { toCollisionCloudEvent, type BridgeEvent } from '../../pipeline/cloudevent.ts';
import type { Journal, PendingEvent } from '../../store/store.ts';

export interface CollisionDeps {
  readonly group: string;
  readonly maxUnavailable: number;
  readonly view: BridgeView;
  readonly journal: Journal;
  readonly logger: Logger;
  readonly route: (event: BridgeEvent) => PendingEvent;
  /** Called after the collision was committed. */
  readonly committed: (event: BridgeEvent) => void;
}

/** foretellCollision returns the CloudEvent it committed, or null. */
export function foretellCollision(members: readonly MemberRecord[], d: CollisionDeps): BridgeEvent | null {
  const c = collisionOf(windowsOf(members), d.maxUnavailable);
  const document = d.view.document;
  if (c === null || document === null || !d.view.vm.nameKnown) return null;
  const me = d.view.vm.name.toLowerCase();
  const mine = c.windows.find((w) => w.vm.toLowerCase() === me);
  const own = mine === undefined ? undefined : document.events.find((e) => e.eventId === mine.eventId);
  if (own === undefined) return null;
  const due = c.windows.map((w) => ({ vm: w.vm, eventId: w.eventId, eventType: w.eventType, notBefore: new Date(w.from).toISOString() }));
  const collision = {
    group: d.group,
    maxUnavailable: d.maxUnavailable,
    members: members.length,
    from: new Date(c.from).toISOString(),
    to: new Date(c.to).toISOString(),
    due,
  };
  const ce = toCollisionCloudEvent(own, document.incarnation, collision, { vm: d.view.vm, observedAt: new Date().toISOString() });
  if (d.journal.knowsCloudEvent(ce.id)) return null;
  d.journal.appendEvents([d.route(ce)]);
  d.logger.warn(
    { code: 'FLEET_COLLISION', group: d.group, ceId: ce.id, due, from: collision.from, to: collision.to },
    `fleet budget: ${due.length} members of ${d.group} are due for maintenance at once; the group allows ${d.maxUnavailable}`,
  );
  d.committed(ce);
  return ce;
}
