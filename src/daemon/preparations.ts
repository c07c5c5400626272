/**
 * Preparations owns what the daemon knows of preparing the VM: it records each preparation's
 * outcome (pending, done, failed, undone, and which occurrence a success answered), decides that
 * an event is ready for `approveAfterHooks` (every preparation hook that takes it succeeded for
 * its current occurrence), and gives the states `status`, `/readyz` and the chat messages show.
 * What prepares is one rule (registry `prepares`); `prepare` alone gates approval.
 */
import type { Logger } from 'pino';
import { affects, routingName } from '../imds/identity.ts';
import type { BridgeView } from '../imds/view.ts';
import type { ScheduledEvent } from '../imds/wire.ts';
import { errorFields } from '../lib/errors.ts';
import type { Metrics } from '../observability/metrics.ts';
import { matchesFilter, type FilterConfig } from '../pipeline/filter.ts';
import { prepares, roleOf, type PreparationRole } from '../registry/sinks.ts';
import type { PreparationState, SinkConfigBase } from '../sinks/contract.ts';
import type { PreparationRecord, PreparationTable } from '../store/store.ts';

/** A sink as preparation sees it: its name, its filter, its part. */
export interface Preparer extends PreparationRole {
  readonly name: string;
  readonly filter: FilterConfig;
}

/** What a preparation's delivery came to (the dispatcher's outcome report, in part). */
export interface PreparationOutcome {
  readonly sink: string;
  readonly eventId: string;
  readonly ceId: string;
  readonly transition: string;
  readonly outcome: 'delivered' | 'retry' | 'dead-letter';
  readonly detail?: string;
  readonly reason?: string;
  readonly createdAt: number;
}

type Subject = Pick<ScheduledEvent, 'eventId' | 'eventType' | 'eventSource' | 'resources'>;

const toState = (r: PreparationRecord): PreparationState => ({
  sink: r.sink,
  state: r.state,
  detail: r.detail,
  at: new Date(r.at).toISOString(),
});

/** preparersOf: the configured sinks that prepare the VM. */
export const preparersOf = (sinks: readonly SinkConfigBase[]): Preparer[] =>
  sinks.map((s) => ({ name: s.name, filter: s.filter, ...roleOf(s) })).filter(prepares);

export class Preparations {
  readonly #table: PreparationTable;
  readonly #preparers: readonly Preparer[];
  readonly #metrics: Metrics | null;
  readonly #logger: Logger | null;

  constructor(table: PreparationTable, sinks: readonly Preparer[], o: { metrics?: Metrics; logger?: Logger } = {}) {
    this.#table = table;
    this.#preparers = sinks.filter(prepares);
    this.#metrics = o.metrics ?? null;
    this.#logger = o.logger ?? null;
  }

  /** Some configured sink prepares the VM. */
  get any(): boolean {
    return this.#preparers.length > 0;
  }

  /**
   * record keeps where a preparation stands after one delivery, and counts it. It says whether a
   * preparation hook's success now counts toward approving the event (then decide again).
   */
  record(r: PreparationOutcome): boolean {
    const who = this.#preparers.find((p) => p.name === r.sink);
    if (who === undefined || r.transition === 'approved') return false;
    const undo = r.transition === 'completed' || r.transition === 'canceled';
    try {
      return this.#record(r, who, undo);
    } catch (err) {
      this.#logger?.warn({ sink: r.sink, eventId: r.eventId, ...errorFields(err) }, 'cannot record the preparation state');
      return false;
    }
  }

