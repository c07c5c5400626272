/**
 * compose builds the daemon: the core parts (the read model, metrics, preparations, the sinks,
 * the IMDS client, the router, the dispatcher, approvals, the auto-approver, the poll and
 * identity loops, the HTTP endpoints), each made after what it uses, then the features attached
 * through one seam (feature.ts). Bridge owns the lifecycle of what it returns.
 */
import { linksFor } from '../approval/links.ts';
import { ApprovalService } from '../approval/service.ts';
import { identityOverride, secretsOf } from '../config/schema.ts';
import { Dispatcher, type OutcomeReport } from '../delivery/dispatcher.ts';
import { attachDrill } from '../drill/attach.ts';
import { attachBudget } from '../fleet/budget/attach.ts';
import { attachInbox } from '../fleet/inbox/attach.ts';
import { inboxSession } from '../fleet/inbox/config.ts';
import { isDrill } from '../imds/drill-id.ts';
import { identityFrom, routingName } from '../imds/identity.ts';
import { BridgeState } from '../imds/view.ts';
import { scrubber } from '../lib/log.ts';
import { Metrics } from '../observability/metrics.ts';
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
import { buildTargets, closeTargets } from './targets.ts';

export type Parts = Awaited<ReturnType<typeof compose>>;

export async function compose(o: BridgeOptions, store: Store, signal: AbortSignal) {
  const { config, logger } = o;
  const dryRun = o.dryRun ?? false;
  const state = new BridgeState(identityFrom(null, identityOverride(config.identity)));
  const metrics = new Metrics(store.outbox);
  const preparations = new Preparations(store.preparations, preparersOf(config.sinks), { metrics, logger });
  const reads = new ReadBroadcast(logger);
  const inboxConfig = config.approval.inbox;
  const links = linksFor(config.approval, state, inboxConfig === undefined ? undefined : () => inboxSession(inboxConfig, state.vm)) ?? null;
  const recorded = (eventId: string) => preparations.recorded(eventId);
  const drill = attachDrill({ config, dryRun, logger, state, recorded, approvalOf: (id) => store.approvals.of(id) });
  const targets = await buildTargets(config.sinks, {
    ...{ logger, dryRun, reads, preparations: recorded, drill: drill.sinkMode, approval: links ?? undefined },
    ...{ stdout: o.stdout ?? process.stdout, sinkStates: store.sinkStates, vm: () => state.vm, metrics: metrics.sinkMetrics() },
    ...(o.sinkCreateDeadlineMs === undefined ? {} : { createDeadlineMs: o.sinkCreateDeadlineMs }),
  });
  const outcomes: ((report: OutcomeReport) => void)[] = [];
  const dispatcher = new Dispatcher({
    ...{ outbox: store.outbox, targets, logger, scrub: scrubber(secretsOf(config)) },
    onOutcome: (report) => outcomes.forEach((listen) => listen(report)),
  });
  const committed = (events: readonly BridgeEvent[]) => {
    if (events.length === 0) return;
    dispatcher.notify();
    o.onCommitted?.(events);
  };
  const router = new Router({ targets, state, journal: store.journal, logger, hooks: [drill.route] });
  const budget = await attachBudget({
    ...{ config, dryRun, logger, state, journal: store.journal, metrics, committed, route: router.one },
    givenBack: (eventId) => preparations.givenBack(eventId),
  }).catch(async (err: unknown) => {
    await closeTargets(targets);
    throw err;
  });
  const inbox = attachInbox({ config, logger, state, replay: store.replay, metrics });
  const features: Feature[] = [drill, ...(budget === null ? [] : [budget]), ...(inbox === null ? [] : [inbox])];
  const gate = features.find((f) => f.gate !== undefined)?.gate;
  const client = drill.client({
    ...config.imds,
    onRequest: (request, outcome, seconds) => metrics.imdsDuration.observe({ request, outcome }, seconds),
  });
  const approvals = new ApprovalService({
    ...{ records: store.approvals, journal: store.journal, client, logger, view: state, dryRun, route: router.one },
    ...(gate === undefined ? {} : { gate }),
    onResult: (via, result) => metrics.approvals.inc({ via, result }),
    emit: (event, routed, record) => {
      metrics.transitions.inc({ transition: 'approved', drill: String(isDrill(record.eventId)) });
      store.approvals.record(record, routed);
      committed([event]);
    },
  });
  const auto = new AutoApprover({
    ...{ records: store.approvals, approvals, logger, rules: config.approval.rules, preparations, view: state, signal },
    ...(gate === undefined ? {} : { heldRetryMs: gate.retryMs }),
  });
  const poll = new PollLoop({
    ...{ client, journal: store.journal, last: store.lastDocument, metrics, logger, state, route: router.route, committed },
    ...{ intervalMs: config.imds.pollIntervalMs, maxRetryPauseMs: config.imds.maxRetryPauseMs },
    approved: (eventId) => store.approvals.of(eventId) !== null,
    ...(o.bootedAt === undefined ? {} : { bootedAt: o.bootedAt }),
    read: (document) => {
      reads.publish({ events: document.events, vmName: routingName(state.vm) });
      for (const f of features) f.onRead?.(document);
      // the approval policy runs on every good read, changed document or not: an approval that failed or was held is asked again at its time
      auto.apply(document.events);
    },
  });
  /** routeAgain routes the listed events again by the VM's name now (Router.again), and the dispatcher takes what it added. */
  const routeAgain = (from: string): number => {
    const added = router.again(from);
    if (added > 0) dispatcher.notify();
    return added;
  };
  const identity = new IdentityLoop({
    ...{ client, logger, override: identityOverride(config.identity), retryMs: o.identityRetryMs ?? 60_000, state },
    // the listed events are routed again, then the approval policy decides (nothing is approved while the name is unknown)
    onChange: (before, after) => {
      routeAgain(before.name);
      if (state.document !== null && after.nameKnown) auto.apply(state.document.events);
    },
  });
  const sources = { state, poll, failureThreshold: config.observability.readyFailureThreshold, preparations, features };
  const endpoints = new Endpoints({ config, logger, metrics, readiness: () => readiness(sources), approvals, replay: store.replay, state });
  outcomes.push((report) => {
    metrics.outcome(report);
    // a preparation hook's success that now counts decides the event again
    if (preparations.record(report)) auto.decideAgain(report.eventId);
    for (const f of features) f.onOutcome?.(report);
    o.onOutcome?.(report);
  });
  const ready = () => isReady(sources);
  return {
    state,
    metrics,
    links,
    targets,
    client,
    dispatcher,
    approvals,
    poll,
    identity,
    endpoints,
    features,
    ready,
    routeAgain,
    budget,
    inbox,
  };
}
