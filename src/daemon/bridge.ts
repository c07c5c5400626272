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
import type { Logger } from 'pino';
import { approvalLinks } from '../approval/links.ts';
import { ApprovalServer } from '../approval/server.ts';
import { ApprovalService } from '../approval/service.ts';
import type { BridgeConfig } from '../config/schema.ts';
import { secretsOf } from '../config/schema.ts';
import { Dispatcher, SHUTDOWN_DEADLINE_MS, type DispatchTarget, type OutcomeReport } from '../delivery/dispatcher.ts';
import { route } from '../delivery/route.ts';
import { ImdsClient } from '../imds/client.ts';
import { identityFrom, type VmIdentity } from '../imds/identity.ts';
import { errorFields } from '../lib/errors.ts';
import { scrub } from '../lib/log.ts';
import { secretKey } from '../lib/standard-webhooks.ts';
import { parseHostPort } from '../lib/validators.ts';
import { Metrics } from '../observability/metrics.ts';
import { ObservabilityServer } from '../observability/server.ts';
import type { BridgeEvent } from '../pipeline/cloudevent.ts';
import type { ApprovalLinks } from '../sinks/contract.ts';
import { StateLock } from '../store/lock.ts';
import { Store } from '../store/store.ts';
import { AutoApprover } from './auto-approver.ts';
import { IdentityLoop } from './identity-loop.ts';
import { PollLoop } from './poll-loop.ts';
import { buildTargets } from './targets.ts';

