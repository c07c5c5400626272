/**
 * Bridge owns the daemon's lifecycle; compose.ts composes it.
 *
 * - create: open the store (one daemon per state database), then compose: every sink is built.
 * - start: resume the outbox, learn who this VM is, start the HTTP servers and the features, poll.
 * - stop: stop polling and the features, drain in-flight sends within a deadline, close sinks,
 *   IMDS client and store.
 *
 * The work itself lives beside it: PollLoop (poll and commit), IdentityLoop (who this VM is),
 * AutoApprover (policy and preparation hooks), Router (which sinks take an event), the
 * Dispatcher (delivery), the ApprovalService (every approval), and the features (feature.ts).
 */
import type { InboxStatus } from '../fleet/inbox/inbox.ts';
import type { BudgetState } from '../fleet/budget/budget.ts';
import type { ApprovalService } from '../approval/service.ts';
import { SHUTDOWN_DEADLINE_MS } from '../delivery/dispatcher.ts';
import type { ImdsClient } from '../imds/client.ts';
import type { VmIdentity } from '../imds/identity.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { ApprovalLinks } from '../sinks/contract.ts';
import { StateLock } from '../store/lock.ts';
import { Store } from '../store/store.ts';
import { compose, type Parts } from './compose.ts';
import type { BridgeOptions } from './options.ts';
import { tokenEndpointFollowsImds } from '../azure/credentials.ts';

export type { BridgeOptions } from './options.ts';

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
  readonly client: ImdsClient;
  readonly approvals: ApprovalService;
  readonly metrics: Metrics;
  /** The links chat sinks show, when approvals are configured. */
  readonly approvalLinks: ApprovalLinks | null;
  readonly #o: BridgeOptions;
  readonly #lock: StateLock | null;
  readonly #parts: Parts;
  readonly #abort: AbortController;
  #tasks: Promise<void>[] = [];
  #stopped = false;

  private constructor(o: BridgeOptions, store: Store, lock: StateLock | null, parts: Parts, abort: AbortController) {
    this.#o = o;
    this.store = store;
    this.#lock = lock;
    this.#parts = parts;
    this.#abort = abort;
    ({ metrics: this.metrics, client: this.client, approvals: this.approvals, links: this.approvalLinks } = parts);
  }

  /** create opens the store and composes the daemon (compose.ts): every sink is built; it connects to nothing yet. */
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
    // managed identity tokens come from the same IMDS as the Scheduled Events (before any sink makes a credential)
    const tokenEndpoint = tokenEndpointFollowsImds(o.config.imds.endpoint, o.config, process.env);
    if (tokenEndpoint !== null)
      o.logger.info(
        { code: 'TOKEN_ENDPOINT', endpoint: tokenEndpoint },
        'managed identity tokens are asked from the configured IMDS endpoint',
      );
    const abort = new AbortController();
    try {
      return new Bridge(o, store, lock, await compose(o, store, abort.signal), abort);
    } catch (err) {
      store.close();
      lock?.release();
      throw err;
    }
  }

  /** The approval server's URL, when it runs. */
  get approvalServerUrl(): string | null {
    return this.#parts.state.approvalServerUrl;
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
    return this.#parts.state.vm;
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
      incarnation: this.#parts.state.document?.incarnation ?? null,
    };
  }

  /** start resumes the outbox, learns who this VM is, and starts polling. */
  async start(): Promise<void> {
    const { logger, config } = this.#o;
    const configured = new Set(config.sinks.map((s) => s.name));
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
        incarnation: this.#parts.state.document?.incarnation ?? null,
        pendingDeliveries: depth,
        prunedJournal: pruned,
        sinks: config.sinks.map((s) => `${s.name}:${s.type}`),
        dryRun: Boolean(this.#o.dryRun),
      },
      'bridge starting',
    );
    this.#parts.dispatcher.start();
    const { document } = this.#parts.state;
    if (document !== null) this.metrics.observeDocument(document);
    await this.#parts.endpoints.startObservability();
    await this.#parts.identity.refresh(this.#abort.signal);
    // the stored document's events were routed by the name known then: a VM whose name is known
    // now (read, or configured anew) gives a sink they match its transitions, once
    this.#parts.router.again('the name of the last run');
    await this.#parts.endpoints.startApproval();
    const signal = this.#abort.signal;
    for (const f of this.#parts.features) await f.start?.(this.#parts);
    this.#tasks = [this.#parts.identity.run(signal), this.#parts.poll.run(signal)];
    for (const f of this.#parts.features) if (f.run !== undefined) this.#tasks.push(f.run(signal));
  }

  /** stop ends polling, drains in-flight deliveries within `deadlineMs`, and closes everything. */
  async stop(deadlineMs = SHUTDOWN_DEADLINE_MS): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#abort.abort(new Error('bridge stopping'));
    await this.#parts.endpoints.closeApproval();
    for (const f of this.#parts.features) await f.close?.();
    await Promise.all(this.#tasks);
    await this.#parts.endpoints.closeObservability();
    await this.#parts.dispatcher.stop(deadlineMs);
    await this.client.close();
    this.store.close();
    this.#lock?.release();
    this.#o.logger.info({}, 'bridge stopped');
  }
}
