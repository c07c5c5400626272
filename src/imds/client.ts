/**
 * ImdsClient speaks to the Instance Metadata Service: one method per request, each a single
 * attempt that either returns a validated value or throws an ImdsError. Loops, backoff and
 * retries live in the callers.
 *
 * - Every request carries `Metadata: true` and an `api-version`, and nothing else that IMDS
 *   rejects (no X-Forwarded-For).
 * - Requests go through a dedicated keep-alive agent, never a proxy, whatever HTTP_PROXY,
 *   HTTPS_PROXY or NODE_USE_ENV_PROXY say: IMDS must not be reached through a proxy.
 * - Every request takes one token from the shared 5 requests/s budget.
 * - The first Scheduled Events request may take up to 2 minutes (it enables the feature for
 *   the VM); later ones use the short timeout.
 * - When IMDS offers an ETag it is sent back as If-None-Match and a 304 means "unchanged".
 *
 * @see https://learn.microsoft.com/azure/virtual-machines/instance-metadata-service
 */
import { text } from '../lib/http-body.ts';
import { HttpClient } from '../lib/http-client.ts';
import { deadline, parseRetryAfter } from '../lib/time.ts';
import { codeForStatus, ImdsError } from './errors.ts';
import { RateBudget } from './rate-budget.ts';
import {
  INSTANCE_API_VERSION,
  SCHEDULED_EVENTS_API_VERSION,
  toDomainDocument,
  WireDocument,
  WireInstanceCompute,
  type EventsDocument,
} from './wire.ts';

/** Azure's IMDS, link-local on every VM: Scheduled Events, instance metadata and managed identity tokens. */
export const IMDS_ENDPOINT = 'http://169.254.169.254';
const MAX_BODY_BYTES = 1024 * 1024;

/** ImdsClientOptions: the `imds` section of the configuration, defaults applied there. */
export interface ImdsClientOptions {
  readonly endpoint: string;
  readonly requestTimeoutMs: number;
  readonly firstRequestTimeoutMs: number;
  /** The shared budget of IMDS requests (default: the documented 5 requests per second). */
  readonly budget?: RateBudget;
  /** Called after every request with its kind, outcome (HTTP status or error code) and duration. */
  onRequest?: (request: 'scheduledevents' | 'start' | 'compute', outcome: string, seconds: number) => void;
}

export type ScheduledEventsRead =
  | { readonly kind: 'document'; readonly document: EventsDocument; readonly etag: string | null; readonly duplicates: number }
  | { readonly kind: 'not-modified' };

export class ImdsClient {
  readonly endpoint: string;
  readonly budget: RateBudget;
  readonly #http: HttpClient;
  readonly #requestTimeoutMs: number;
  readonly #firstRequestTimeoutMs: number;
  #answered = false;
  readonly #onRequest: ImdsClientOptions['onRequest'];

  constructor(options: ImdsClientOptions) {
    this.endpoint = options.endpoint.replace(/\/+$/, '');
    this.budget = options.budget ?? new RateBudget(5);
    this.#requestTimeoutMs = options.requestTimeoutMs;
    this.#firstRequestTimeoutMs = options.firstRequestTimeoutMs;
    this.#onRequest = options.onRequest;
    // Never a proxy; the connection is kept alive between polls (a new connection for every
    // poll was about a quarter of the daemon's idle CPU).
    this.#http = new HttpClient({ proxy: 'none', maxSockets: 4, keepAliveMs: 30_000 });
  }

