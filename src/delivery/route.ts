/**
 * route decides, for each CloudEvent, which sinks take it: those whose filter it passes. The
 * result is what the store journals with the event, one outbox row per sink named.
 *
 * A preparation (a sink with `prepare: true`) takes only what prepares, unless its filter names
 * transition types itself: `scheduled`, `updated`, and `started` for an event it never saw
 * before (a host failure skips Scheduled). A drain script must not drain the VM again when the
 * event is approved, starts or completes. A preparation that also gives the VM back (probe,
 * kubernetes: `undoes`) takes `completed` and `canceled` as well. An Advisory prepares nothing,
 * unless the preparation acts on advisories (a kubernetes sink with `advisory: cordon`).
 *
 * An end (canceled, completed) supersedes the preparations' rows of the occurrence it ends that
 * are still pending: they are not tried again (store/journal.ts).
 */
import { transitionOf, type BridgeEvent } from '../pipeline/cloudevent.ts';
import { matchesFilter, type FilterConfig } from '../pipeline/filter.ts';
import type { PendingEvent } from '../store/store.ts';
import { prepares } from '../registry/sinks.ts';
import type { DispatchTarget } from './dispatcher.ts';

/**
 * preparationTakes: whether a preparation with this filter takes the transition. An event whose
 * status announces no maintenance (an Advisory such as SpotRebalanceRecommendation, or a status
 * this version does not know) prepares nothing: it is delivered to the other sinks, never acted on.
 */
export function preparationTakes(
  filter: FilterConfig,
  transition: string,
  seenBefore: () => boolean,
  undoes = false,
  status = 'Scheduled',
  advisories = false,
): boolean {
  if (undoes && (transition === 'completed' || transition === 'canceled')) return true;
  if (status !== 'Scheduled' && status !== 'Started') return advisories && status === 'Advisory' && transition === 'scheduled';
  if (filter.types !== undefined) return true;
  return transition === 'scheduled' || transition === 'updated' || (transition === 'started' && !seenBefore());
}

/** `seenBefore` tells whether any CloudEvent of an EventId was committed before. */
export function route(
  events: readonly BridgeEvent[],
  targets: readonly DispatchTarget[],
  vmName: string | null,
  seenBefore: (eventId: string) => boolean = () => false,
): PendingEvent[] {
  return events.map((e) => {
    const d = e.data;
    const transition = transitionOf(e);
    const subject = { transition, eventType: d.eventType, eventSource: d.eventSource, resources: d.resources, eventId: d.eventId };
    const takes = (t: DispatchTarget) =>
      matchesFilter(t.filter, subject, vmName) &&
      (!prepares(t) || preparationTakes(t.filter, transition, () => seenBefore(d.eventId), t.undoes, d.eventStatus, t.advisories));
    const ends = transition === 'canceled' || transition === 'completed';
    return {
      id: e.id,
      eventId: d.eventId,
      transition,
      json: JSON.stringify(e),
      sinks: targets.filter(takes).map((t) => t.name),
      // an end stops what the preparations still have pending of the occurrence it ends
      ...(ends ? { supersedes: targets.filter(prepares).map((t) => t.name) } : {}),
    };
  });
}
