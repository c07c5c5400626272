/**
 * HttpClient: every outbound HTTP request of the bridge and the relay, on undici (the design's
 * HTTP client). What undici does is undici's: keep-alive pools, proxies, TLS on the target's
 * connection, its deadlines for the connection, the headers and the body, the most of an answer
 * it reads, redirects left unfollowed. What stays here is the shape every caller shares.
 *
 * - One keep-alive dispatcher per client, a few connections per origin, shared by every request
 *   of that client; an idle connection is closed after `keepAliveMs`.
 * - Proxies: `none` is a plain `Agent` that never uses one, whatever the environment says (IMDS
 *   must never be reached through a proxy); `env` is an `EnvHttpProxyAgent` (HTTP_PROXY,
 *   HTTPS_PROXY, NO_PROXY); a URL is a `ProxyAgent`. Plain HTTP goes to the proxy in absolute
 *   form, HTTPS through a CONNECT tunnel with TLS verified end to end.
 * - TLS settings (`ca`, `systemRoots`, `rejectUnauthorized`, a client certificate, `serverName`) go
 *   to the target's connector, direct or through a tunnel. undici loads node:tls only for the
 *   first https connection, so a bridge that speaks only plain HTTP never loads it.
 * - Deadlines: the caller's signal bounds the whole request; undici's own `connect` timeout,
 *   `headersTimeout` and `bodyTimeout` bound each phase even without one.
 * - The answer: undici reads at most `maxResponseBytes` of any body (`maxResponseSize`), and a
 *   request keeps at most `maxBodyBytes` of it; what is over is dropped as `onOverflow` says:
 *   `destroy` stops reading, `drain` reads on to the end (or to `maxResponseBytes`) so the
 *   connection is kept.
 * - Failures reject with undici's error, whose `code` (ECONNREFUSED, UND_ERR_SOCKET,
 *   UND_ERR_HEADERS_TIMEOUT, ...) says what happened; a header that may not be sent is refused
 *   before undici sees it (ERR_INVALID_HTTP_TOKEN, ERR_INVALID_CHAR: see refuseBadHeaders); an aborted request rejects with an `AbortError` whose `code` is `ABORT_ERR`,
 *   whatever the signal's reason was.
 *
 * undici parses HTTP with WebAssembly; the bin and the executable run with `--liftoff-only`,
 * which keeps that code in V8's baseline compiler (docs/performance.md has what it saves).
 */
import type { Dispatcher } from 'undici';
import './undici-hooks.ts';
// one part at a time: undici's main entry also loads fetch and WebSocket, whose web globals load
// Node's bundled copy of undici beside the package (undici-parts.d.ts types them)
import Agent from 'undici/lib/dispatcher/agent.js';
import EnvHttpProxyAgent from 'undici/lib/dispatcher/env-http-proxy-agent.js';
import ProxyAgent from 'undici/lib/dispatcher/proxy-agent.js';
import DispatcherBase from 'undici/lib/dispatcher/dispatcher.js';
import request from 'undici/lib/api/api-request.js';
import connect from 'undici/lib/api/api-connect.js';
import { readBounded, type BoundedBody } from './http-body.ts';
import { http } from './node-http.ts';

// what undici's main entry does, for the two methods used: request(), and connect() (a proxy's
// CONNECT tunnel); stream, pipeline and upgrade stay unloaded
Object.assign(DispatcherBase.prototype, { request, connect });

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
  /** undici's deadlines, each phase on its own: the connection (10 s), the headers and every pause in the body (60 s). */
  readonly connectTimeoutMs?: number;
  readonly timeoutMs?: number;
  /** The most of any answer's body undici reads (16 MiB). */
  readonly maxResponseBytes?: number;
  /** A Unix socket or Windows named pipe every request goes to, whatever the URL's host (with `proxy: none`). */
  readonly socketPath?: string;
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

const MAX_RESPONSE_BYTES = 16 * 2 ** 20;

