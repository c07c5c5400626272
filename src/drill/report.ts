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

/** The report of a drill (`se-bridge drill --json`); times are ms after the drill started. */
export interface DrillReport {
  readonly drill: DrillState & { readonly eventType: string };
  readonly passed: boolean;
  /** Why it did not pass, in words. */
  readonly problems: readonly string[];
  /**
   * Per sink: whether it delivered every CloudEvent of the drill, when the last, the attempts of
   * its delivery that took the most (1: each went through at the first), its last error.
   */
  readonly sinks: readonly {
    readonly name: string;
    readonly delivered: boolean;
    readonly atMs: number | null;
    readonly attempts: number;
    readonly error: string | null;
  }[];
  /** Per preparation: rehearsed or real, done, given back, and what it said. */
  readonly preparations: readonly {
    readonly sink: string;
    readonly mode: 'rehearse' | 'real';
    readonly done: boolean;
    readonly givenBack: boolean;
    readonly detail: string | null;
  }[];
  readonly approval: { readonly by: string; readonly via: string; readonly atMs: number } | null;
  /** Every step in order: the CloudEvents, each delivery, the approval, the end. */
  readonly timeline: readonly { readonly atMs: number; readonly step: string; readonly detail: string }[];
  /** Each CloudEvent and what each sink did with it. */
  readonly events: readonly {
    readonly transition: string;
    readonly ceId: string;
    readonly atMs: number;
    readonly sinks: readonly ({ readonly sink: string; readonly atMs: number | null } & Omit<Delivery, 'at'>)[];
  }[];
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
    // routed again (the VM's name learned late): the sinks it gains join the same CloudEvent
    const known = this.#events.find((e) => e.ceId === ceId);
    if (known !== undefined) {
      for (const s of sinks) if (!known.sinks.has(s)) known.sinks.set(s, pending());
      return;
    }
    this.#events.push({ ceId, transition, at: Date.now(), sinks: new Map(sinks.map((s) => [s, pending()])) });
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
    const logged = drill.eventId === this.#eventId ? this.#events : [];
    const events = logged.map((e) => ({
      transition: e.transition,
      ceId: e.ceId,
      atMs: e.at - from,
      sinks: [...e.sinks].map(([sink, d]) => {
        if (d.outcome !== 'delivered')
          problems.push(`${sink}: ${e.transition} ${d.outcome}${d.lastError === null ? '' : ` (${d.lastError})`}`);
        const { at, ...rest } = d;
        return { sink, atMs: at === null ? null : at - from, ...rest };
      }),
    }));
    for (const p of preparations) if (p.state === 'failed') problems.push(`preparation ${p.sink} failed: ${p.detail ?? ''}`);
    const approval = this.#approval === null ? null : { by: this.#approval.by, via: this.#approval.via, atMs: this.#approval.at - from };
    return {
      drill: { ...drill, eventType: drill.request.type },
      passed: problems.length === 0,
      problems,
      sinks: sinksOf(events),
      preparations: preparations.map((p) => ({
        sink: p.sink,
        mode: drill.request.prepare,
        done: p.state === 'done' || p.state === 'undone',
        givenBack: p.state === 'undone',
        detail: p.detail,
      })),
      approval,
      timeline: timelineOf(drill, events, approval),
      events,
    };
  }
}

type Events = DrillReport['events'];

function sinksOf(events: Events): DrillReport['sinks'] {
  const names = [...new Set(events.flatMap((e) => e.sinks.map((x) => x.sink)))];
  return names.map((name) => {
    const mine = events.flatMap((e) => e.sinks.filter((x) => x.sink === name));
    const times = mine.map((x) => x.atMs).filter((t): t is number => t !== null);
    const errors = mine.map((x) => x.lastError).filter((x): x is string => x !== null);
    return {
      name,
      delivered: mine.every((x) => x.outcome === 'delivered'),
      atMs: times.length === 0 ? null : Math.max(...times),
      // per delivery, as the name says everywhere else: the most one of them took, not their sum
      attempts: Math.max(0, ...mine.map((x) => x.attempts)),
      error: errors.at(-1) ?? null,
    };
  });
}

function timelineOf(drill: DrillState, events: Events, approval: DrillReport['approval']): DrillReport['timeline'] {
  const r = drill.request;
  const steps = [
    {
      atMs: 0,
      step: 'drill',
      detail: `${r.type} for ${drill.vmName}, NotBefore in ${r.noticeMs / 1000} s, preparations ${r.prepare === 'real' ? 'for real' : 'rehearsed'}`,
    },
    ...events.flatMap((e) => [
      { atMs: e.atMs, step: e.transition, detail: `${e.ceId} to ${e.sinks.map((x) => x.sink).join(', ') || 'no sink'}` },
      ...e.sinks.map((x) => ({
        atMs: x.atMs ?? e.atMs,
        step: x.outcome,
        detail: `${e.transition} to ${x.sink} (${x.attempts} attempt${x.attempts === 1 ? '' : 's'})${x.detail === null ? '' : `: ${x.detail}`}${x.lastError === null || x.outcome === 'delivered' ? '' : `: ${x.lastError}`}`,
      })),
    ]),
    ...(approval === null
      ? []
      : [{ atMs: approval.atMs, step: 'approved', detail: `by ${approval.by} via ${approval.via}; StartRequests not posted` }]),
    ...(drill.endedAt === null ? [] : [{ atMs: drill.endedAt - drill.createdAt, step: 'ended', detail: drill.ended ?? '' }]),
  ];
  return steps.sort((a, b) => a.atMs - b.atMs);
}