const IDENTITY_RETRY_MS = 60_000;
const JOURNAL_RETENTION_MS = 7 * 24 * 3600_000;

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
  /** How soon a failed identity read is tried again (default 60 s; tests shorten it). */
  identityRetryMs?: number;
}

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
  readonly client: ImdsClient;
  readonly approvals: ApprovalService;
  readonly metrics: Metrics;
  /** The links chat sinks show, when approvals are configured. */
  readonly approvalLinks: ApprovalLinks | null;
  readonly #o: BridgeOptions;
  readonly #targets: readonly DispatchTarget[];
  readonly #lock: StateLock | null;
  readonly #dispatcher: Dispatcher;
  readonly #identity: IdentityLoop;
  readonly #poll: PollLoop;
  readonly #auto: AutoApprover;
  readonly #abort = new AbortController();
  #tasks: Promise<void>[] = [];
  #stopped = false;
  #observability: ObservabilityServer | null = null;
  #observabilityUrl: string | null = null;
  #server: ApprovalServer | null = null;
  #serverUrl: string | null = null;

  private constructor(o: BridgeOptions, store: Store, lock: StateLock | null, targets: readonly DispatchTarget[], links: ApprovalLinks | null) {
    this.#o = o;
    this.store = store;
    this.#lock = lock;
    this.#targets = targets;
    this.approvalLinks = links;
    const { imds, identity: i } = o.config;
    this.metrics = new Metrics(store);
    this.client = new ImdsClient({ ...imds, onRequest: (request, outcome, seconds) => this.metrics.imdsDuration.observe({ request, outcome }, seconds) });
    this.#identity = new IdentityLoop({
      client: this.client,
      logger: o.logger,
      override: { name: i.vmName, resourceId: i.resourceId, vmScaleSetName: i.vmScaleSetName, subscriptionId: i.subscriptionId, resourceGroupName: i.resourceGroupName, location: i.location, zone: i.zone },
      retryMs: o.identityRetryMs ?? IDENTITY_RETRY_MS,
    });
    const secrets = secretsOf(o.config);
    this.#dispatcher = new Dispatcher({
      store,
      targets,
      logger: o.logger,
      scrub: (text) => scrub(text, secrets),
      onOutcome: (report) => this.#onOutcome(report),
    });
    const routeAll = (events: readonly BridgeEvent[]) => route(events, targets, this.identity.name);
    this.#poll = new PollLoop({
      client: this.client,
      store,
      metrics: this.metrics,
      logger: o.logger,
      intervalMs: imds.pollIntervalMs,
      maxRetryPauseMs: imds.maxRetryPauseMs,
      identity: () => this.identity,
      route: routeAll,
      committed: (events, document) => {
        if (events.length > 0) {
          this.#dispatcher.notify();
          this.#o.onCommitted?.(events);
        }
        this.#auto.apply(document.events);
      },
    });
    this.approvals = new ApprovalService({
      store,
      client: this.client,
      logger: o.logger,
      document: () => this.#poll.document,
      vm: () => this.identity,
      dryRun: o.dryRun ?? false,
      onResult: (via, result) => this.metrics.approvals.inc({ via, result }),
      route: (event) => routeAll([event])[0]!,
      emit: (event, routed, record) => {
        this.metrics.transitions.inc({ transition: 'approved' });
        this.store.recordApproval(record, routed);
        this.#dispatcher.notify();
        this.#o.onCommitted?.([event]);
      },
    });
    this.#auto = new AutoApprover({
      store,
      approvals: this.approvals,
      logger: o.logger,
      rules: o.config.approval.rules,
      targets,
      vmName: () => this.identity.name,
      events: () => this.#poll.document?.events ?? [],
      signal: this.#abort.signal,
    });
  }

  /** approvalLinks builds the links chat sinks show, for events the policy leaves to a human. */
  static approvalLinks(config: BridgeConfig, vm: () => VmIdentity, serverUrl: () => string | null = () => null): ApprovalLinks | undefined {
    const a = config.approval;
    const key = a.secret === undefined ? null : secretKey(a.secret);
    if (key === null) return undefined;
    return approvalLinks({ key, rules: a.rules, linkTtlSeconds: a.linkTtlSeconds, publicUrl: a.publicUrl ?? null, slackInteractive: a.slack !== undefined, vm, serverUrl });
  }

  /** create opens the store and builds every sink; it connects to nothing yet. */
  static async create(o: BridgeOptions): Promise<Bridge> {
    const store = Store.open(o.dryRun ? ':memory:' : o.config.state.path);
    // one daemon per state database: a second one would deliver everything again
    let lock: StateLock | null = null;
    try {
      lock = o.dryRun ? null : StateLock.acquire(o.config.state.path);
    } catch (err) {
      store.close();
      throw err;
    }
    const holder: { bridge: Bridge | null } = { bridge: null };
    const fallbackVm = identityFrom(null, {});
    const links = Bridge.approvalLinks(o.config, () => holder.bridge?.identity ?? fallbackVm, () => holder.bridge?.approvalServerUrl ?? null);
    try {
      const targets = await buildTargets(o.config.sinks, { logger: o.logger, stdout: o.stdout ?? process.stdout, store, approval: links, dryRun: o.dryRun ?? false });
      holder.bridge = new Bridge(o, store, lock, targets, links ?? null);
    } catch (err) {
      store.close();
      lock?.release();
      throw err;
    }
    return holder.bridge;
  }

  /** The approval server's URL, when it runs. */
  get approvalServerUrl(): string | null {
    return this.#serverUrl;
  }

  get identity(): VmIdentity {
    return this.#identity.current;
  }

  /** The observability endpoint's URL, when it runs. */
  get observabilityUrl(): string | null {
    return this.#observabilityUrl;
  }

  status(): BridgeStatus {
    const p = this.#poll;
    return {
      ready: p.goodReads > 0 && p.failures < this.#o.config.observability.readyFailureThreshold,
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
        incarnation: this.#poll.document?.incarnation ?? null,
        pendingDeliveries: depth,
        prunedJournal: pruned,
        sinks: this.#targets.map((t) => `${t.name}:${t.type}`),
        dryRun: Boolean(this.#o.dryRun),
      },
      'bridge starting',
    );
    this.#dispatcher.start();
    if (this.#poll.document !== null) this.metrics.observeDocument(this.#poll.document);
    const observeAt = parseHostPort(config.observability.listen);
    if (observeAt !== null) {
      this.#observability = new ObservabilityServer(this.metrics, () => {
        const ready = this.status().ready;
        return { ready, reason: this.#poll.reason(ready) };
      });
      try {
        this.#observabilityUrl = await this.#observability.listen(observeAt.host, observeAt.port);
        logger.info({ url: this.#observabilityUrl }, 'metrics and health endpoints listening');
      } catch (err) {
        // Maintenance handling matters more than metrics: say so loudly and go on without them.
        logger.error({ ...errorFields(err), listen: config.observability.listen }, 'cannot serve /metrics, /livez, /readyz; continuing without them');
        this.#observability = null;
      }
    }
    await this.#identity.refresh(this.#abort.signal);
    const key = config.approval.secret === undefined ? null : secretKey(config.approval.secret);
    if (key !== null) {
      this.#server = new ApprovalServer({
        service: this.approvals,
        store: this.store,
        keys: [key],
        tokenKey: key,
        ...(config.approval.slack ? { slackSigningSecret: config.approval.slack.signingSecret } : {}),
        vm: () => this.identity,
        document: () => this.#poll.document,
        logger,
        rate: config.server.rateLimit,
        maxConnections: config.server.maxConnections,
      });
      const at = parseHostPort(config.server.listen)!;
      this.#serverUrl = await this.#server.listen(at.host, at.port);
      logger.info({ url: this.#serverUrl }, 'approval server listening');
    }
    this.#tasks = [this.#identity.run(this.#abort.signal), this.#poll.run(this.#abort.signal)];
  }

  /** stop ends polling, drains in-flight deliveries within `deadlineMs`, and closes everything. */
  async stop(deadlineMs = SHUTDOWN_DEADLINE_MS): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#abort.abort(new Error('bridge stopping'));
    await this.#server?.close();
    await Promise.all(this.#tasks);
    await this.#observability?.close();
    await this.#dispatcher.stop(deadlineMs);
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
      this.#auto.delivered(report);
    }
    this.#o.onOutcome?.(report);
  }
}