  #record(r: PreparationOutcome, who: Preparer, undo: boolean): boolean {
    // a preparation that finished after its occurrence ended (canceled while it ran) changes nothing
    if (!undo && !this.#table.occurrenceCurrent(r.eventId, r.ceId)) {
      if (who.prepare && r.outcome === 'delivered')
        this.#logger?.info(
          { eventId: r.eventId, sink: r.sink, ceId: r.ceId },
          'preparation hook succeeded for an occurrence that has ended; it does not count',
        );
      return false;
    }
    const before = this.#table.of(r.eventId).find((p) => p.sink === r.sink);
    if (r.outcome === 'delivered') {
      // an undo of something never prepared (a maintenance seen only once it was over) is not worth a line
      if (undo && before === undefined) return false;
      const state = undo ? 'undone' : 'done';
      const counted = !undo && this.#table.succeeded(r.eventId, r.sink, r.ceId, r.detail ?? null);
      if (undo) this.#table.set(r.eventId, r.sink, state, r.detail ?? null);
      if (before?.state !== state) {
        this.#metrics?.prepares.inc({ sink: r.sink, outcome: state });
        if (state === 'done') this.#metrics?.prepareSeconds.observe({ sink: r.sink }, Math.max(0, Date.now() - r.createdAt) / 1000);
      }
      const gate = counted && who.prepare && (r.transition === 'scheduled' || r.transition === 'updated');
      if (gate) this.#logger?.info({ eventId: r.eventId, sink: r.sink, ceId: r.ceId }, 'preparation hook succeeded');
      return gate;
    }
    if (r.outcome === 'dead-letter') {
      this.#table.set(r.eventId, r.sink, 'failed', r.reason ?? null);
      this.#metrics?.prepares.inc({ sink: r.sink, outcome: 'failed' });
    } else if (!undo && before?.state !== 'done') {
      this.#table.set(r.eventId, r.sink, 'pending', r.reason ?? null);
    }
    return false;
  }

  /** ready: every preparation hook that takes this event succeeded for its current occurrence. */
  ready(e: Subject, vmName: string | null): boolean {
    const done = this.#table.counted(e.eventId);
    return this.#preparers.filter((p) => p.prepare && this.#takes(p, e, vmName)).every((p) => done.has(p.name));
  }

  /**
   * givenBack: nothing a preparation that gives the VM back (`undoes`: probe, kubernetes) did for
   * this event is still out: each has undone it, failed, or never reported. The fleet budget frees
   * a slot only then.
   */
  givenBack(eventId: string): boolean {
    const undoes = new Set(this.#preparers.filter((p) => p.undoes).map((p) => p.name));
    return this.#table.of(eventId).every((r) => !undoes.has(r.sink) || r.state === 'undone' || r.state === 'failed');
  }

  /** recorded: what the preparations reported for an event (pending ones that never reported are left out). */
  recorded(eventId: string): PreparationState[] {
    return this.#table.of(eventId).map(toState);
  }

  /** states: every preparation that takes this event, with its state (`pending` until it reports). */
  states(e: Subject, vmName: string | null): PreparationState[] {
    const records = new Map(this.#table.of(e.eventId).map((r) => [r.sink, r]));
    return this.#preparers
      .filter((p) => records.has(p.name) || this.#takes(p, e, vmName))
      .map((p) => {
        const r = records.get(p.name);
        return r === undefined ? { sink: p.name, state: 'pending', detail: null, at: null } : toState(r);
      });
  }

  /** ofPending: each pending event of this VM with its preparations (for /readyz). */
  ofPending(view: BridgeView) {
    const vmName = routingName(view.vm);
    return (view.document?.events ?? [])
      .filter((e) => vmName === null || affects(e.resources, vmName))
      .map((e) => ({
        eventId: e.eventId,
        eventType: e.eventType,
        eventStatus: e.eventStatus,
        preparations: this.states(e, vmName),
      }))
      .filter((x) => x.preparations.length > 0);
  }

  #takes(p: Preparer, e: Subject, vmName: string | null): boolean {
    const subject = {
      transition: 'scheduled',
      eventType: e.eventType,
      eventSource: e.eventSource,
      resources: e.resources,
      eventId: e.eventId,
    };
    return matchesFilter(p.filter, subject, vmName);
  }
}
