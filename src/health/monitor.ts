/**
 * HealthMonitor runs the health block's checks (config.ts) every `intervalSeconds`, each with a
 * deadline, and says since when this VM has been healthy or not: an HTTP endpoint that must
 * answer an expected status, a command that must exit 0, a Prometheus query that must answer no
 * sample (https://prometheus.io/docs/prometheus/latest/querying/api/), the Kubernetes Node and
 * its pods Ready. A fleet budget keeps a member's slot until it has been healthy without a break
 * for `settleSeconds` after its maintenance and counts an unhealthy member as unavailable, as a
 * disruption budget counts a pod that is not Ready; the probe sink (`health: true`) answers 200
 * only while it is healthy.
 */
import { spawn } from 'node:child_process';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { HealthState, HealthView } from '../sinks/contract.ts';
import type { HealthConfig } from './config.ts';
import { KubernetesHealth } from './kubernetes.ts';
import { messageOf } from '../lib/errors.ts';
import { HttpClient } from '../lib/http-client.ts';
import { printable, shownUrl } from '../lib/printable.ts';
import { killTree, ownGroup } from '../lib/process-tree.ts';
import { sleep, withDeadline } from '../lib/time.ts';

/**
 * What Prometheus's query API answers (https://prometheus.io/docs/prometheus/latest/querying/api/#format-overview):
 * its status and error, when they are text, and its data, read apart.
 */
const PrometheusAnswer = z
  .object({ status: z.string().optional().catch(undefined), error: z.string().optional().catch(undefined), data: z.unknown().optional() })
  .catch({ status: undefined, error: undefined, data: undefined });
/** A query's result: a vector or a matrix of series, or a scalar or a string (no series). */
const PrometheusData = z.discriminatedUnion('resultType', [
  z.object({ resultType: z.enum(['vector', 'matrix']), result: z.array(z.unknown()) }),
  z.object({ resultType: z.enum(['scalar', 'string']), result: z.unknown() }),
]);

/** How long one check may take at most: its deadline on the client. */
const CHECK_DEADLINE_MS = 10_000;

export class HealthMonitor implements HealthView {
  readonly #config: HealthConfig;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #http = new HttpClient({ proxy: 'none', maxSockets: 2, keepAliveMs: 5000 });
  readonly #kubernetes: KubernetesHealth | null;
  readonly #listeners = new Set<(state: HealthState) => void>();
  #state: HealthState | null = null;

  /** resourceId: this VM's resource id, which finds its Kubernetes Node when no name is given. */
  constructor(config: HealthConfig, logger: Logger, now: () => number = Date.now, resourceId: () => string | null = () => null) {
    this.#config = config;
    this.#logger = logger;
    this.#now = now;
    this.#kubernetes = config.kubernetes === undefined ? null : new KubernetesHealth(config.kubernetes, resourceId);
  }

  get config(): HealthConfig {
    return this.#config;
  }

