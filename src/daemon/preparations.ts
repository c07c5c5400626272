/**
 * preparationStates: where each preparation of an event stands, for `status`, `/readyz` and the
 * chat messages. A preparation whose filter takes the event and that has reported nothing yet
 * is `pending`.
 */
import type { SinkConfig } from '../config/schema.ts';
import { affects, routingName } from '../imds/identity.ts';
import type { BridgeView } from '../imds/view.ts';
import type { ScheduledEvent } from '../imds/wire.ts';
import { matchesFilter } from '../pipeline/filter.ts';
import type { PreparationState } from '../sinks/contract.ts';
import { preparesTheVm } from '../sinks/registry.ts';
import type { PreparationRecord, Store } from '../store/store.ts';

const toState = (r: PreparationRecord): PreparationState => ({
  sink: r.sink,
  state: r.state,
  detail: r.detail,
  at: new Date(r.at).toISOString(),
});

/** recorded: what the preparations reported for an event (pending ones that never reported are left out). */
export function recorded(store: Store, eventId: string): PreparationState[] {
  return store.preparations(eventId).map(toState);
}

/** preparationStates: every preparation that takes this event, with its state. */
export function preparationStates(
  store: Store,
  sinks: readonly SinkConfig[],
  event: Pick<ScheduledEvent, 'eventId' | 'eventType' | 'eventSource' | 'resources'>,
  vmName: string | null,
): PreparationState[] {
  const records = new Map(store.preparations(event.eventId).map((r) => [r.sink, r]));
  const subject = { transition: 'scheduled', eventType: event.eventType, eventSource: event.eventSource, resources: event.resources };
  return sinks
    .filter((s) => preparesTheVm(s) && (records.has(s.name) || matchesFilter(s.filter, subject, vmName)))
    .map((s) => {
      const r = records.get(s.name);
      return r === undefined ? { sink: s.name, state: 'pending', detail: null, at: null } : toState(r);
    });
}

/** preparationsOfPending: each pending event of this VM with its preparations (for /readyz). */
export function preparationsOfPending(store: Store, sinks: readonly SinkConfig[], view: BridgeView) {
  const vmName = routingName(view.vm);
  return (view.document?.events ?? [])
    .filter((e) => vmName === null || affects(e.resources, vmName))
    .map((e) => ({
      eventId: e.eventId,
      eventType: e.eventType,
      eventStatus: e.eventStatus,
      preparations: preparationStates(store, sinks, e, vmName),
    }))
    .filter((x) => x.preparations.length > 0);
}
