/**
 * route decides, for each CloudEvent, which sinks take it: those whose filter it passes. The
 * result is what the store journals with the event, one outbox row per sink named.
 */
import { transitionOf, type BridgeEvent } from '../pipeline/cloudevent.ts';
import { matchesFilter } from '../pipeline/filter.ts';
import type { PendingEvent } from '../store/store.ts';
import type { DispatchTarget } from './dispatcher.ts';

export function route(events: readonly BridgeEvent[], targets: readonly DispatchTarget[], vmName: string): PendingEvent[] {
  return events.map((e) => {
    const d = e.data!;
    const transition = transitionOf(e);
    const subject = { transition, eventType: d.eventType, eventSource: d.eventSource, resources: d.resources };
    return {
      id: e.id,
      eventId: d.eventId,
      transition,
      json: JSON.stringify(e),
      sinks: targets.filter((t) => matchesFilter(t.filter, subject, vmName)).map((t) => t.name),
    };
  });
}