  /** getScheduledEvents reads the document once. `etag` is the one of the last document read. */
  async getScheduledEvents(options: { etag?: string | null; signal?: AbortSignal } = {}): Promise<ScheduledEventsRead> {
    const headers: Record<string, string> = {};
    if (options.etag) headers['if-none-match'] = options.etag;
    const timeoutMs = this.#answered ? this.#requestTimeoutMs : this.#firstRequestTimeoutMs;
    const res = await this.#send('GET', `/metadata/scheduledevents?api-version=${SCHEDULED_EVENTS_API_VERSION}`, {
      headers,
      timeoutMs,
      signal: options.signal,
      accept304: Boolean(options.etag),
    });
    this.#answered = true;
    if (res.status === 304) return { kind: 'not-modified' };
    const parsed = WireDocument.safeParse(parseJson(res.body));
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ImdsError(
        'IMDS_SCHEMA_INVALID',
        `IMDS answered a document that is not a Scheduled Events document (${issue ? `${issue.path.join('.') || '(root)'}: ${issue.message}` : 'invalid'})`,
      );
    }
    const { document, duplicates } = toDomainDocument(parsed.data);
    return { kind: 'document', document, etag: res.etag, duplicates };
  }

  /** startEvents approves events: POST StartRequests. IMDS answers 200 even if another VM approved first. */
  async startEvents(eventIds: readonly string[], options: { signal?: AbortSignal } = {}): Promise<void> {
    const body = JSON.stringify({ StartRequests: eventIds.map((id) => ({ EventId: id })) });
    await this.#send('POST', `/metadata/scheduledevents?api-version=${SCHEDULED_EVENTS_API_VERSION}`, {
      headers: { 'content-type': 'application/json' },
      body,
      timeoutMs: this.#requestTimeoutMs,
      signal: options.signal,
      accept304: false,
    });
  }

  /** getInstanceCompute reads who this VM is. */
  async getInstanceCompute(options: { signal?: AbortSignal } = {}): Promise<WireInstanceCompute> {
    const res = await this.#send('GET', `/metadata/instance/compute?api-version=${INSTANCE_API_VERSION}`, {
      headers: {},
      timeoutMs: this.#requestTimeoutMs,
      signal: options.signal,
      accept304: false,
    });
    const parsed = WireInstanceCompute.safeParse(parseJson(res.body));
    if (!parsed.success) throw new ImdsError('IMDS_SCHEMA_INVALID', 'IMDS answered an instance compute document that is not an object');
    return parsed.data;
  }

  async close(): Promise<void> {
    this.#http.close();
  }

  async #send(
    method: 'GET' | 'POST',
    path: string,
    opts: { headers: Record<string, string>; body?: string; timeoutMs: number; signal: AbortSignal | undefined; accept304: boolean },
  ): Promise<{ status: number; body: string; etag: string | null }> {
    await this.budget.acquire(opts.signal).catch((err: unknown) => {
      throw new ImdsError('IMDS_ABORTED', 'IMDS request aborted while waiting for the rate budget', { cause: err });
    });
    const limit = deadline(opts.timeoutMs, opts.signal);
    const url = `${this.endpoint}${path}`;
    const kind = path.startsWith('/metadata/instance') ? 'compute' : method === 'POST' ? 'start' : 'scheduledevents';
    const started = performance.now();
    let outcome = 'error';
    try {
      const res = await this.#http.request(url, {
        method,
        headers: { metadata: 'true', ...opts.headers },
        body: opts.body,
        signal: limit.signal,
        maxBodyBytes: MAX_BODY_BYTES,
        onOverflow: 'destroy',
      });
      outcome = String(res.status);
      // an answer larger than the limit is refused, never cut short
      if (res.overflow) throw new ImdsError('IMDS_UNPARSABLE', `IMDS answer larger than ${MAX_BODY_BYTES} bytes`);
      const body = text(res);
      const etag = headerValue(res.headers.etag);
      if (res.status === 200) return { status: 200, body, etag };
      if (res.status === 304 && opts.accept304) return { status: 304, body: '', etag };
      throw new ImdsError(codeForStatus(res.status), `IMDS answered ${res.status} to ${method} ${path}`, {
        status: res.status,
        retryAfterMs: parseRetryAfter(res.headers['retry-after']),
      });
    } catch (err) {
      if (err instanceof ImdsError) {
        if (outcome === 'error') outcome = err.code;
        throw err;
      }
      outcome = opts.signal?.aborted ? 'IMDS_ABORTED' : limit.timedOut ? 'IMDS_TIMEOUT' : 'IMDS_NETWORK';
      if (opts.signal?.aborted) throw new ImdsError('IMDS_ABORTED', `${method} ${path} aborted`, { cause: err });
      if (limit.timedOut) {
        throw new ImdsError('IMDS_TIMEOUT', `IMDS did not answer ${method} ${path} within ${opts.timeoutMs} ms`, { cause: err });
      }
      const code = (err as { code?: string }).code ?? (err as Error).name;
      throw new ImdsError('IMDS_NETWORK', `cannot reach IMDS at ${this.endpoint}: ${code}`, { cause: err });
    } finally {
      limit.release();
      this.#onRequest?.(kind, outcome, (performance.now() - started) / 1000);
    }
  }
}

function headerValue(v: string | string[] | undefined): string | null {
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s === '' ? null : s;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ImdsError('IMDS_UNPARSABLE', `IMDS answered a body that is not JSON (${text.length} bytes)`, { cause: err });
  }
}
