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
import { decodeKey } from '../fleet/keys.ts';
import { inboxSession } from '../fleet/inbox-config.ts';
import type { InboxStatus } from '../fleet/inbox.ts';
import { approvalLinks } from '../approval/links.ts';
import type { ApprovalService } from '../approval/service.ts';
import { identityOverride, type BridgeConfig } from '../config/schema.ts';
import { SHUTDOWN_DEADLINE_MS, type DispatchTarget, type OutcomeReport } from '../delivery/dispatcher.ts';
import type { ImdsClient } from '../imds/client.ts';
import { identityFrom, type VmIdentity } from '../imds/identity.ts';
import { BridgeState, type BridgeView } from '../imds/view.ts';
import { secretKey } from '../lib/standard-webhooks.ts';
import { Metrics } from '../observability/metrics.ts';
import { recorded } from './preparations.ts';
import { ReadBroadcast } from './reads.ts';
import type { ApprovalLinks } from '../sinks/contract.ts';
import { StateLock } from '../store/lock.ts';
import { Store } from '../store/store.ts';
import { compose, type BridgeOptions, type Parts, type Shared } from './compose.ts';
import { buildTargets } from './targets.ts';
import { tokenEndpointFollowsImds } from '../azure/credentials.ts';
import { errorFields } from '../lib/errors.ts';

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
  readonly #abort = new AbortController();
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
    ({ metrics: this.metrics, client: this.client, approvals: this.approvals } = this.#parts);
  }

  /** approvalLinks builds the links chat sinks show, for events the policy leaves to a human. */
  static approvalLinks(config: BridgeConfig, view: BridgeView): ApprovalLinks | undefined {
    const vm = () => view.vm;
    const serverUrl = () => view.approvalServerUrl;
    const a = config.approval;
    if (a.relayUrl !== undefined && a.inbox !== undefined) {
      // fleet approvals: links and Slack buttons go to the relay, with tokens of this VM's link key
      const inbox = a.inbox;
      return approvalLinks({
        key: decodeKey(inbox.linkKey),
        rules: a.rules,
        linkTtlSeconds: a.linkTtlSeconds,
        publicUrl: a.relayUrl,
        slackInteractive: true,
        vm,
        serverUrl,
        tokenVm: () => inboxSession(inbox, vm()),
      });
    }
    const key = a.secret === undefined ? null : secretKey(a.secret);
    if (key === null) return undefined;
    return approvalLinks({
      key,
      rules: a.rules,
      linkTtlSeconds: a.linkTtlSeconds,
      publicUrl: a.publicUrl ?? null,
      slackInteractive: a.slack !== undefined,
      vm,
      serverUrl,
    });
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
    const links = Bridge.approvalLinks(o.config, state);
    // managed identity tokens come from the same IMDS as the Scheduled Events (before any sink makes a credential)
    const tokenEndpoint = tokenEndpointFollowsImds(o.config.imds.endpoint, o.config, process.env);
    if (tokenEndpoint !== null)
      o.logger.info(
        { code: 'TOKEN_ENDPOINT', endpoint: tokenEndpoint },
        'managed identity tokens are asked from the configured IMDS endpoint',
      );
    try {
      const shared: Shared = { metrics: new Metrics(store), reads: new ReadBroadcast(o.logger), state };
      const targets = await buildTargets(o.config.sinks, {
        logger: o.logger,
        stdout: o.stdout ?? process.stdout,
        store,
        approval: links,
        dryRun: o.dryRun ?? false,
        vm: () => state.vm,
        reads: shared.reads,
        metrics: shared.metrics.sinkMetrics(),
        preparations: (eventId) => recorded(store, eventId),
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
    return this.#parts.endpoints.approvalUrl;
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
      incarnation: p.document?.incarnation ?? null,
    };
  }

  /** start resumes the outbox, learns who this VM is, and starts polling. */
  async start(): Promise<void> {
    const { logger, config } = this.#o;
    const configured = new Set(this.#targets.map((t) => t.name));
    for (const sink of this.store.outboxSinks()) {
      if (configured.has(sink)) continue;
      const n = this.store.deadLetterSink(sink, `sink "${sink}" is no longer configured`);
      logger.warn({ sink, code: 'SINK_REMOVED', count: n }, 'outbox rows of a sink that is no longer configured were dead-lettered');
    }
    const pruned = this.store.prune(JOURNAL_RETENTION_MS);
    const depth = [...this.store.outboxDepth().values()].reduce((a, b) => a + b, 0);
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
    this.#tasks = [this.#parts.identity.run(this.#abort.signal), this.#parts.poll.run(this.#abort.signal)];
    if (this.#parts.inbox !== null) this.#tasks.push(this.#parts.inbox.run(this.#abort.signal));
  }

  /** stop ends polling, drains in-flight deliveries within `deadlineMs`, and closes everything. */
  async stop(deadlineMs = SHUTDOWN_DEADLINE_MS): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#abort.abort(new Error('bridge stopping'));
    await this.#parts.endpoints.closeApproval();
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
    const target = this.#targets.find((t) => t.name === report.sink);
    if (target !== undefined && (target.prepare || target.undoes)) this.#preparation(report);
    if (report.outcome === 'delivered') this.#parts.auto.delivered(report);
    this.#o.onOutcome?.(report);
  }

  /** preparation keeps where a preparation stands for the event (status, /readyz, chat) and counts it. */
  #preparation(report: OutcomeReport): void {
    const undo = report.transition === 'completed' || report.transition === 'canceled';
    if (report.transition === 'approved') return;
    // a preparation that finished after its occurrence ended (canceled while it ran) changes nothing
    if (!undo && !this.store.occurrenceCurrent(report.eventId, report.ceId)) return;
    const before = this.store.preparations(report.eventId).find((r) => r.sink === report.sink);
    try {
      if (report.outcome === 'delivered') {
        const state = undo ? 'undone' : 'done';
        // an undo of something never prepared (a maintenance seen only once it was over) is not worth a line
        if (undo && before === undefined) return;
        this.store.recordPreparation(report.eventId, report.sink, state, report.detail ?? null);
        if (before?.state === state) return;
        this.metrics.prepares.inc({ sink: report.sink, outcome: state });
        if (state === 'done') this.metrics.prepareSeconds.observe({ sink: report.sink }, Math.max(0, Date.now() - report.createdAt) / 1000);
      } else if (report.outcome === 'dead-letter') {
        this.store.recordPreparation(report.eventId, report.sink, 'failed', report.reason ?? null);
        this.metrics.prepares.inc({ sink: report.sink, outcome: 'failed' });
      } else if (!undo && before?.state !== 'done') {
        this.store.recordPreparation(report.eventId, report.sink, 'pending', report.reason ?? null);
      }
    } catch (err) {
      this.#o.logger.warn({ sink: report.sink, eventId: report.eventId, ...errorFields(err) }, 'cannot record the preparation state');
    }
  }
}
