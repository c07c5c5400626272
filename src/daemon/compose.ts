/**
 * compose builds the daemon: the core parts (the read model, metrics, preparations, the sinks,
 * the IMDS client, the router, the dispatcher, approvals, the auto-approver, the poll and
 * identity loops, the HTTP endpoints), each made after what it uses, then the features attached
 * through one seam (feature.ts). Bridge owns the lifecycle of what it returns.
 */
import { linksFor } from '../approval/links.ts';
import { ApprovalService } from '../approval/service.ts';
import { identityOverride, secretsOf } from '../config/schema.ts';
import { calendarOf, healthOf } from '../config/cross.ts';
import { Dispatcher, type OutcomeReport } from '../delivery/dispatcher.ts';
import { attachDrill } from '../drill/attach.ts';
import { attachBudget } from '../fleet/budget/attach.ts';
import { budgeted } from '../fleet/budget/config.ts';
import { attachInbox } from '../fleet/inbox/attach.ts';
import { attachHealth } from '../health/attach.ts';
import { Calendar, memberCalendar } from '../calendar/calendar.ts';
import { MAX_ENDED } from '../fleet/budget/schemas.ts';
import { attachCalendar } from '../calendar/watch/attach.ts';
import { Deferrals } from '../calendar/watch/defer.ts';
import { prepares } from '../registry/sinks.ts';
import { inboxSession } from '../fleet/inbox/config.ts';
import { isDrill } from '../imds/drill-id.ts';
import { ImdsClient } from '../imds/client.ts';
import { identityFrom, routingName } from '../imds/identity.ts';
import { BridgeState } from '../imds/view.ts';
import { scrubber } from '../lib/log.ts';
import { Metrics } from '../observability/metrics.ts';
import type { HoldReason } from '../observability/fleet-metrics.ts';
import type { BridgeEvent } from '../pipeline/cloudevent.ts';
import type { Store } from '../store/store.ts';
import { AutoApprover } from './auto-approver.ts';
import { Endpoints } from './endpoints.ts';
import type { Feature } from './feature.ts';
import { IdentityLoop } from './identity-loop.ts';
import type { BridgeOptions } from './options.ts';
import { PollLoop } from './poll-loop.ts';
import { Preparations, preparersOf } from './preparations.ts';
import { isReady, readiness } from './readiness.ts';
import { ReadBroadcast } from './reads.ts';
import { Router } from './router.ts';
import { buildTargets, closingOnFailure } from './targets.ts';

export type Parts = Awaited<ReturnType<typeof compose>>;

