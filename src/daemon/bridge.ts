/**
 * Bridge composes the daemon from its parts and owns its lifecycle.
 *
 * - create: open the store (one daemon per state database), build every sink.
 * - start: resume the outbox, learn who this VM is, start the HTTP servers, poll.
 * - stop: stop polling, drain in-flight sends within a deadline, close sinks, IMDS client and store.
 *
 * The work itself lives beside it: PollLoop (poll and commit), IdentityLoop (who this VM is),
 * AutoApprover (policy and preparation hooks), route (which sinks take an event), the
 * Dispatcher (delivery), the ApprovalService (every approval).
 */
import { inboxSession } from '../fleet/inbox-config.ts';
import type { InboxStatus } from '../fleet/inbox.ts';
import type { BudgetState } from '../fleet/budget.ts';
import { linksFor } from '../approval/links.ts';
import type { ApprovalService } from '../approval/service.ts';
import { identityOverride } from '../config/schema.ts';
import { SHUTDOWN_DEADLINE_MS, type DispatchTarget, type OutcomeReport } from '../delivery/dispatcher.ts';
import type { ImdsClient } from '../imds/client.ts';
import { identityFrom, type VmIdentity } from '../imds/identity.ts';
import { BridgeState } from '../imds/view.ts';
import { Metrics } from '../observability/metrics.ts';
import { Preparations, preparersOf } from './preparations.ts';
import { ReadBroadcast } from './reads.ts';
import type { ApprovalLinks } from '../sinks/contract.ts';
import { StateLock } from '../store/lock.ts';
import { ControlServer, controlPath } from '../drill/control.ts';
import { Drills, isDrill } from '../drill/drills.ts';
import { DrillLog } from '../drill/report.ts';
import { openFleetStore } from '../fleet/open-store.ts';
import { realDrillNoticeOf } from '../registry/sinks.ts';
import { Store } from '../store/store.ts';
import { compose, type BridgeOptions, type Parts, type Shared } from './compose.ts';
import { buildTargets } from './targets.ts';
import { tokenEndpointFollowsImds } from '../azure/credentials.ts';

export type { BridgeOptions } from './compose.ts';

const JOURNAL_RETENTION_MS = 7 * 24 * 3600_000;

export interface BridgeStatus {
  readonly ready: boolean;
  readonly consecutiveFailures: number;
  readonly lastError: string | null;
  readonly firstPollAt: number | null;
  readonly identity: VmIdentity;
  readonly incarnation: number | null;
}

export class Bridge {
  readonly store: Store;
  readonly client!: ImdsClient;
  readonly approvals!: ApprovalService;
  readonly metrics!: Metrics;
  /** The links chat sinks show, when approvals are configured. */
  readonly approvalLinks: ApprovalLinks | null;
  readonly #o: BridgeOptions;
  readonly #targets: readonly DispatchTarget[];
  readonly #lock: StateLock | null;
  readonly #parts: Parts;
  readonly #state: BridgeState;
  readonly #preparations: Preparations;
  readonly #abort = new AbortController();
  readonly #drillLog: DrillLog;
  readonly #control: ControlServer | null;
  #tasks: Promise<void>[] = [];
  #stopped = false;

