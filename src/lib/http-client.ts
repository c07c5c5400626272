/**
 * HttpClient: every outbound HTTP request of the bridge, on Node's own HTTP client (node:http,
 * node:https), whose parser is native: no WebAssembly, no second HTTP stack in memory.
 *
 * - One keep-alive agent per client and scheme, a few connections per origin, shared by every
 *   request of that client; an idle connection is closed after `keepAliveMs` and never keeps the
 *   process alive.
 * - Proxies (Node's agents, `proxyEnv`): `none` never uses one, whatever the environment says
 *   (IMDS must never be reached through a proxy); `env` follows HTTP_PROXY, HTTPS_PROXY and
 *   NO_PROXY; a URL is that proxy for both schemes. Plain HTTP goes to the proxy in absolute
 *   form, HTTPS through a CONNECT tunnel, with TLS verified end to end.
 * - TLS settings (`ca`, `rejectUnauthorized`, a client certificate, `serverName`) go to the
 *   target's connection. node:https (and with it node:tls) is loaded at the first https URL, so
 *   a bridge that speaks only plain HTTP never loads it.
 * - A request is bounded by its signal (connect, headers and body alike) and its answer by
 *   `maxBodyBytes`; what is over is dropped as `onOverflow` says (see readBounded).
 * - Failures reject with the underlying error, whose `code` (ECONNREFUSED, ECONNRESET,
 *   DEPTH_ZERO_SELF_SIGNED_CERT, ERR_INVALID_CHAR, ...) says what happened; an aborted request
 *   rejects with an `AbortError` whose `code` is `ABORT_ERR`, whatever the signal's reason was.
 */
import type { Agent, ClientRequest, RequestOptions } from 'node:http';
import { http } from './node-http.ts';
import { readBounded, type BoundedBody } from './http-body.ts';

export interface HttpClientOptions {
  /** env: HTTPS_PROXY/HTTP_PROXY/NO_PROXY; none: direct; or a proxy URL. */
  readonly proxy: 'env' | 'none' | string;
  /** PEM CA(s) to trust in addition to the system's. */
  readonly ca?: string;
  /** false: trust `ca` alone, not the system's roots too (a cluster's own CA, as kubectl does). */
  readonly systemRoots?: boolean;
  /** false turns certificate verification off. */
  readonly rejectUnauthorized?: boolean;
  /** A client certificate and its key (PEM), for servers that authenticate clients by certificate. */
  readonly cert?: string;
  readonly key?: string;
  /** The name the server's certificate is checked against, when it is not the URL's host. */
  readonly serverName?: string;
  /** Connections per origin. */
  readonly maxSockets?: number;
  /** How long an idle connection is kept. */
  readonly keepAliveMs?: number;
}

export type HttpHeaders = Record<string, string | string[] | undefined>;

export interface HttpRequest {
  readonly method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly headers?: Record<string, string>;
  readonly body?: string | Buffer;
  readonly signal?: AbortSignal;
  /** The most of the answer's body that is kept. */
  readonly maxBodyBytes: number;
  readonly onOverflow: 'destroy' | 'drain';
}

export interface HttpResponse extends BoundedBody {
  readonly status: number;
  /** Lower-case names. */
  readonly headers: HttpHeaders;
}

/** Trust `ca` beside the system's roots (node:tls is loaded only when a CA file is configured). */
function tlsOptions(options: HttpClientOptions): Record<string, unknown> {
  const tls = options.ca === undefined ? null : process.getBuiltinModule('node:tls');
  return {
    ...(tls === null ? {} : { ca: options.systemRoots === false ? [options.ca!] : [...tls.rootCertificates, options.ca!] }),
    ...(options.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
    ...(options.cert === undefined || options.key === undefined ? {} : { cert: options.cert, key: options.key }),
    ...(options.serverName === undefined ? {} : { servername: options.serverName }),
  };
}

/** proxyEnv: what the agents read their proxy from (Node's built-in proxy support). */
function proxyEnv(proxy: HttpClientOptions['proxy']): NodeJS.ProcessEnv | undefined {
  if (proxy === 'none') return undefined;
  if (proxy === 'env') return process.env;
  return { HTTP_PROXY: proxy, HTTPS_PROXY: proxy };
}

function abortError(cause: unknown): Error {
  const err = new Error('the request was aborted', { cause });
  err.name = 'AbortError';
  (err as Error & { code: string }).code = 'ABORT_ERR';
  return err;
}

export class HttpClient {
  readonly #options: HttpClientOptions;
  readonly #agents = new Map<'http:' | 'https:', Agent>();
  readonly #pending = new Set<Promise<unknown>>();
  #closed = false;

  constructor(options: HttpClientOptions) {
    this.#options = options;
  }

  /** agent: this client's agent for a scheme, made at its first request. */
  #agent(scheme: 'http:' | 'https:'): Agent {
    let agent = this.#agents.get(scheme);
    if (agent !== undefined) return agent;
    const o = this.#options;
    const env = proxyEnv(o.proxy);
    const common = {
      keepAlive: true,
      maxSockets: o.maxSockets ?? 4,
      timeout: o.keepAliveMs ?? 30_000,
      ...(env === undefined ? {} : { proxyEnv: env }),
    };
    agent =
      scheme === 'https:' ? new (process.getBuiltinModule('node:https').Agent)({ ...common, ...tlsOptions(o) }) : new http.Agent(common);
    this.#agents.set(scheme, agent);
    return agent;
  }

  request(url: string | URL, req: HttpRequest): Promise<HttpResponse> {
    const p = this.#request(typeof url === 'string' ? new URL(url) : url, req);
    this.#pending.add(p);
    void p.finally(() => this.#pending.delete(p)).catch(() => undefined);
    return p;
  }

  async #request(target: URL, req: HttpRequest): Promise<HttpResponse> {
    if (req.signal?.aborted) throw abortError(req.signal.reason);
    // any other scheme goes to node:http, which refuses it (ERR_INVALID_PROTOCOL)
    const scheme = target.protocol === 'https:' ? 'https:' : 'http:';
    const client = scheme === 'https:' ? process.getBuiltinModule('node:https') : http;
    // the length always said: Node frames a DELETE's body by neither length nor chunks otherwise
    const length = req.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(req.body)) };
    const options: RequestOptions = {
      method: req.method,
      headers: { ...req.headers, ...length },
      agent: this.#agent(scheme),
      ...(req.signal === undefined ? {} : { signal: req.signal }),
    };
    try {
      return await new Promise<HttpResponse>((resolve, reject) => {
        let sent: ClientRequest;
        try {
          sent = client.request(target, options, (res) => {
            res.once('error', reject);
            readBounded(res, req.maxBodyBytes, req.onOverflow).then(
              (read) => resolve({ status: res.statusCode ?? 0, headers: res.headers, ...read }),
              reject,
            );
          });
        } catch (err) {
          // a header Node refuses to send (ERR_INVALID_CHAR, ERR_INVALID_HTTP_TOKEN): nothing was sent
          reject(err);
          return;
        }
        sent.once('error', reject);
        sent.end(req.body);
      });
    } catch (err) {
      throw req.signal?.aborted ? abortError(err) : err;
    }
  }

  /** close lets requests under way finish, then drops the connections. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    void Promise.allSettled([...this.#pending]).then(() => {
      for (const agent of this.#agents.values()) agent.destroy();
    });
  }
}
