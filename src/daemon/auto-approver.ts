/**
 * AutoApprover applies the approval policy to every Scheduled event not yet approved: it logs
 * each decision once, approves at once what the policy approves, and approves
 * `approveAfterHooks` events when every preparation hook (an exec sink with `prepare: true`)
 * that takes the event has succeeded. A failed automatic approval is tried again at most
 * every 30 s.
 */
import type { Logger } from 'pino';
import { decide, type Decision, type Rule } from '../approval/policy.ts';
import type { ApprovalService } from '../approval/service.ts';
import type { ScheduledEvent } from '../imds/wire.ts';
import { errorFields } from '../lib/errors.ts';
import type { DispatchTarget, OutcomeReport } from '../delivery/dispatcher.ts';
import { matchesFilter } from '../pipeline/filter.ts';
import { routingName } from '../imds/identity.ts';
import type { Store } from '../store/store.ts';
import type { BridgeView } from '../imds/view.ts';

const RETRY_MS = 30_000;

export interface AutoApproverOptions {
  readonly store: Store;
  readonly approvals: ApprovalService;
  readonly logger: Logger;
  readonly rules: readonly Rule[];
  readonly targets: readonly DispatchTarget[];
  /** The read model: this VM's name, and the latest document's events to decide again on when a hook succeeds. */
  readonly view: BridgeView;
  readonly signal: AbortSignal;
}

export class AutoApprover {
  readonly #o: AutoApproverOptions;
  /** Per event: the last decision logged, and when an automatic approval was last tried. */
  readonly #decided = new Map<string, { action: string; triedAt: number }>();

  constructor(options: AutoApproverOptions) {
    this.#o = options;
  }

  /** apply decides, for every Scheduled event not yet approved, whether to approve it now. */
  apply(events: readonly ScheduledEvent[]): void {
    const { store, logger, rules } = this.#o;
    const now = Date.now();
    // nothing is approved for a VM that does not know which events are its own; decided again when it knows
    if (!this.#o.view.vm.nameKnown) return;
    for (const e of events) {
      if (e.eventStatus !== 'Scheduled' || store.approval(e.eventId) !== null) continue;
      const d = decide(rules, e, this.#o.view.vm.name, now);
      const seen = this.#decided.get(e.eventId);
      if (seen === undefined || seen.action !== d.action) {
        logger.info({ eventId: e.eventId, action: d.action, rule: d.rule, reason: d.reason }, `approval policy: ${d.action}`);
      }
      const entry = seen && seen.action === d.action ? seen : { action: d.action, triedAt: 0 };
      this.#decided.set(e.eventId, entry);
      if (d.action === 'approve' || (d.action === 'approveAfterHooks' && this.#hooksDone(e))) {
        if (now - entry.triedAt < RETRY_MS) continue;
        entry.triedAt = now;
        const via = d.action === 'approve' ? 'policy' : 'hooks';
        this.#o.approvals.approve(e.eventId, { by: describeRule(d), via }, this.#o.signal).catch((err: unknown) => {
          logger.warn({ eventId: e.eventId, ...errorFields(err) }, 'automatic approval failed; it will be tried again');
        });
      }
    }
  }

  /**
   * delivered records a preparation hook's success (a Scheduled or updated event it took) for the
   * occurrence it prepared, and decides again. Only the current occurrence's successes count.
   */
  delivered(report: OutcomeReport): void {
    const target = this.#o.targets.find((t) => t.name === report.sink);
    if (target?.prepare !== true || report.outcome !== 'delivered') return;
    if (report.transition !== 'scheduled' && report.transition !== 'updated') return;
    if (!this.#o.store.hookSucceeded(report.eventId, report.sink, report.ceId)) {
      this.#o.logger.info(
        { eventId: report.eventId, sink: report.sink, ceId: report.ceId },
        'preparation hook succeeded for an occurrence that has ended; it does not count',
      );
      return;
    }
    this.#o.logger.info({ eventId: report.eventId, sink: report.sink, ceId: report.ceId }, 'preparation hook succeeded');
    this.apply((this.#o.view.document?.events ?? []).filter((x) => x.eventId === report.eventId));
  }

  /** hooksDone: every preparation hook that takes this event has succeeded. */
  #hooksDone(e: ScheduledEvent): boolean {
    const subject = { transition: 'scheduled', eventType: e.eventType, eventSource: e.eventSource, resources: e.resources };
    const required = this.#o.targets
      .filter((t) => t.prepare && matchesFilter(t.filter, subject, routingName(this.#o.view.vm)))
      .map((t) => t.name);
    const done = this.#o.store.hooksDone(e.eventId);
    return required.every((name) => done.has(name));
  }
}

function describeRule(d: Decision): string {
  return d.rule === null ? 'policy' : `policy ${d.reason}`;
}
