/**
 * Deferrals: the preparations of an event that a rule bound to the windows (`within: windows`)
 * approves wait for the window, so a node is not drained, nor a VM taken out of its load
 * balancer, hours before the maintenance may start. A routing hook (daemon/feature.ts `route`)
 * gives the preparation sinks' rows of its `scheduled` or `updated` CloudEvent a later due time;
 * they go when the calendar allows (checked at every IMDS read), when the event is approved by
 * anyone or Started (store/journal.ts), or at the due time at the latest. With no window before
 * NotBefore, nothing waits: Azure acts at NotBefore, and the VM is prepared for it now.
 */
import type { Logger } from 'pino';
import { decide, type Rule } from '../../approval/policy.ts';
import { isDrill } from '../../imds/drill-id.ts';
import type { BridgeView } from '../../imds/view.ts';
import type { ScheduledEvent } from '../../imds/wire.ts';
import { fromJson } from '../../pipeline/cloudevent.ts';
import type { PendingEvent } from '../../store/store.ts';
import type { Calendar } from '../calendar.ts';

export interface DeferralDeps {
  readonly calendar: Calendar;
  readonly rules: readonly Rule[];
  readonly view: BridgeView;
  /** The sinks that prepare the VM. */
  readonly preparing: ReadonlySet<string>;
  /** Makes an event's deferred rows due now; how many. */
  readonly release: (eventId: string) => number;
  readonly logger: Logger;
  /** The calendar's clock. */
  readonly now: () => number;
}

export class Deferrals {
  readonly #d: DeferralDeps;
  /** Per EventId: when its window opens, on the calendar's clock. */
  readonly #waiting = new Map<string, number>();

  constructor(deps: DeferralDeps) {
    this.#d = deps;
  }

  /** route: the routing hook. */
  readonly route = (routed: PendingEvent): PendingEvent => {
    const d = this.#d;
    if ((routed.transition !== 'scheduled' && routed.transition !== 'updated') || isDrill(routed.eventId) || !d.view.vm.nameKnown)
      return routed;
    const sinks = routed.sinks.filter((s) => d.preparing.has(s));
    if (sinks.length === 0) return routed;
    const e: ScheduledEvent = fromJson(routed.json).data;
    if (e.eventStatus !== 'Scheduled' || e.notBefore === null) return routed;
    const t = d.now();
    const decision = decide(d.rules, e, d.view.vm.name, t);
    const bound = (decision.action === 'approve' || decision.action === 'approveAfterHooks') && decision.rule !== null;
    if (!bound || d.rules[decision.rule]!.within !== 'windows' || d.calendar.allows(t, 'windows')) return routed;
    const opens = d.calendar.nextAllowed(t, 'windows', Date.parse(e.notBefore));
    if (opens === null) return routed;
    this.#waiting.set(routed.eventId, opens);
    d.logger.info(
      { eventId: routed.eventId, sinks, opens: new Date(opens).toISOString() },
      `calendar: the preparations of ${routed.eventId} wait for the maintenance window, at ${new Date(opens).toISOString()}`,
    );
    // the latest it waits, on this process's clock: the window's opening
    return { ...routed, deferred: { sinks, until: Date.now() + (opens - t) } };
  };

  /** check: the deferred preparations whose window has opened go now (at every IMDS read); those of events no longer listed are forgotten. */
  check(listed: ReadonlySet<string>): void {
    const t = this.#d.now();
    for (const [eventId, opens] of this.#waiting) {
      if (!listed.has(eventId)) this.#waiting.delete(eventId);
      else if (t >= opens) {
        this.#waiting.delete(eventId);
        const n = this.#d.release(eventId);
        this.#d.logger.info({ eventId, rows: n }, `calendar: the maintenance window is open; the preparations of ${eventId} go now`);
      }
    }
  }
}
