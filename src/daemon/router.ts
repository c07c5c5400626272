/**
 * Router: which sinks take each CloudEvent (delivery/route.ts, by the VM's name), then each
 * feature's say (a drill's go only to the sinks it names). While this VM does not know its name,
 * `self` and `leader` sinks take every event (fail closed).
 */
import type { Logger } from 'pino';
import type { DispatchTarget } from '../delivery/dispatcher.ts';
import { route } from '../delivery/route.ts';
import { routingName } from '../imds/identity.ts';
import type { BridgeState } from '../imds/view.ts';
import { fromJson, type BridgeEvent } from '../pipeline/cloudevent.ts';
import type { Journal, PendingEvent } from '../store/store.ts';

export interface RouterOptions {
  readonly targets: readonly DispatchTarget[];
  readonly state: BridgeState;
  readonly journal: Journal;
  readonly logger: Logger;
  /** The features' routing rules, applied in order. */
  readonly hooks: readonly ((routed: PendingEvent) => PendingEvent)[];
  /** Says that routes were added (the dispatcher takes them). */
  readonly notify: () => void;
}

export class Router {
  readonly #o: RouterOptions;

  constructor(options: RouterOptions) {
    this.#o = options;
  }

  /** route: each CloudEvent with the sinks that take it. */
  readonly route = (events: readonly BridgeEvent[]): PendingEvent[] => {
    const { targets, state, journal, hooks } = this.#o;
    return route(events, targets, routingName(state.vm), (eventId) => journal.knowsEvent(eventId)).map((p) =>
      hooks.reduce((routed, hook) => hook(routed), p),
    );
  };

  /** one: a single CloudEvent with the sinks that take it. */
  readonly one = (event: BridgeEvent): PendingEvent => {
    const [routed] = this.route([event]);
    if (routed === undefined) throw new Error('route returned no event');
    return routed;
  };

  /**
   * again routes the events still listed again with the name the VM has now: a sink their first
   * routing left out (under a name not yet known, or another one before a restart) gets them now,
   * and none gets a CloudEvent it was routed before. It says how many it added (`from`: the name
   * routed by before).
   */
  again(from: string): number {
    const { state, journal, logger } = this.#o;
    const document = state.document;
    if (document === null || !state.vm.nameKnown) return 0;
    const routes: { ceId: string; eventId: string; sinks: string[] }[] = [];
    for (const e of document.events) {
      for (const ce of journal.ongoing(e.eventId)) {
        if (ce.routed === null) continue;
        const routed = ce.routed;
        const sinks = this.one(fromJson(ce.json)).sinks.filter((s) => !routed.has(s));
        if (sinks.length > 0) routes.push({ ceId: ce.id, eventId: ce.eventId, sinks });
      }
    }
    if (routes.length === 0) return 0;
    journal.addRoutes(routes);
    this.#o.notify();
    logger.info(
      { from, to: state.vm.name, routes },
      'routed the listed events again by the VM name: they went to the sinks they now match',
    );
    return routes.length;
  }
}
