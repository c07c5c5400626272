/**
 * AutoApprover applies the approval policy to every Scheduled event not yet approved: it logs
 * each decision once, approves at once what the policy approves, and approves
 * `approveAfterHooks` events when every preparation hook (an exec sink with `prepare: true`)
 * that takes the event has succeeded. A failed automatic approval is tried again at most
 * every 30 s.
 */
import type { Logger } from 'pino';
import { decide, type Decision, type Rule } from '../approval/policy.ts';
import type { Calendar, Within } from '../calendar/calendar.ts';
import { ApprovalError, type ApprovalService } from '../approval/service.ts';
import type { ScheduledEvent } from '../imds/wire.ts';
import { errorFields } from '../lib/errors.ts';
import { routingName } from '../imds/identity.ts';
import type { Approvals } from '../store/store.ts';
import type { BridgeView } from '../imds/view.ts';
import type { Preparations } from './preparations.ts';
import type { HoldReason } from '../observability/fleet-metrics.ts';

const RETRY_MS = 30_000;

export interface AutoApproverOptions {
  /** Who approved what. */
  readonly records: Approvals;
  readonly approvals: ApprovalService;
  readonly logger: Logger;
  readonly rules: readonly Rule[];
  /** Whether an event's preparation hooks have all succeeded. */
  readonly preparations: Preparations;
  /** The read model: this VM's name, and the latest document's events to decide again on when a hook succeeds. */
  readonly view: BridgeView;
  readonly signal: AbortSignal;
  /** How soon an approval the fleet budget held is asked again (fleet.retryMs); default 30 s like any failure. */
  readonly heldRetryMs?: number;
  /** The calendar: a rule bound to its windows waits for one (asked again at every read, so it is approved once one opens). */
  readonly calendar?: Calendar;
  /** The clock (tests set it). */
  readonly now?: () => number;
  /** Told of an approval the calendar holds (asked at every read while it does), for the fleet's metrics. */
  readonly onHeld?: (eventId: string, reason: HoldReason) => void;
}

export class AutoApprover {
  readonly #o: AutoApproverOptions;
  /** Per event: the last decision logged, and when an automatic approval was last tried. */
  readonly #decided = new Map<
    string,
    { action: string; triedAt: number; held?: string; waiting?: string; asking?: boolean; again?: boolean }
  >();

  constructor(options: AutoApproverOptions) {
    this.#o = options;
  }

  /** apply decides, for every Scheduled event not yet approved, whether to approve it now. */
  apply(events: readonly ScheduledEvent[]): void {
    const { records, logger, rules } = this.#o;
    const now = (this.#o.now ?? Date.now)();
    // nothing is approved for a VM that does not know which events are its own; decided again when it knows
    if (!this.#o.view.vm.nameKnown) return;
    for (const e of events) {
      if (e.eventStatus !== 'Scheduled' || records.of(e.eventId) !== null) continue;
      const d = decide(rules, e, this.#o.view.vm.name, now);
      const seen = this.#decided.get(e.eventId);
      if (seen === undefined || seen.action !== d.action) {
        logger.info({ eventId: e.eventId, action: d.action, rule: d.rule, reason: d.reason }, `approval policy: ${d.action}`);
      }
      const entry = seen && seen.action === d.action ? seen : { action: d.action, triedAt: 0 };
      this.#decided.set(e.eventId, entry);
      if (d.action === 'approve' || (d.action === 'approveAfterHooks' && this.#o.preparations.ready(e, routingName(this.#o.view.vm)))) {
        const within = d.rule === null ? 'any' : rules[d.rule]!.within;
        if (this.#waits(e, entry, within, now)) continue;
        if (now - entry.triedAt < RETRY_MS) continue;
        [entry.triedAt, entry.asking] = [now, true];
        const via = d.action === 'approve' ? 'policy' : 'hooks';
        const asked = this.#o.approvals.approve(e.eventId, { by: describeRule(d), via, within }, this.#o.signal);
        void asked.finally(() => (entry.asking = false)).catch(() => undefined);
        asked.catch((err: unknown) => {
          if (err instanceof ApprovalError && err.held) {
            // held by the fleet budget: asked again soon (at the head of the group's queue, at the next
            // read), so it is granted as a slot frees; said once
            entry.triedAt = Date.now() - RETRY_MS + (err.againMs ?? this.#o.heldRetryMs ?? RETRY_MS);
            if (entry.held !== err.message)
              logger.info({ eventId: e.eventId, code: err.code, holders: err.holders }, `approval held: ${err.message}`);
            entry.held = err.message;
            // woken while it was under way (it may have read the slots before one was given back): asked again now
            if (entry.again === true) {
              [entry.again, entry.triedAt] = [false, 0];
              this.apply((this.#o.view.document?.events ?? []).filter((x) => x.eventId === e.eventId));
            }
            return;
          }
          [entry.held, entry.again] = [undefined, false];
          logger.warn({ eventId: e.eventId, ...errorFields(err) }, 'automatic approval failed; it will be tried again');
        });
      }
    }
  }

  /** waits: whether the calendar holds this rule's approval now (said once per reason); it is asked again at the next read. */
  #waits(e: ScheduledEvent, entry: { waiting?: string }, within: Within, now: number): boolean {
    const calendar = this.#o.calendar;
    if (calendar === undefined || calendar.allows(now, within)) {
      entry.waiting = undefined;
      return false;
    }
    this.#o.onHeld?.(e.eventId, 'calendar');
    const state = calendar.stateAt(now);
    const why = state.blackout !== null ? `inside the blackout ${state.blackout}` : 'outside the maintenance windows';
    // said once per reason: when it is allowed again is walked out only then, not at every read
    if (entry.waiting !== why) {
      const opens = calendar.nextAllowed(now, within, e.notBefore === null ? undefined : Date.parse(e.notBefore));
      const when = opens === null ? 'none opens before NotBefore' : `allowed from ${new Date(opens).toISOString()}`;
      this.#o.logger.info(
        { eventId: e.eventId, within, opens: opens && new Date(opens).toISOString() },
        `approval policy: waiting for the calendar: ${why}; ${when}`,
      );
    }
    entry.waiting = why;
    return true;
  }

  /**
   * askAgain asks again now for every approval the fleet budget held (none under way): a slot was
   * given back while this member waits at the head of its group's queue, so it need not wait for
   * the next IMDS read.
   */
  askAgain(): void {
    for (const entry of this.#decided.values()) {
      if (entry.held === undefined) continue;
      // one under way is asked again when it ends held
      if (entry.asking === true) entry.again = true;
      else entry.triedAt = 0;
    }
    this.apply(this.#o.view.document?.events ?? []);
  }

  /** decideAgain decides again on one event of the latest document (a preparation hook of it succeeded). */
  decideAgain(eventId: string): void {
    this.apply((this.#o.view.document?.events ?? []).filter((x) => x.eventId === eventId));
  }
}

function describeRule(d: Decision): string {
  return d.rule === null ? 'policy' : `policy ${d.reason}`;
}