  /** subscribe calls `listener` after every check; it returns the unsubscribe. */
  subscribe(listener: (state: HealthState) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** state: the health as last checked; null before the first check. */
  get state(): HealthState | null {
    return this.#state;
  }

  /** healthyFor: how long the member has been healthy without a break (0 when it is not, or not checked yet). */
  healthyFor(now: number = this.#now()): number {
    const s = this.#state;
    return s === null || !s.healthy ? 0 : Math.max(0, now - Date.parse(s.since));
  }

  /** check runs every check once, and returns the health it found. */
  async check(signal?: AbortSignal): Promise<HealthState> {
    const ms = Math.min(CHECK_DEADLINE_MS, this.#config.intervalSeconds * 1000);
    const k = this.#kubernetes;
    const checks: ((signal: AbortSignal) => Promise<string | null>)[] = [
      ...(this.#config.http ?? []).map((c) => (s: AbortSignal) => this.#httpCheck(c.url, c.expect, s)),
      ...(this.#config.prometheus ?? []).map((c) => (s: AbortSignal) => this.#prometheusCheck(c.url, c.query, s)),
      ...(this.#config.exec ?? []).map((c) => (s: AbortSignal) => execCheck(c.command, s)),
      ...(k === null ? [] : [(s: AbortSignal) => k.run(s)]),
    ];
    // every check at once, each with its deadline; what each finds wrong, in words
    const problems = (await Promise.all(checks.map((run) => this.#bounded(ms, signal, run)))).filter((why) => why !== null);
    const healthy = problems.length === 0;
    const before = this.#state;
    if (before === null || before.healthy !== healthy) {
      this.#state = { healthy, since: new Date(this.#now()).toISOString(), ...(healthy ? {} : { detail: problems.join('; ') }) };
      this.#logger.info(
        { healthy, detail: problems },
        healthy ? 'fleet budget: this member is healthy' : 'fleet budget: this member is not healthy',
      );
    } else if (!healthy) this.#state = { ...before, detail: problems.join('; ') };
    for (const listener of this.#listeners) listener(this.#state!);
    return this.#state!;
  }

  /** run checks every intervalSeconds until the signal aborts. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.check(signal);
      await sleep(this.#config.intervalSeconds * 1000, signal).catch(() => undefined);
    }
  }

  close(): void {
    this.#http.close();
  }

  async #bounded(ms: number, outer: AbortSignal | undefined, run: (signal: AbortSignal) => Promise<string | null>): Promise<string | null> {
    const deadline = new AbortController();
    const signal = outer === undefined ? deadline.signal : AbortSignal.any([outer, deadline.signal]);
    try {
      return await withDeadline(run(signal), ms, () => {
        deadline.abort();
        return new Error(`no answer within ${ms / 1000} s`);
      });
    } catch (err) {
      return messageOf(err);
    }
  }

  /** prometheusCheck asks Prometheus's HTTP API (GET /api/v1/query): an error, any sample, or an answer the API never gives is not healthy. */
  async #prometheusCheck(base: string, query: string, signal: AbortSignal): Promise<string | null> {
    const url = new URL('api/v1/query', base.endsWith('/') ? base : `${base}/`);
    url.searchParams.set('query', query);
    const res = await this.#http.request(url, { method: 'GET', signal, maxBodyBytes: 1024 * 1024, onOverflow: 'destroy' });
    let json: unknown;
    try {
      json = JSON.parse(res.bytes.toString('utf8'));
    } catch {
      return `Prometheus answered ${res.status} with no JSON`;
    }
    const answer = PrometheusAnswer.parse(json);
    if (res.status !== 200 || answer.status !== 'success')
      return `Prometheus answered ${res.status}: ${printable(answer.error ?? answer.status ?? 'no status', 200)}`;
    const data = PrometheusData.safeParse(answer.data);
    if (!data.success) return 'Prometheus answered 200 with no result its query API describes';
    // an instant vector (or a range's matrix): each series is a sample of what is wrong
    const d = data.data;
    const samples = d.resultType === 'vector' || d.resultType === 'matrix' ? d.result.length : 0;
    return samples === 0 ? null : `${query}: ${samples} sample${samples === 1 ? '' : 's'}`;
  }

  /** httpCheck asks the endpoint (with the user and password its URL may hold); it is described by its origin and path alone. */
  async #httpCheck(url: string, expect: number, signal: AbortSignal): Promise<string | null> {
    const res = await this.#http.request(url, { method: 'GET', signal, maxBodyBytes: 4096, onOverflow: 'destroy' });
    return res.status === expect ? null : `${shownUrl(url)} answered ${res.status}, not ${expect}`;
  }
}

/**
 * execCheck runs a command; null when it exits 0, else why not. Stopped (its deadline, or the
 * daemon stopping), it is killed with every process it started (process-tree.ts), so a check
 * that hangs leaves nothing behind.
 */
function execCheck(command: readonly string[], signal: AbortSignal): Promise<string | null> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(`${command[0]}: not started, the check was stopped`);
    const child = spawn(command[0]!, command.slice(1), { stdio: 'ignore', windowsHide: true, ...ownGroup });
    const stop = () => {
      if (child.pid !== undefined) killTree(child.pid);
    };
    signal.addEventListener('abort', stop, { once: true });
    const done = (why: string | null) => {
      signal.removeEventListener('abort', stop);
      resolve(why);
    };
    child.on('error', (err) => done(`${command[0]}: ${messageOf(err)}`));
    child.on('exit', (code, sig) => done(code === 0 ? null : `${command[0]} exited ${code ?? sig}`));
  });
}
