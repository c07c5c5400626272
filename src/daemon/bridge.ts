/**
 * Bridge wires the parts together: the poll loop around `pollOnce`, the store, the sinks and
 * the dispatcher. It owns the process-wide lifecycle: start (reload state, resume the outbox,
 * learn who this VM is, poll), and stop (stop polling, drain in-flight sends within a
 * deadline, close sinks, IMDS client and store).
 */
import type { Logger } from 'pino';
import { sinkModule } from '../sinks/registry.ts';
import { delivered, type Sink, type SinkConfigBase } from '../sinks/contract.ts';
import type { BridgeConfig } from '../config/schema.ts';
import { Dispatcher, type DispatchTarget, type OutcomeReport } from '../delivery/dispatcher.ts';
import { matchesFilter } from '../pipeline/filter.ts';
import { ImdsClient } from '../imds/client.ts';
import { ImdsError } from '../imds/errors.ts';
import { identityFrom, type IdentityOverride, type VmIdentity } from '../imds/identity.ts';
import { errorFields, scrub } from '../lib/log.ts';
import { secretsOf } from '../config/schema.ts';
import { Store, StoreError, type PendingEvent } from '../store/store.ts';
import { StateLock } from '../store/lock.ts';
import { retryPause, sleep } from '../lib/time.ts';
import { MappingError, transitionOf, type BridgeEvent } from '../pipeline/cloudevent.ts';
import { pollOnce, type Baseline, type PollResult } from '../pipeline/poll.ts';
import { decide, type Decision } from '../approval/policy.ts';
import { ApprovalServer } from '../approval/server.ts';
import { ApprovalService } from '../approval/service.ts';
import { issueToken } from '../approval/signatures.ts';
import { secretKey } from '../lib/standard-webhooks.ts';
import type { ApprovalLinks } from '../sinks/contract.ts';
import type { ScheduledEvent } from '../imds/wire.ts';
import { Metrics } from '../observability/metrics.ts';
import { ObservabilityServer } from '../observability/server.ts';

