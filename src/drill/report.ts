/**
 * DrillLog keeps what happened to the drill being played, for its report: each CloudEvent and
 * the sinks it was routed to, each delivery's outcome (when, how many attempts, the last error),
 * the approval and by which path. The report says whether every step passed.
 */
import type { DrillState } from './drills.ts';

interface Delivery {
  outcome: 'pending' | 'delivered' | 'retrying' | 'dead-letter';
  attempts: number;
  at: number | null;
  lastError: string | null;
  detail: string | null;
}

interface Logged {
  readonly ceId: string;
  readonly transition: string;
  readonly at: number;
  readonly sinks: Map<string, Delivery>;
}

export interface DrillApproval {
  readonly by: string;
  readonly via: string;
  readonly at: number;
}

export interface DrillPreparation {
  readonly sink: string;
  readonly state: string;
  readonly detail: string | null;
}

export interface DrillReport {
  readonly drill: DrillState;
  readonly passed: boolean;
  /** Why it did not pass, in words. */
  readonly problems: readonly string[];
  readonly approval: (DrillApproval & { readonly afterMs: number }) | null;
  readonly events: readonly {
    readonly transition: string;
    readonly ceId: string;
    readonly afterMs: number;
    readonly sinks: readonly ({ readonly sink: string; readonly afterMs: number | null } & Omit<Delivery, 'at'>)[];
  }[];
  readonly preparations: readonly DrillPreparation[];
}

export class DrillLog {
  #eventId: string | null = null;
  #events: Logged[] = [];
  #approval: DrillApproval | null = null;

  /** begin forgets the last drill's log: `eventId` is the one logged from now on. */
  begin(eventId: string): void {
    this.#eventId = eventId;
    this.#events = [];
    this.#approval = null;
  }

  routed(eventId: string, ceId: string, transition: string, sinks: readonly string[]): void {
    if (eventId !== this.#eventId) return;
    const pending = (): Delivery => ({ outcome: 'pending', attempts: 0, at: null, lastError: null, detail: null });
    const deliveries = new Map(sinks.map((s) => [s, pending()]));
    this.#events.push({ ceId, transition, at: Date.now(), sinks: deliveries });
  }

  outcome(r: { eventId: string; ceId: string; sink: string; outcome: string; attempts: number; reason?: string; detail?: string }): void {
    if (r.eventId !== this.#eventId) return;
    const d = this.#events.find((e) => e.ceId === r.ceId)?.sinks.get(r.sink);
    if (d === undefined) return;
    d.outcome = r.outcome === 'delivered' ? 'delivered' : r.outcome === 'dead-letter' ? 'dead-letter' : 'retrying';
    d.attempts = r.attempts;
    d.at = Date.now();
    if (r.reason !== undefined) d.lastError = r.reason;
    if (r.detail !== undefined) d.detail = r.detail;
  }

  approved(eventId: string, approval: DrillApproval): void {
    if (eventId === this.#eventId) this.#approval = approval;
  }

  report(drill: DrillState, preparations: readonly DrillPreparation[]): DrillReport {
    const from = drill.createdAt;
    const problems: string[] = [];
    if (drill.ended === null) problems.push('the drill has not ended');
    else if (drill.ended === 'ended by a real event') problems.push('a real event ended the drill');
    const events = (drill.eventId === this.#eventId ? this.#events : []).map((e) => ({
      transition: e.transition,
      ceId: e.ceId,
      afterMs: e.at - from,
      sinks: [...e.sinks].map(([sink, d]) => {
        if (d.outcome !== 'delivered')
          problems.push(`${sink}: ${e.transition} ${d.outcome}${d.lastError === null ? '' : ` (${d.lastError})`}`);
        const { at, ...rest } = d;
        return { sink, afterMs: at === null ? null : at - from, ...rest };
      }),
    }));
    for (const p of preparations) if (p.state === 'failed') problems.push(`preparation ${p.sink} failed: ${p.detail ?? ''}`);
    const approval = this.#approval === null ? null : { ...this.#approval, afterMs: this.#approval.at - from };
    return { drill, passed: problems.length === 0, problems, approval, events, preparations };
  }
}