  private constructor(
    o: BridgeOptions,
    store: Store,
    lock: StateLock | null,
    targets: readonly DispatchTarget[],
    links: ApprovalLinks | null,
    shared: Shared,
  ) {
    this.#o = o;
    this.store = store;
    this.#lock = lock;
    this.#targets = targets;
    this.approvalLinks = links;
    this.#state = shared.state;
    this.#parts = compose(o, store, targets, this.#abort.signal, (report) => this.#onOutcome(report), shared);
    this.#preparations = shared.preparations;
    this.#drillLog = shared.drillLog;
    // the control channel (drills): beside the state database, never in a dry run or with the state in memory
    this.#control =
      o.dryRun || o.config.state.path === ':memory:'
        ? null
        : new ControlServer({
            path: controlPath(o.config.state.path),
            statePath: o.config.state.path,
            drills: shared.drills,
            log: shared.drillLog,
            vmName: () => shared.state.vm.name,
            listed: () => shared.state.document?.events ?? [],
            sinks: targets.map((t) => t.name),
            realNotice: o.config.sinks.flatMap((c) => {
              const n = realDrillNoticeOf(c);
              return n === null ? [] : [{ sink: c.name, ...n }];
            }),
            preparations: (eventId) => shared.preparations.recorded(eventId),
            logger: o.logger,
          });
    ({ metrics: this.metrics, client: this.client, approvals: this.approvals } = this.#parts);
  }

  /** create opens the store and builds every sink; it connects to nothing yet. */
  static async create(o: BridgeOptions): Promise<Bridge> {
    const path = o.dryRun ? ':memory:' : o.config.state.path;
    const store = Store.open(path);
    // one daemon per state database: a second one would deliver everything again (a state in
    // memory is nobody else's, and has no file to lock beside it)
    let lock: StateLock | null = null;
    try {
      lock = path === ':memory:' ? null : StateLock.acquire(path);
    } catch (err) {
      store.close();
      throw err;
    }
    const state = new BridgeState(identityFrom(null, identityOverride(o.config.identity)));
    const inbox = o.config.approval.inbox;
    const links = linksFor(o.config.approval, state, inbox === undefined ? undefined : () => inboxSession(inbox, state.vm));
    // managed identity tokens come from the same IMDS as the Scheduled Events (before any sink makes a credential)
    const tokenEndpoint = tokenEndpointFollowsImds(o.config.imds.endpoint, o.config, process.env);
    if (tokenEndpoint !== null)
      o.logger.info(
        { code: 'TOKEN_ENDPOINT', endpoint: tokenEndpoint },
        'managed identity tokens are asked from the configured IMDS endpoint',
      );
    try {
      const metrics = new Metrics(store.outbox);
      const preparations = new Preparations(store.preparations, preparersOf(o.config.sinks), { metrics, logger: o.logger });
      // the fleet budget's store (its client library is loaded only now, when configured)
      const fleetStore = o.config.fleet === undefined ? null : await openFleetStore(o.config.fleet.store, o.config.fleet.group);
      const drills = new Drills();
      const shared: Shared = {
        metrics,
        reads: new ReadBroadcast(o.logger),
        state,
        preparations,
        fleetStore,
        drills,
        drillLog: new DrillLog(),
      };
      const targets = await buildTargets(o.config.sinks, {
        logger: o.logger,
        stdout: o.stdout ?? process.stdout,
        sinkStates: store.sinkStates,
        approval: links,
        dryRun: o.dryRun ?? false,
        vm: () => state.vm,
        reads: shared.reads,
        metrics: shared.metrics.sinkMetrics(),
        preparations: (eventId) => preparations.recorded(eventId),
        // a drill this process did not start (before a restart) can only end: what it changed is given back
        drill: (eventId) => {
          const d = drills.current();
          return isDrill(eventId) ? { prepare: d?.eventId === eventId ? d.request.prepare : 'real' } : null;
        },
        ...(o.sinkCreateDeadlineMs === undefined ? {} : { createDeadlineMs: o.sinkCreateDeadlineMs }),
      });
      return new Bridge(o, store, lock, targets, links ?? null, shared);
    } catch (err) {
      store.close();
      lock?.release();
      throw err;
    }
  }

  /** The approval server's URL, when it runs. */
  get approvalServerUrl(): string | null {
    return this.#state.approvalServerUrl;
  }

  /** The fleet budget's state, when one is configured. */
  get fleet(): BudgetState | null {
    return this.#parts.budget?.state() ?? null;
  }

  /** The approval inbox's state, when one is configured. */
  get inbox(): InboxStatus | null {
    return this.#parts.inbox?.status() ?? null;
  }

  get identity(): VmIdentity {
    return this.#state.vm;
  }

  /** The observability endpoint's URL, when it runs. */
  get observabilityUrl(): string | null {
    return this.#parts.endpoints.observabilityUrl;
  }

  status(): BridgeStatus {
    const p = this.#parts.poll;
    return {
      ready: this.#parts.ready(),
      consecutiveFailures: p.failures,
      lastError: p.lastError,
      firstPollAt: p.firstPollAt,
      identity: this.identity,
      incarnation: this.#state.document?.incarnation ?? null,
    };
  }

  /** start resumes the outbox, learns who this VM is, and starts polling. */
  async start(): Promise<void> {
    const { logger, config } = this.#o;
    const configured = new Set(this.#targets.map((t) => t.name));
    for (const sink of this.store.outbox.sinks()) {
      if (configured.has(sink)) continue;
      const n = this.store.outbox.deadLetterSink(sink, `sink "${sink}" is no longer configured`);
      logger.warn({ sink, code: 'SINK_REMOVED', count: n }, 'outbox rows of a sink that is no longer configured were dead-lettered');
    }
    const pruned = this.store.prune(JOURNAL_RETENTION_MS);
    const depth = [...this.store.outbox.depth().values()].reduce((a, b) => a + b, 0);
    logger.info(
      {
        state: this.#o.dryRun ? ':memory: (dry run)' : config.state.path,
        incarnation: this.#state.document?.incarnation ?? null,
        pendingDeliveries: depth,
        prunedJournal: pruned,
        sinks: this.#targets.map((t) => `${t.name}:${t.type}`),
        dryRun: Boolean(this.#o.dryRun),
      },
      'bridge starting',
    );
    this.#parts.dispatcher.start();
    if (this.#state.document !== null) this.metrics.observeDocument(this.#state.document);
    await this.#parts.endpoints.startObservability();
    await this.#parts.identity.refresh(this.#abort.signal);
    // the stored document's events were routed by the name known then: a VM whose name is known
    // now (read, or configured anew) gives a sink they match its transitions, once
    this.#parts.routeAgain('the name of the last run');
    await this.#parts.endpoints.startApproval();
    await this.#control?.start();
    this.#tasks = [this.#parts.identity.run(this.#abort.signal), this.#parts.poll.run(this.#abort.signal)];
    if (this.#parts.inbox !== null) this.#tasks.push(this.#parts.inbox.run(this.#abort.signal));
    if (this.#parts.budget !== null) this.#tasks.push(this.#parts.budget.run(this.#abort.signal));
  }

  /** stop ends polling, drains in-flight deliveries within `deadlineMs`, and closes everything. */
  async stop(deadlineMs = SHUTDOWN_DEADLINE_MS): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#abort.abort(new Error('bridge stopping'));
    await this.#parts.endpoints.closeApproval();
    await this.#control?.close();
    await this.#parts.inbox?.close();
    await Promise.all(this.#tasks);
    await this.#parts.endpoints.closeObservability();
    await this.#parts.dispatcher.stop(deadlineMs);
    await this.client.close();
    this.store.close();
    this.#lock?.release();
    this.#o.logger.info({}, 'bridge stopped');
  }

  #onOutcome(report: OutcomeReport): void {
    this.metrics.deliveries.inc({ sink: report.sink, outcome: report.outcome });
    this.metrics.deliveryDuration.observe({ sink: report.sink }, report.durationMs / 1000);
    if (report.outcome === 'delivered') {
      this.metrics.changeToDelivery.observe({ sink: report.sink }, Math.max(0, Date.now() - report.createdAt) / 1000);
    }
    // a preparation hook's success that now counts decides the event again
    if (this.#preparations.record(report)) this.#parts.auto.decideAgain(report.eventId);
    this.#drillLog.outcome(report);
    this.#o.onOutcome?.(report);
  }
}
