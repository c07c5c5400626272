/**
 * attachBudget: the fleet budget as a feature of the daemon (daemon/feature.ts), when `fleet` is
 * configured. It opens the group's store (its client library loaded only now), gates every early
 * approval, writes this member's record at each heartbeat (its loop), keeps a drill out of
 * everything the fleet sees, and turns the members' records into a collision forecast.
 */
import type { BridgeView } from '../../imds/view.ts';
import type { EventsDocument } from '../../imds/wire.ts';
import type { Metrics } from '../../observability/metrics.ts';
import type { GroupMetrics } from '../../observability/fleet-metrics.ts';
import type { BridgeEvent } from '../../pipeline/cloudevent.ts';
import type { CollisionDeps } from './collisions.ts';
import type { HealthMonitor } from '../../health/monitor.ts';
import { portOf } from './forecast-turn.ts';
import { errorFields } from '../../lib/errors.ts';
import { budgeted, type FleetConfig } from './config.ts';
import type { EventNotes } from './records.ts';
import type { MemberCalendarOf } from './member.ts';
import { openFleetStore } from './stores/open.ts';

/** What the budget needs of the daemon: besides what the collision forecast needs (its logger, the journal, the routing), these. */
export interface BudgetContext extends Pick<CollisionDeps, 'logger' | 'journal' | 'route'> {
  readonly config: { readonly fleet?: FleetConfig | undefined };
  readonly dryRun: boolean;
  readonly state: BridgeView;
  readonly metrics: Metrics;
  /** The group's series (allowed disruptions, the members down by cause, whether it is paused), in a budgeted group. */
  readonly fleet?: GroupMetrics | undefined;
  /** Whether an ended event's preparations were given back. */
  readonly givenBack: (eventId: string) => boolean;
  /** Says that CloudEvents were committed (the dispatcher takes them). */
  readonly committed: (events: readonly BridgeEvent[]) => void;
  /** This VM's health checks (`fleet.health`, or `health`), run by their own feature. */
  readonly health?: HealthMonitor | undefined;
  /** What this VM's calendar says now, for its member record. */
  readonly calendar?: MemberCalendarOf | undefined;
  /** Who approved each event and where its preparations stand, for the member record. */
  readonly notes?: EventNotes | undefined;
}

export async function attachBudget(ctx: BudgetContext) {
  const fleet = ctx.config.fleet;
  if (fleet === undefined) return null;
  const { metrics } = ctx;
  const store = await openFleetStore(fleet.store, fleet.group, fleet.storeTimeoutMs);
  // the budget's code is loaded only by a member of a fleet: a bridge without one never holds it
  if (!budgeted(fleet)) return attachMember(ctx, fleet, store, (await import('./fleet-member.ts')).FleetMember);
  const [{ FleetBudget }, { Forecast }, { PauseNotice }] = await Promise.all([
    import('./budget.ts'),
    import('./collisions.ts'),
    import('./pause-notice.ts'),
  ]);
  const forecast = new Forecast({
    group: fleet.group,
    maxUnavailable: fleet.maxUnavailable,
    view: ctx.state,
    journal: ctx.journal,
    logger: ctx.logger,
    route: ctx.route,
    unhealthyCountsForSeconds: fleet.unhealthyCountsForSeconds,
    marginSeconds: fleet.marginSeconds,
    ...(ctx.health === undefined ? {} : { settleSeconds: ctx.health.config.settleSeconds }),
    committed: (event) => {
      metrics.transitions.inc({ transition: 'fleet.collision', drill: 'false' });
      ctx.committed([event]);
    },
  });
  const health = ctx.health;
  const notice = new PauseNotice({
    ...{ group: fleet.group, view: ctx.state, journal: ctx.journal, logger: ctx.logger, route: ctx.route },
    committed: (event) => {
      metrics.transitions.inc({ transition: 'fleet.paused', drill: 'false' });
      ctx.committed([event]);
    },
  });
  // told by the budget's watch of its slots when one is given back while it waits at the head of the queue (the approver asks again)
  const wakes = new Set<() => void>();
  const budget = new FleetBudget({
    config: fleet,
    store,
    ...(health === undefined ? {} : { health }),
    ...(ctx.calendar === undefined ? {} : { calendar: ctx.calendar }),
    ...(ctx.notes === undefined ? {} : { notes: ctx.notes }),
    view: ctx.state,
    logger: ctx.logger,
    givenBack: ctx.givenBack,
    // the word this member said as its collision wave's speaker goes in its record: the others read it once, from there
    forecast: portOf(forecast, (err) => ctx.logger.warn({ ...errorFields(err) }, 'fleet budget: the collision forecast failed')),
    hooks: {
      onHeld: (via) => metrics.fleetHeld.inc({ via }),
      onStoreError: (operation) => metrics.fleetStoreErrors.inc({ operation }),
      onFigures: (figures) => ctx.fleet?.figures(figures),
      onPaused: (paused) => ctx.fleet?.paused(paused),
      onSlots: (self, others) => {
        metrics.fleetSlots.set({ holder: 'self' }, self);
        metrics.fleetSlots.set({ holder: 'others' }, others);
      },
      onWake: () => {
        for (const wake of wakes) wake();
      },
    },
  });
  // a dry run asks nobody: nothing is approved for real, so nothing is held
  const gate = ctx.dryRun
    ? {}
    : {
        gate: {
          take: budget.take.bind(budget),
          abandon: budget.abandon.bind(budget),
          retryMs: fleet.retryMs,
          onWake: (listener: () => void) => void wakes.add(listener),
        },
      };
  return {
    name: 'fleet',
    ...gate,
    // the budget keeps a drill out of everything the fleet sees (realDocument, member.ts)
    onRead: (document: EventsDocument) => {
      void budget.onRead(document);
      // the pause as the last listing of the slots said it (read again at every heartbeat)
      notice.look(budget.state().pause, document);
    },
    details: () => budget.state(),
    run: async (signal: AbortSignal) => {
      // the health checks run in their own feature; a change is written in the member record at once
      const unsubscribe = health?.subscribe(() => void budget.healthChanged());
      await budget.run(signal).finally(unsubscribe);
    },
    state: () => budget.state(),
  };
}

/** attachMember: a member of the fleet view without a budget: its record written, nothing held. */
function attachMember(
  ctx: BudgetContext,
  fleet: FleetConfig,
  store: Awaited<ReturnType<typeof openFleetStore>>,
  FleetMember: typeof import('./fleet-member.ts').FleetMember,
) {
  const member = new FleetMember({
    ...{ config: fleet, store, view: ctx.state, logger: ctx.logger, health: ctx.health, calendar: ctx.calendar, notes: ctx.notes },
    onStoreError: (operation) => ctx.metrics.fleetStoreErrors.inc({ operation }),
  });
  return {
    name: 'fleet',
    onRead: (document: EventsDocument) => void member.onRead(document),
    details: () => member.state(),
    run: async (signal: AbortSignal) => {
      const unsubscribe = ctx.health?.subscribe(() => void member.changed());
      await member.run(signal).finally(unsubscribe);
    },
    state: () => member.state(),
  };
}
