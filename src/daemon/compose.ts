/**
 * compose builds the daemon's parts around one store and its sinks, and wires them to each
 * other: the IMDS client, the identity loop, the dispatcher, the poll loop, the approval
 * service, the auto-approver and the HTTP endpoints. Bridge owns their lifecycle.
 */
import type { Logger } from 'pino';
import { ApprovalInbox } from '../fleet/inbox.ts';
import { ApprovalService } from '../approval/service.ts';
import { FleetBudget } from '../fleet/budget.ts';
import type { FleetStore } from '../fleet/budget-store.ts';
import type { MemberRecord } from '../fleet/budget-records.ts';
import type { FleetConfig } from '../fleet/budget-config.ts';
import { foretellCollision } from './collisions.ts';
import { identityOverride, secretsOf, type BridgeConfig } from '../config/schema.ts';
import { Dispatcher, type DispatchTarget, type OutcomeReport } from '../delivery/dispatcher.ts';
import { route } from '../delivery/route.ts';
import type { ImdsClient } from '../imds/client.ts';
import { DrillClient } from '../drill/client.ts';
import { isDrill, type Drills } from '../drill/drills.ts';
import type { DrillLog } from '../drill/report.ts';
import { routingName, type VmIdentity } from '../imds/identity.ts';
import { fromJson, type BridgeEvent } from '../pipeline/cloudevent.ts';
import { scrubber } from '../lib/log.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { Preparations } from './preparations.ts';
import type { ReadBroadcast } from './reads.ts';
import type { BridgeState } from '../imds/view.ts';
import type { Store } from '../store/store.ts';
import { AutoApprover } from './auto-approver.ts';
import { Endpoints } from './endpoints.ts';
import { IdentityLoop } from './identity-loop.ts';
import { PollLoop } from './poll-loop.ts';

const IDENTITY_RETRY_MS = 60_000;

export interface BridgeOptions {
  config: BridgeConfig;
  logger: Logger;
  /** Where the stdout sink writes (default process.stdout). */
  stdout?: NodeJS.WritableStream;
  /** Log what would be sent instead of sending; keep state in memory only. */
  dryRun?: boolean;
  /** Called with every CloudEvent committed, after the commit. */
  onCommitted?: (events: readonly BridgeEvent[]) => void;
  onOutcome?: (report: OutcomeReport) => void;
  /** How long each sink's create() may take (default 30 s; tests shorten it). */
  sinkCreateDeadlineMs?: number;
  /** How soon a failed identity read is tried again (default 60 s; tests shorten it). */
  identityRetryMs?: number;
  /** When the system booted (ms since epoch; default from its uptime): tests set it to play a reboot. */
  bootedAt?: number | null;
}

/** What the sinks were given before the parts existed: the metrics registry, the IMDS reads and the read model. */
export interface Shared {
  readonly metrics: Metrics;
  readonly reads: ReadBroadcast;
  readonly state: BridgeState;
  readonly preparations: Preparations;
  /** The fleet budget's store, when `fleet` is configured. */
  readonly fleetStore: FleetStore | null;
  /** The drill being played, and its log. */
  readonly drills: Drills;
  readonly drillLog: DrillLog;
}

export interface Parts {
  readonly metrics: Metrics;
  readonly client: ImdsClient;
  readonly identity: IdentityLoop;
  readonly dispatcher: Dispatcher;
  readonly poll: PollLoop;
  readonly approvals: ApprovalService;
  readonly auto: AutoApprover;
  readonly endpoints: Endpoints;
  readonly inbox: ApprovalInbox | null;
  readonly budget: FleetBudget | null;
  /** Ready: IMDS answered well at least once, and fewer reads than the threshold failed in a row since. */
  ready(): boolean;
  /** Routes the listed events again by the VM's name now (see compose); how many CloudEvents got more sinks. */
  routeAgain(from: string): number;
}