/** Trust `ca` beside the system's roots, or alone (node:tls is loaded only when a CA is configured). */
function tlsOptions(options: HttpClientOptions): Record<string, unknown> {
  const tls = options.ca === undefined ? null : process.getBuiltinModule('node:tls');
  return {
    ...(tls === null ? {} : { ca: options.systemRoots === false ? [options.ca!] : [...tls.rootCertificates, options.ca!] }),
    ...(options.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
    ...(options.cert === undefined || options.key === undefined ? {} : { cert: options.cert, key: options.key }),
    ...(options.serverName === undefined ? {} : { servername: options.serverName }),
  };
}

/** dispatcherFor builds the one dispatcher a client sends through. */
function dispatcherFor(options: HttpClientOptions): Dispatcher {
  const keepAliveTimeout = options.keepAliveMs ?? 30_000;
  const timeout = options.timeoutMs ?? 60_000;
  const tls = {
    ...tlsOptions(options),
    timeout: options.connectTimeoutMs ?? 10_000,
    ...(options.socketPath === undefined ? {} : { socketPath: options.socketPath }),
  };
  const common = {
    connections: options.maxSockets ?? 4,
    keepAliveTimeout,
    keepAliveMaxTimeout: keepAliveTimeout,
    headersTimeout: timeout,
    bodyTimeout: timeout,
    maxResponseSize: options.maxResponseBytes ?? MAX_RESPONSE_BYTES,
  };
  if (options.proxy === 'none') return new Agent({ ...common, connect: tls });
  // proxyTunnel false: plain HTTP goes to the proxy in absolute form; HTTPS always tunnels
  const proxied = { ...common, requestTls: tls, proxyTunnel: false };
  if (options.proxy === 'env') return new EnvHttpProxyAgent({ ...proxied, connect: tls });
  return new ProxyAgent({ ...proxied, uri: options.proxy });
}

function abortError(cause: unknown): Error {
  const err = new Error('the request was aborted', { cause });
  err.name = 'AbortError';
  (err as Error & { code: string }).code = 'ABORT_ERR';
  return err;
}

/**
 * refuseBadHeaders throws, before undici sees the request, at a header name that is no token or a
 * value with CR, LF, NUL or another control character (Node's own checks: ERR_INVALID_HTTP_TOKEN,
 * ERR_INVALID_CHAR). undici refuses them too, but its pool (more than one connection per origin)
 * counts each refused request as a connection still busy: after as many refusals as connections,
 * every later request of that origin waits for ever, deaf to its signal (undici 7.30).
 */
function refuseBadHeaders(headers: Record<string, string> | undefined): void {
  if (headers === undefined) return;
  const { validateHeaderName, validateHeaderValue } = http;
  for (const [name, value] of Object.entries(headers)) {
    validateHeaderName(name);
    validateHeaderValue(name, value);
  }
}

/** undici's error for an answer past `maxResponseSize`. */
const tooLarge = (err: unknown): boolean => (err as { code?: unknown } | null)?.code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE';

export class HttpClient {
  readonly #dispatcher: Dispatcher;

  constructor(options: HttpClientOptions) {
    this.#dispatcher = dispatcherFor(options);
  }

  async request(url: string | URL, req: HttpRequest): Promise<HttpResponse> {
    const target = typeof url === 'string' ? new URL(url) : url;
    if (req.signal?.aborted) throw abortError(req.signal.reason);
    refuseBadHeaders(req.headers);
    try {
      const res = await this.#dispatcher.request({
        origin: target.origin,
        path: `${target.pathname}${target.search}`,
        method: req.method,
        headers: req.headers ?? {},
        body: req.body ?? null,
        signal: req.signal ?? null,
      });
      const read = await readBounded(res.body, req.maxBodyBytes, req.onOverflow, tooLarge);
      return { status: res.statusCode, headers: res.headers, ...read };
    } catch (err) {
      throw req.signal?.aborted ? abortError(err) : err;
    }
  }

  /** close lets requests under way finish, then drops the connections. */
  close(): void {
    this.#dispatcher.close().catch(() => undefined);
  }
}
