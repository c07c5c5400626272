/**
 * HttpClient: outbound HTTP on Node's own `node:http` and `node:https`, whose parser is native
 * code. (undici's parser is WebAssembly: importing it cost about 27 MiB of resident memory, and
 * it cannot run under V8's lite mode.)
 *
 * - One keep-alive agent per protocol, a few sockets each, shared by every request of a client.
 * - Proxies through Node's built-in proxy support: `env` reads HTTP(S)_PROXY and NO_PROXY,
 *   `none` never uses one (whatever the environment or NODE_USE_ENV_PROXY say), a URL names one.
 *   HTTPS goes through a CONNECT tunnel.
 * - A request is bounded by its signal (connect, headers and body alike) and its answer by
 *   `maxBodyBytes`; what is over is dropped as `onOverflow` says (see readBounded).
 * - Failures reject with Node's error, whose `code` (ECONNREFUSED, DEPTH_ZERO_SELF_SIGNED_CERT,
 *   AbortError, ...) says what happened.
 */
import type { Agent as HttpAgent, IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { Agent as HttpsAgent } from 'node:https';
import { http, https, tls } from './node-http.ts';
import { readBounded, type BoundedBody } from './http-body.ts';

export interface HttpClientOptions {
  /** env: HTTPS_PROXY/HTTP_PROXY/NO_PROXY; none: direct; or a proxy URL. */
  readonly proxy: 'env' | 'none' | string;
  /** PEM CA(s) to trust in addition to the system's. */
  readonly ca?: string;
  /** false turns certificate verification off. */
  readonly rejectUnauthorized?: boolean;
  /** Sockets per origin. */
  readonly maxSockets?: number;
  /** How long an idle connection is kept. */
  readonly keepAliveMs?: number;
}

export interface HttpRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  readonly headers?: OutgoingHttpHeaders;
  readonly body?: string | Buffer;
  readonly signal?: AbortSignal;
  /** The most of the answer's body that is kept. */
  readonly maxBodyBytes: number;
  readonly onOverflow: 'destroy' | 'drain';
}

export interface HttpResponse extends BoundedBody {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
}

export class HttpClient {
  readonly #options: HttpClientOptions;
  readonly #common: ConstructorParameters<typeof http.Agent>[0];
  readonly #http: HttpAgent;
  /** Made on the first https request. */
  #https: HttpsAgent | null = null;

  constructor(options: HttpClientOptions) {
    this.#options = options;
    // An empty proxyEnv is an explicit "no proxy": Node then ignores NODE_USE_ENV_PROXY too.
    const proxyEnv = options.proxy === 'env' ? process.env : options.proxy === 'none' ? {} : { HTTP_PROXY: options.proxy, HTTPS_PROXY: options.proxy };
    this.#common = { keepAlive: true, keepAliveMsecs: 1000, timeout: options.keepAliveMs ?? 30_000, maxSockets: options.maxSockets ?? 4, maxFreeSockets: options.maxSockets ?? 4, proxyEnv };
    this.#http = new http.Agent(this.#common);
  }

  #secure(): HttpsAgent {
    const { ca, rejectUnauthorized } = this.#options;
    this.#https ??= new (https().Agent)({
      ...this.#common,
      ...(ca === undefined ? {} : { ca: [...tls().rootCertificates, ca] }),
      ...(rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
    });
    return this.#https;
  }

  request(url: string | URL, req: HttpRequest): Promise<HttpResponse> {
    const target = typeof url === 'string' ? new URL(url) : url;
    const secure = target.protocol === 'https:';
    const agent = secure ? this.#secure() : this.#http;
    const send = secure ? https().request : http.request;
    return new Promise<HttpResponse>((resolve, reject) => {
      const body = req.body === undefined ? undefined : typeof req.body === 'string' ? Buffer.from(req.body) : req.body;
      const r = send(target, {
        method: req.method,
        agent,
        headers: { ...req.headers, ...(body === undefined ? {} : { 'content-length': body.length }) },
        signal: req.signal,
      });
      r.once('error', reject);
      r.once('response', (res) => {
        readBounded(res, req.maxBodyBytes, req.onOverflow).then(
          (read) => resolve({ status: res.statusCode ?? 0, headers: res.headers, ...read }),
          reject,
        );
      });
      r.end(body);
    });
  }

  /** close drops the idle connections; requests under way finish. */
  close(): void {
    this.#http.destroy();
    this.#https?.destroy();
  }
}