export function compose(
  o: BridgeOptions,
  store: Store,
  targets: readonly DispatchTarget[],
  signal: AbortSignal,
  onOutcome: (report: OutcomeReport) => void,
  shared: Shared,
): Parts {
  const { imds } = o.config;
  const { metrics, reads, state, preparations } = shared;
  const budget = budgetOf(o, shared, (members, fleet) => {
    foretellCollision(members, {
      group: fleet.group,
      maxUnavailable: fleet.maxUnavailable,
      view: state,
      journal: store.journal,
      logger: o.logger,
      route: (event) => routeAll([event])[0]!,
      committed: (event) => {
        metrics.transitions.inc({ transition: 'fleet.collision', drill: 'false' });
        dispatcher.notify();
        o.onCommitted?.([event]);
      },
    });
  });
  const { drills, drillLog } = shared;
  const client = new DrillClient(
    { ...imds, onRequest: (request, outcome, seconds) => metrics.imdsDuration.observe({ request, outcome }, seconds) },
    drills,
    () => state.vm.name,
  );
  const identity = new IdentityLoop({
    client,
    logger: o.logger,
    override: identityOverride(o.config.identity),
    retryMs: o.identityRetryMs ?? IDENTITY_RETRY_MS,
    state,
    onChange: (before, after) => identityChanged(before, after),
  });
  const dispatcher = new Dispatcher({ outbox: store.outbox, targets, logger: o.logger, scrub: scrubber(secretsOf(o.config)), onOutcome });
  // while this VM does not know its name, `self` and `leader` sinks take every event (fail closed)
  // a drill's CloudEvents go only to the sinks it names, and are logged for its report
  const routeAll = (events: readonly BridgeEvent[]) =>
    route(events, targets, routingName(state.vm), (eventId) => store.journal.knowsEvent(eventId)).map((p) => {
      if (!isDrill(p.eventId)) return p;
      const only = drills.current()?.request.sinks ?? null;
      const routed = only === null ? p : { ...p, sinks: p.sinks.filter((s) => only.includes(s)) };
      drillLog.routed(routed.eventId, routed.id, routed.transition, routed.sinks);
      return routed;
    });
  const approvals = new ApprovalService({
    records: store.approvals,
    journal: store.journal,
    client,
    logger: o.logger,
    view: state,
    dryRun: o.dryRun ?? false,
    ...(budget === null || o.dryRun ? {} : { gate: budget }),
    onResult: (via, result) => metrics.approvals.inc({ via, result }),
    route: (event) => routeAll([event])[0]!,
    emit: (event, routed, record) => {
      metrics.transitions.inc({ transition: 'approved', drill: String(isDrill(record.eventId)) });
      drillLog.approved(record.eventId, { by: record.by, via: record.via, at: Date.parse(record.at) });
      store.approvals.record(record, routed);
      dispatcher.notify();
      o.onCommitted?.([event]);
    },
  });
  const auto = new AutoApprover({
    records: store.approvals,
    approvals,
    logger: o.logger,
    rules: o.config.approval.rules,
    preparations,
    view: state,
    signal,
    ...(o.config.fleet === undefined ? {} : { heldRetryMs: o.config.fleet.retryMs }),
  });
  const poll = new PollLoop({
    client,
    journal: store.journal,
    last: store.lastDocument,
    metrics,
    logger: o.logger,
    intervalMs: imds.pollIntervalMs,
    maxRetryPauseMs: imds.maxRetryPauseMs,
    state,
    route: routeAll,
    approved: (eventId) => store.approvals.of(eventId) !== null,
    ...(o.bootedAt === undefined ? {} : { bootedAt: o.bootedAt }),
    // the approval policy runs on every good read (below), changed document or not
    committed: (events) => {
      if (events.length > 0) {
        dispatcher.notify();
        o.onCommitted?.(events);
      }
    },
    read: (document) => {
      reads.publish({ events: document.events, vmName: routingName(state.vm) });
      // the budget keeps a drill out of everything the fleet sees (FleetBudget.#realDocument)
      void budget?.onRead(document);
      // an approval that failed or was held is asked again at its time, changed document or not
      auto.apply(document.events);
    },
  });
  /**
   * routeAgain routes the events still listed again with the name the VM has now: a sink their
   * first routing left out (under a name not yet known, or another one before a restart) gets
   * them now, and none gets a CloudEvent it was routed before. It says how many it added.
   */
  function routeAgain(from: string): number {
    const document = state.document;
    if (document === null || !state.vm.nameKnown) return 0;
    const routes: { ceId: string; eventId: string; sinks: string[] }[] = [];
    for (const e of document.events) {
      for (const ce of store.journal.ongoing(e.eventId)) {
        if (ce.routed === null) continue;
        const routed = ce.routed;
        const sinks = routeAll([fromJson(ce.json)])[0]!.sinks.filter((s) => !routed.has(s));
        if (sinks.length > 0) routes.push({ ceId: ce.id, eventId: ce.eventId, sinks });
      }
    }
    if (routes.length === 0) return 0;
    store.journal.addRoutes(routes);
    o.logger.info(
      { from, to: state.vm.name, routes },
      'routed the listed events again by the VM name: they went to the sinks they now match',
    );
    dispatcher.notify();
    return routes.length;
  }
  /** identityChanged routes the listed events again, then the approval policy decides (nothing is approved while the name is unknown). */
  function identityChanged(before: VmIdentity, after: VmIdentity): void {
    routeAgain(before.name);
    if (state.document !== null && after.nameKnown) auto.apply(state.document.events);
  }
  const ready = () => state.goodReads > 0 && poll.failures < o.config.observability.readyFailureThreshold && state.vm.nameKnown;
  const inboxConfig = o.config.approval.inbox;
  const inbox =
    inboxConfig === undefined
      ? null
      : new ApprovalInbox({
          config: inboxConfig,
          service: approvals,
          replay: store.replay,
          logger: o.logger,
          view: state,
          onCommand: (result) => metrics.inboxCommands.inc({ result }),
          onConnected: (connected) => metrics.inboxConnected.set(connected ? 1 : 0),
        });
  const endpoints = new Endpoints({
    config: o.config,
    logger: o.logger,
    metrics,
    readiness: () => {
      const now = ready();
      const details: Record<string, unknown> = {};
      if (inbox !== null) details.inbox = inbox.status();
      if (preparations.any) details.preparations = preparations.ofPending(state);
      if (budget !== null) details.fleet = budget.state();
      const drill = drills.current();
      if (drill !== null) details.drill = drill;
      const reason = state.vm.nameKnown
        ? poll.reason(now)
        : `this VM does not know its name yet (IMDS instance metadata could not be read; ${state.vm.name} is the host name): every event is treated as its own`;
      return { ready: now, reason, ...(Object.keys(details).length > 0 ? { details } : {}) };
    },
    approvals,
    replay: store.replay,
    state,
  });
  return { metrics, client, identity, dispatcher, poll, approvals, auto, endpoints, inbox, budget, ready, routeAgain };
}

/** budgetOf makes the fleet budget over its store, when `fleet` is configured. */
function budgetOf(
  o: BridgeOptions,
  shared: Shared,
  onMembers: (members: readonly MemberRecord[], fleet: FleetConfig) => void,
): FleetBudget | null {
  const { fleet } = o.config;
  if (fleet === undefined || shared.fleetStore === null) return null;
  const { metrics } = shared;
  return new FleetBudget({
    config: fleet,
    store: shared.fleetStore,
    view: shared.state,
    logger: o.logger,
    givenBack: (eventId) => shared.preparations.givenBack(eventId),
    hooks: {
      onHeld: (via) => metrics.fleetHeld.inc({ via }),
      onStoreError: (operation) => metrics.fleetStoreErrors.inc({ operation }),
      onMembers: (members) => onMembers(members, fleet),
      onSlots: (self, others) => {
        metrics.fleetSlots.set({ holder: 'self' }, self);
        metrics.fleetSlots.set({ holder: 'others' }, others);
      },
    },
  });
}