export async function compose(o: BridgeOptions, store: Store, signal: AbortSignal) {
  const { config, logger } = o;
  const { journal, approvals: records, replay } = store;
  const dryRun = o.dryRun ?? false;
  const state = new BridgeState(identityFrom(null, identityOverride(config.identity)));
  const metrics = new Metrics(store.outbox);
  const preparations = new Preparations(store.preparations, preparersOf(config.sinks), { metrics, logger });
  const recorded = (eventId: string) => preparations.recorded(eventId);
  const reads = new ReadBroadcast(logger);
  const inboxConfig = config.approval.inbox;
  const links = linksFor(config.approval, state, inboxConfig && (() => inboxSession(inboxConfig, state.vm))) ?? null;
  // the features that shape reading and routing come first: the sinks and the router take their say
  const drill = attachDrill({ config, dryRun, logger, state, recorded, approvalOf: (id) => records.of(id) });
  // one health monitor serves the probe sink and the fleet budget
  const health = attachHealth(healthOf(config), logger, () => state.vm.resourceId);
  if (health !== null) {
    const checked = metrics.healthChecks();
    health.monitor.subscribe((s) => checked(s.healthy));
  }
  const early: Feature[] = [drill, ...(health === null ? [] : [health.feature])];
  const { sinkStates } = store;
  const vm = () => state.vm;
  const sinkContext = { logger, dryRun, reads, preparations: recorded, drill: drill.sinkMode, approval: links, sinkStates, vm };
  const stdout = o.stdout ?? process.stdout;
  const targets = await buildTargets(config.sinks, {
    ...sinkContext,
    stdout,
    metrics: metrics.sinkMetrics(),
    createDeadlineMs: o.sinkCreateDeadlineMs,
    health: health?.monitor,
  });
  const outcomes: ((report: OutcomeReport) => void)[] = [];
  const scrub = scrubber(secretsOf(config));
  const dispatcher = new Dispatcher({ outbox: store.outbox, targets, logger, scrub, onOutcome: (r) => outcomes.forEach((f) => f(r)) });
  const committed = (events: readonly BridgeEvent[]) => {
    if (events.length === 0) return;
    dispatcher.notify();
    o.onCommitted?.(events);
  };
  // the calendar: its blackouts hold every early approval, its windows the rules bound to them (and
  // their events' preparations); conflicts foretold at every read
  const calendarConfig = calendarOf(config);
  const calendar = calendarConfig === undefined ? undefined : new Calendar(calendarConfig);
  const now = o.calendarClock;
  const rules = config.approval.rules;
  const preparing = new Set(targets.filter((t) => prepares(t)).map((t) => t.name));
  const release = (eventId: string) => {
    const n = store.outbox.release(eventId);
    if (n > 0) dispatcher.notify();
    return n;
  };
  const deferrals = calendar && new Deferrals({ calendar, rules, view: state, preparing, release, logger, now: now ?? Date.now });
  const hooks = [...early.flatMap((f) => (f.route === undefined ? [] : [f.route])), ...(deferrals ? [deferrals.route] : [])];
  const router = new Router({ targets, state, journal, logger, hooks, notify: () => dispatcher.notify() });
  const givenBack = (eventId: string) => preparations.givenBack(eventId);
  // a budgeted group's numbers, and the approvals held (by what) and granted: every path below says them
  const fleet = config.fleet !== undefined && budgeted(config.fleet) ? metrics.fleet.group(config.fleet.group) : undefined;
  const budgetContext = { config, dryRun, logger, state, journal, metrics, committed, route: router.one, givenBack, fleet };
  // what a member record says of each event besides IMDS's fields: who approved it, where its preparations stand
  const noteOf = (eventId: string) => {
    const a = records.of(eventId);
    const p = preparations.recorded(eventId);
    const seen = journal.seenOf(eventId);
    return {
      ...(a === null ? {} : { approval: { by: a.by, via: a.via, at: a.at } }),
      ...(Object.keys(seen).length === 0 ? {} : { seen }),
      ...(p.length === 0 ? {} : { preparations: p.map(({ sink, state }) => ({ sink, state })) }),
    };
  };
  // what a member record draws as ended: this VM's maintenances that ended within the last day
  const notes = Object.assign(noteOf, { ended: () => journal.endedSince((now ?? Date.now)() - 86_400_000, MAX_ENDED) });
  const more = { health: health?.monitor, calendar: calendar && memberCalendar(calendar, now ?? Date.now), notes };
  const budget = await attachBudget({ ...budgetContext, ...more }).catch(closingOnFailure(targets));
  const inbox = attachInbox({ config, logger, state, replay, metrics });
  const watchContext = { calendar, rules, view: state, journal, logger, route: router.one, committed };
  const watch = attachCalendar({ ...watchContext, ...(now ? { now } : {}), ...(deferrals ? { deferrals } : {}) });
  const features: Feature[] = [...early, ...[budget, inbox, watch].filter((f) => f !== null)];
  const gate = features.find((f) => f.gate !== undefined)?.gate;
  const makeClient = features.find((f) => f.client !== undefined)?.client ?? ((options) => new ImdsClient(options));
  const client = makeClient({ ...config.imds, onRequest: (request, outcome, s) => metrics.imdsDuration.observe({ request, outcome }, s) });
  const approvals = new ApprovalService({
    ...{ records, journal, client, logger, view: state, dryRun, route: router.one, ...(gate === undefined ? {} : { gate }) },
    ...(calendar === undefined ? {} : { calendar }),
    ...(now === undefined ? {} : { now }),
    onResult: (via, result, eventId, held) => {
      metrics.approvals.inc({ via, result });
      if (held !== null) fleet?.held(eventId, held);
      else if (result === 'approved') fleet?.granted(eventId);
    },
    emit: (event, routed, record) => {
      metrics.transitions.inc({ transition: 'approved', drill: String(isDrill(record.eventId)) });
      records.record(record, routed);
      committed([event]);
    },
  });
  const auto = new AutoApprover({
    ...{ records, approvals, logger, rules, preparations, view: state, signal, heldRetryMs: gate?.retryMs },
    ...(calendar === undefined ? {} : { calendar }),
    ...(now === undefined ? {} : { now }),
    ...(fleet === undefined ? {} : { onHeld: (eventId: string, reason: HoldReason) => fleet.held(eventId, reason) }),
  });
  // a slot given back while this member waits at the head of its group's queue: its held approval is asked again now
  gate?.onWake?.(() => auto.askAgain());
  const poll = new PollLoop({
    ...{ client, journal, last: store.lastDocument, metrics, logger, state, route: router.route, committed, bootedAt: o.bootedAt },
    ...{ intervalMs: config.imds.pollIntervalMs, maxRetryPauseMs: config.imds.maxRetryPauseMs },
    approved: (eventId) => records.of(eventId) !== null,
    read: (document) => {
      reads.publish({ events: document.events, vmName: routingName(state.vm) });
      for (const f of features) f.onRead?.(document);
      fleet?.keep(new Set(document.events.filter((e) => e.eventStatus === 'Scheduled').map((e) => e.eventId)));
      // the approval policy runs on every good read, changed document or not: an approval that failed or was held is asked again at its time
      auto.apply(document.events);
    },
  });
  const identity = new IdentityLoop({
    ...{ client, logger, override: identityOverride(config.identity), retryMs: o.identityRetryMs ?? 60_000, state },
    // the listed events are routed again by the name known now, then the approval policy decides (nothing is approved while the name is unknown)
    onChange: (before, after) => {
      router.again(before.name);
      if (state.document !== null && after.nameKnown) auto.apply(state.document.events);
    },
  });
  const sources = { state, poll, failureThreshold: config.observability.readyFailureThreshold, preparations, features };
  const endpoints = new Endpoints({ config, logger, metrics, readiness: () => readiness(sources), approvals, replay, state });
  outcomes.push((report) => {
    metrics.outcome(report);
    // a preparation hook's success that now counts decides the event again
    if (preparations.record(report)) auto.decideAgain(report.eventId);
    for (const f of features) f.onOutcome?.(report);
    o.onOutcome?.(report);
  });
  const ready = () => isReady(sources);
  return { state, metrics, links, client, dispatcher, approvals, poll, identity, endpoints, features, router, ready, budget, inbox };
}