/** IMDS documents 410 as "retry after some time, for at most 70 s". */
const GONE_LIMIT_MS = 70_000;
const IDENTITY_REFRESH_MS = 6 * 3600_000;
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
  readonly #o: BridgeOptions;
  readonly #targets: DispatchTarget[];
  readonly #dispatcher: Dispatcher;
  readonly #abort = new AbortController();
  #identity: VmIdentity;
  #baseline: Baseline | null;
  #loop: Promise<void> | null = null;
  #identityTask: Promise<void> | null = null;
  #failures = 0;
  #lastError: string | null = null;
  #lastErrorWasImds = true;
  #goodReads = 0;
  #firstPollAt: number | null = null;
  #stopped = false;
  #lock: StateLock | null = null;
  #identityWarned = false;
  readonly approvals: ApprovalService;
  /** The links chat sinks show, when approvals are configured. */
  approvalLinks: ApprovalLinks | null = null;
  readonly metrics: Metrics;
  #observability: ObservabilityServer | null = null;
  #observabilityUrl: string | null = null;
  #server: ApprovalServer | null = null;
  #serverUrl: string | null = null;
  /** Per event: the last policy decision logged, and when an automatic approval was last tried. */
  readonly #decided = new Map<string, { action: string; triedAt: number }>();

  private constructor(o: BridgeOptions, store: Store, targets: DispatchTarget[]) {
    this.#o = o;
    this.store = store;
    this.#targets = targets;
    const imds = o.config.imds;
    this.metrics = new Metrics(store);
    this.client = new ImdsClient({
      endpoint: imds.endpoint,
      requestTimeoutMs: imds.requestTimeoutMs,
      firstRequestTimeoutMs: imds.firstRequestTimeoutMs,
      onRequest: (request, outcome, seconds) => this.metrics.imdsDuration.observe({ request, outcome }, seconds),
    });
    this.#identity = identityFrom(null, this.#override());
    this.#baseline = store.loadDocument();
    const secrets = secretsOf(o.config);
    this.#dispatcher = new Dispatcher({
      store,
      targets,
      logger: o.logger,
      scrub: (text) => scrub(text, secrets),
      onOutcome: (report) => {
        this.#onOutcome(report);
        o.onOutcome?.(report);
      },
    });
    this.approvals = new ApprovalService({
      store,
      client: this.client,
      logger: o.logger,
      document: () => this.#baseline?.document ?? null,
      vm: () => this.#identity,
      dryRun: o.dryRun ?? false,
      onResult: (via, result) => this.metrics.approvals.inc({ via, result }),
      route: (event) => this.#pending([event])[0]!,
      emit: (event, routed, record) => {
        this.metrics.transitions.inc({ transition: 'approved' });
        this.store.recordApproval(record, routed);
        this.#dispatcher.notify();
        this.#o.onCommitted?.([event]);
      },
    });
  }

  /** approvalLinks builds the links chat sinks show, for events the policy leaves to a human. */
  static approvalLinks(config: BridgeConfig, vm: () => VmIdentity, serverUrl: () => string | null = () => null): ApprovalLinks | undefined {
    const a = config.approval;
    const key = a.secret === undefined ? null : secretKey(a.secret);
    if (key === null) return undefined;
    const token = (e: BridgeEvent): string | null => {
      const d = e.data;
      // only the news that an event is (still) Scheduled asks for a decision: a canceled or
      // completed event carries its last data, Scheduled included, and gets no link
      const kind = transitionOf(e);
      if (kind !== 'scheduled' && kind !== 'updated') return null;
      if (d === undefined || d.eventStatus !== 'Scheduled' || d.notBefore === null || !d.affectsThisVm) return null;
      if (decide(a.rules, toScheduledEvent(e), vm().name).action !== 'await') return null;
      const nowS = Math.floor(Date.now() / 1000);
      const expires = Math.min(Math.floor(Date.parse(d.notBefore) / 1000), nowS + a.linkTtlSeconds);
      return expires > nowS ? issueToken(key, { e: d.eventId, v: vm().name, x: expires }) : null;
    };
    return {
      token,
      link: (e) => {
        // Without a publicUrl, links point at the approval server itself (fine on one machine).
        const base = a.publicUrl ?? serverUrl();
        const t = base === null ? null : token(e);
        return t === null ? null : `${base!.replace(/\/+$/, '')}/v1/approve?token=${t}`;
      },
      slackInteractive: a.slack !== undefined,
    };
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
    const targets: DispatchTarget[] = [];
    const holder: { bridge: Bridge | null } = { bridge: null };
    const fallbackVm = identityFrom(null, {});
    const approval = Bridge.approvalLinks(
      o.config,
      () => holder.bridge?.identity ?? fallbackVm,
      () => holder.bridge?.approvalServerUrl ?? null,
    );
    try {
      for (const sc of o.config.sinks as SinkConfigBase[]) {
        const module = sinkModule(sc.type);
        const sink = o.dryRun
          ? dryRunSink(sc.name, o.logger)
          : await module.create(sc, {
              logger: o.logger.child({ sink: sc.name }),
              stdout: o.stdout ?? process.stdout,
              state: store.sinkState(sc.name),
              ...(approval ? { approval } : {}),
            });
        targets.push({
          name: sc.name,
          type: sc.type,
          sink,
          delivery: sink.attemptTimeoutMs === undefined ? sc.delivery : { ...sc.delivery, timeoutMs: sink.attemptTimeoutMs },
          maxBatchSize: sink.maxBatchSize ?? module.maxBatchSize,
        });
      }
      holder.bridge = new Bridge(o, store, targets);
    } catch (err) {
      await Promise.all(targets.map((t) => t.sink.close().catch(() => undefined)));
      store.close();
      lock?.release();
      throw err;
    }
    holder.bridge.#lock = lock;
    holder.bridge.approvalLinks = approval ?? null;
    return holder.bridge;
  }

  /** The approval server's URL, when it runs. */
  get approvalServerUrl(): string | null {
    return this.#serverUrl;
  }

  get identity(): VmIdentity {
    return this.#identity;
  }

  /** The observability endpoint's URL, when it runs. */
  get observabilityUrl(): string | null {
    return this.#observabilityUrl;
  }

  status(): BridgeStatus {
    return {
      ready: this.#goodReads > 0 && this.#failures < this.#o.config.observability.readyFailureThreshold,
      consecutiveFailures: this.#failures,
      lastError: this.#lastError,
      firstPollAt: this.#firstPollAt,
      identity: this.#identity,
      incarnation: this.#baseline?.document.incarnation ?? null,
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
        incarnation: this.#baseline?.document.incarnation ?? null,
        pendingDeliveries: depth,
        prunedJournal: pruned,
        sinks: this.#targets.map((t) => `${t.name}:${t.type}`),
        dryRun: Boolean(this.#o.dryRun),
      },
      'bridge starting',
    );
    this.#dispatcher.start();
    if (this.#baseline !== null) this.metrics.observeDocument(this.#baseline.document);
    if (config.observability.listen !== 'off') {
      const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(config.observability.listen)!;
      this.#observability = new ObservabilityServer(this.metrics, () => {
        const s = this.status();
        const what = this.#lastErrorWasImds ? 'IMDS reads' : 'polls';
        return { ready: s.ready, reason: s.ready ? 'IMDS reads succeed' : this.#goodReads === 0 ? 'no good IMDS read yet' : `${s.consecutiveFailures} ${what} failed in a row (${s.lastError})` };
      });
      try {
        this.#observabilityUrl = await this.#observability.listen(m[1]!, Number(m[2]));
        logger.info({ url: this.#observabilityUrl }, 'metrics and health endpoints listening');
      } catch (err) {
        // Maintenance handling matters more than metrics: say so loudly and go on without them.
        logger.error({ ...errorFields(err), listen: config.observability.listen }, 'cannot serve /metrics, /livez, /readyz; continuing without them');
        this.#observability = null;
      }
    }
    await this.#refreshIdentity();
    const key = config.approval.secret === undefined ? null : secretKey(config.approval.secret);
    if (key !== null) {
      this.#server = new ApprovalServer({
        service: this.approvals,
        store: this.store,
        keys: [key],
        tokenKey: key,
        ...(config.approval.slack ? { slackSigningSecret: config.approval.slack.signingSecret } : {}),
        vm: () => this.#identity,
        document: () => this.#baseline?.document ?? null,
        logger,
        rate: config.server.rateLimit,
        maxConnections: config.server.maxConnections,
      });
      const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(config.server.listen)!;
      this.#serverUrl = await this.#server.listen(m[1]!, Number(m[2]));
      logger.info({ url: this.#serverUrl }, 'approval server listening');
    }
    this.#identityTask = this.#identityLoop();
    this.#loop = this.#pollLoop();
  }

  /** stop ends polling, drains in-flight deliveries within `deadlineMs`, and closes everything. */
  async stop(deadlineMs = 10_000): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#abort.abort(new Error('bridge stopping'));
    await this.#server?.close();
    await this.#loop;
    await this.#observability?.close();
    await this.#identityTask;
    await this.#dispatcher.stop(deadlineMs);
    await this.client.close();
    this.store.close();
    this.#lock?.release();
    this.#o.logger.info({}, 'bridge stopped');
  }

  #override(): IdentityOverride {
    const i = this.#o.config.identity;
    return {
      name: i.vmName,
      resourceId: i.resourceId,
      vmScaleSetName: i.vmScaleSetName,
      subscriptionId: i.subscriptionId,
      resourceGroupName: i.resourceGroupName,
      location: i.location,
      zone: i.zone,
    };
  }

  /**
   * identityComplete: the configuration names everything instance metadata would tell (the
   * name, the resource id, subscription, resource group and location; a scale set name and a
   * zone only exist on some VMs), so the bridge never asks IMDS who it is.
   */
  #identityComplete(): boolean {
    const i = this.#o.config.identity;
    return [i.vmName, i.resourceId, i.subscriptionId, i.resourceGroupName, i.location].every((v) => v !== undefined);
  }

  async #refreshIdentity(): Promise<boolean> {
    if (this.#identityComplete()) return true;
    try {
      const compute = await this.client.getInstanceCompute({ signal: this.#abort.signal });
      const next = identityFrom(compute, this.#override());
      if (next.name !== this.#identity.name || next.resourceId !== this.#identity.resourceId || this.#identity.origin !== 'imds') {
        this.#o.logger.info({ vmName: next.name, resourceId: next.resourceId, origin: next.origin }, 'VM identity');
      }
      this.#identity = next;
      this.#identityWarned = false;
      return true;
    } catch (err) {
      if (this.#abort.signal.aborted) return false;
      // said once per outage; the retries that follow are debug lines
      const fields = { ...errorFields(err), vmName: this.#identity.name, origin: this.#identity.origin };
      if (this.#identityWarned) {
        this.#o.logger.debug(fields, 'still cannot read the VM identity from IMDS');
      } else {
        this.#identityWarned = true;
        this.#o.logger.warn(fields, 'cannot read the VM identity from IMDS; using the configured name or the host name (said once until it succeeds)');
      }
      return false;
    }
  }

  async #identityLoop(): Promise<void> {
    if (this.#identityComplete()) return;
    const signal = this.#abort.signal;
    let ok = this.#identity.origin === 'imds';
    while (!signal.aborted) {
      try {
        await sleep(ok ? IDENTITY_REFRESH_MS : (this.#o.identityRetryMs ?? IDENTITY_RETRY_MS), signal);
      } catch {
        return;
      }
      ok = await this.#refreshIdentity();
    }
  }

  async #pollLoop(): Promise<void> {
    const { logger, config } = this.#o;
    const signal = this.#abort.signal;
    const interval = config.imds.pollIntervalMs;
    let goneSince: number | null = null;
    let goneReported = false;
    while (!signal.aborted) {
      // The interval runs from the end of one poll to the start of the next, so a slow answer or a
      // wait for the shared rate budget never bunches the following polls together.
      let wait: number;
      this.#firstPollAt ??= Date.now();
      try {
        const result = await pollOnce(this.client, this.#baseline, this.#identity, { signal, priorOccurrences: (key) => this.store.priorOccurrences(key) });
        this.#apply(result);
        this.metrics.polls.inc({ result: result.kind, code: '' });
        this.metrics.consecutiveFailures.set(0);
        if (this.#failures > 0) logger.info({ failures: this.#failures }, 'polls recovered');
        this.#failures = 0;
        this.#lastError = null;
        this.#goodReads += 1;
        goneSince = null;
        goneReported = false;
        wait = interval;
      } catch (err) {
        if (signal.aborted) break;
        this.#failures += 1;
        const f = errorFields(err);
        const imds = err instanceof ImdsError;
        this.metrics.polls.inc({ result: 'error', code: f.code });
        // only a failed IMDS read counts as one: a store or mapping failure followed a good read
        this.metrics.consecutiveFailures.set(imds ? this.#failures : 0);
        this.#lastError = f.code;
        this.#lastErrorWasImds = imds;
        wait = retryPause(this.#failures, {
          intervalMs: interval,
          maxPauseMs: config.imds.maxRetryPauseMs,
          retryAfterMs: imds ? err.retryAfterMs : undefined,
        });
        if (imds && err.code === 'IMDS_GONE') {
          goneSince ??= Date.now();
          if (!goneReported && Date.now() - goneSince > GONE_LIMIT_MS) {
            goneReported = true;
            logger.error({ ...f, sinceMs: Date.now() - goneSince }, 'IMDS has answered 410 for longer than the documented 70 s; still retrying');
          }
        } else {
          goneSince = null;
        }
        if (imds) {
          logger.warn({ ...f, failures: this.#failures, retryInMs: wait }, 'IMDS read failed; no transitions from this poll');
        } else if (err instanceof StoreError) {
          logger.error({ ...f, failures: this.#failures, retryInMs: wait }, 'cannot write the state database; the change is committed on a later poll');
        } else {
          // IMDS answered well; turning its document into CloudEvents failed: a defect of ours
          logger.error({ ...f, failures: this.#failures, retryInMs: wait }, 'cannot map the IMDS document to CloudEvents; nothing was committed, the next poll tries again');
        }
      }
      try {
        await sleep(wait, signal);
      } catch {
        break;
      }
    }
  }

  #apply(result: PollResult): void {
    const { logger } = this.#o;
    if (result.kind === 'unchanged') {
      if (result.etagChanged && this.#baseline !== null) {
        this.store.saveEtag(result.etag);
        this.#baseline = { document: this.#baseline.document, etag: result.etag };
      }
      return;
    }
    const previous = this.#baseline?.document ?? null;
    if (result.duplicates > 0) {
      logger.warn({ code: 'IMDS_DUPLICATE_EVENT_IDS', count: result.duplicates }, 'IMDS listed an EventId more than once; kept the entry furthest along');
    }
    if (previous !== null && result.document.incarnation < previous.incarnation) {
      logger.info({ from: previous.incarnation, to: result.document.incarnation }, 'DocumentIncarnation went backwards; diffing by EventId against the new baseline');
    }
    let pending: PendingEvent[];
    try {
      pending = this.#pending(result.events).map((p, i) => ({ ...p, occurrence: result.occurrences[i] }));
    } catch (err) {
      throw new MappingError(`cannot route the CloudEvents of IMDS document ${result.document.incarnation}: ${(err as Error).message}`, err);
    }
    this.metrics.observeDocument(result.document);
    for (const p of pending) this.metrics.transitions.inc({ transition: p.transition });
    this.store.commit({ document: result.document, etag: result.etag, observedAt: new Date().toISOString(), events: pending });
    this.#baseline = { document: result.document, etag: result.etag };
    for (const p of pending) {
      logger.info(
        { transition: p.transition, eventId: p.eventId, ceId: p.id, incarnation: result.document.incarnation, sinks: p.sinks },
        `event ${p.transition}`,
      );
    }
    if (pending.length > 0) {
      this.#dispatcher.notify();
      this.#o.onCommitted?.(result.events);
    }
    this.#applyPolicy(result.document.events);
  }

  /** pending routes CloudEvents to the sinks whose filters they pass. */
  #pending(events: readonly BridgeEvent[]): PendingEvent[] {
    const vmName = this.#identity.name;
    return events.map((e) => {
      const d = e.data!;
      const transition = transitionOf(e);
      const subject = { transition, eventType: d.eventType, eventSource: d.eventSource, resources: d.resources };
      return {
        id: e.id,
        eventId: d.eventId,
        transition,
        json: JSON.stringify(e),
        sinks: this.#targets.filter((t) => matchesFilter(this.#sinkFilter(t.name), subject, vmName)).map((t) => t.name),
      };
    });
  }

  /** applyPolicy decides, for every Scheduled event not yet approved, whether to approve it now. */
  #applyPolicy(events: readonly ScheduledEvent[]): void {
    const rules = this.#o.config.approval.rules;
    const now = Date.now();
    for (const e of events) {
      if (e.eventStatus !== 'Scheduled' || this.store.approval(e.eventId) !== null) continue;
      const d = decide(rules, e, this.#identity.name, now);
      const seen = this.#decided.get(e.eventId);
      if (seen === undefined || seen.action !== d.action) {
        this.#o.logger.info({ eventId: e.eventId, action: d.action, rule: d.rule, reason: d.reason }, `approval policy: ${d.action}`);
      }
      const entry = seen && seen.action === d.action ? seen : { action: d.action, triedAt: 0 };
      this.#decided.set(e.eventId, entry);
      if (d.action === 'approve' || (d.action === 'approveAfterHooks' && this.#hooksDone(e))) {
        if (now - entry.triedAt < 30_000) continue;
        entry.triedAt = now;
        const via = d.action === 'approve' ? 'policy' : 'hooks';
        this.approvals.approve(e.eventId, { by: describeRule(d), via }, this.#abort.signal).catch((err: unknown) => {
          this.#o.logger.warn({ eventId: e.eventId, ...errorFields(err) }, 'automatic approval failed; it will be tried again');
        });
      }
    }
  }

  /** hooksDone: every preparation hook (exec sink with prepare: true) that takes this event has succeeded. */
  #hooksDone(e: ScheduledEvent): boolean {
    const subject = { transition: 'scheduled', eventType: e.eventType, eventSource: e.eventSource, resources: e.resources };
    const required = (this.#o.config.sinks as (SinkConfigBase & { prepare?: boolean })[])
      .filter((s) => s.type === 'exec' && s.prepare === true && matchesFilter(s.filter, subject, this.#identity.name))
      .map((s) => s.name);
    const done = this.store.hooksDone(e.eventId);
    return required.every((name) => done.has(name));
  }

  #onOutcome(report: OutcomeReport): void {
    this.metrics.deliveries.inc({ sink: report.sink, outcome: report.outcome });
    this.metrics.deliveryDuration.observe({ sink: report.sink }, report.durationMs / 1000);
    if (report.outcome !== 'delivered') return;
    this.metrics.changeToDelivery.observe({ sink: report.sink }, Math.max(0, Date.now() - report.createdAt) / 1000);
    const sc = (this.#o.config.sinks as (SinkConfigBase & { prepare?: boolean })[]).find((s) => s.name === report.sink);
    if (sc?.type !== 'exec' || sc.prepare !== true) return;
    const transition = report.ceId.split('/')[1];
    if (transition !== 'scheduled' && transition !== 'updated') return;
    this.store.hookSucceeded(report.eventId, report.sink);
    this.#o.logger.info({ eventId: report.eventId, sink: report.sink }, 'preparation hook succeeded');
    this.#applyPolicy((this.#baseline?.document.events ?? []).filter((x) => x.eventId === report.eventId));
  }

  #sinkFilter(name: string) {
    return (this.#o.config.sinks as SinkConfigBase[]).find((s) => s.name === name)!.filter;
  }
}

function describeRule(d: Decision): string {
  return d.rule === null ? 'policy' : `policy ${d.reason}`;
}

/** toScheduledEvent reads the event back from a CloudEvent's data (for decisions on delivered events). */
export function toScheduledEvent(e: BridgeEvent): ScheduledEvent {
  const d = e.data!;
  return {
    eventId: d.eventId,
    eventType: d.eventType,
    eventStatus: d.eventStatus,
    resourceType: d.resourceType,
    resources: d.resources,
    notBefore: d.notBefore,
    description: d.description,
    eventSource: d.eventSource,
    durationInSeconds: d.durationInSeconds,
    raw: d.raw,
  };
}

/** dryRunSink logs what would be delivered and counts it as delivered. */
function dryRunSink(name: string, logger: Logger): Sink {
  return {
    async send(events) {
      for (const e of events) logger.info({ sink: name, ceId: e.id, type: e.type, subject: e.subject }, 'dry run: would deliver');
      return events.map(() => delivered);
    },
    async close() {},
  };
}
