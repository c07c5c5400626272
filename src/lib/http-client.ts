/**
 * HttpClient: every outbound HTTP request of the bridge, on undici (the design's HTTP client).
 *
 * - One keep-alive dispatcher per client, a few connections per origin, shared by every request
 *   of that client.
 * - Proxies: `none` is a plain `Agent` that never uses one, whatever the environment says (IMDS
 *   must never be reached through a proxy); `env` is an `EnvHttpProxyAgent` (HTTP_PROXY,
 *   HTTPS_PROXY, NO_PROXY); a URL is a `ProxyAgent`. Plain HTTP goes to the proxy in absolute
 *   form, HTTPS through a CONNECT tunnel.
 * - TLS settings (`ca`, `rejectUnauthorized`) go to the connector of the target, direct or
 *   through a tunnel. undici loads node:tls only for the first https connection, so a bridge that
 *   speaks only plain HTTP never loads it.
 * - A request is bounded by its signal (connect, headers and body alike) and its answer by
 *   `maxBodyBytes`; what is over is dropped as `onOverflow` says (see readBounded).
 * - Failures reject with the underlying error, whose `code` (ECONNREFUSED,
 *   DEPTH_ZERO_SELF_SIGNED_CERT, UND_ERR_SOCKET, ...) says what happened; an aborted request
 *   rejects with an `AbortError` whose `code` is `ABORT_ERR`, whatever the signal's reason was.
 *
 * undici parses HTTP with WebAssembly; the bin and the executable run with `--liftoff-only`,
 * which keeps that code in V8's baseline compiler (measured in bench/results.md).
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

// what undici's main entry does, for the two methods used: request(), and connect() (a proxy's
// CONNECT tunnel); stream, pipeline and upgrade stay unloaded
Object.assign(DispatcherBase.prototype, { request, connect });
import { readBounded, type BoundedBody } from './http-body.ts';

export interface HttpClientOptions {
  /** env: HTTPS_PROXY/HTTP_PROXY/NO_PROXY; none: direct; or a proxy URL. */
  readonly proxy: 'env' | 'none' | string;
  /** PEM CA(s) to trust in addition to the system's. */
  readonly ca?: string;
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
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
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
    ...(tls === null ? {} : { ca: [...tls.rootCertificates, options.ca!] }),
    ...(options.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
    ...(options.cert === undefined || options.key === undefined ? {} : { cert: options.cert, key: options.key }),
    ...(options.serverName === undefined ? {} : { servername: options.serverName }),
  };
}

/** dispatcherFor builds the one dispatcher a client sends through. */
function dispatcherFor(options: HttpClientOptions): Dispatcher {
  const connections = options.maxSockets ?? 4;
  const keepAliveTimeout = options.keepAliveMs ?? 30_000;
  const tls = tlsOptions(options);
  const common = { connections, keepAliveTimeout, keepAliveMaxTimeout: keepAliveTimeout };
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

export class HttpClient {
  readonly #dispatcher: Dispatcher;

  constructor(options: HttpClientOptions) {
    this.#dispatcher = dispatcherFor(options);
  }

  async request(url: string | URL, req: HttpRequest): Promise<HttpResponse> {
    const target = typeof url === 'string' ? new URL(url) : url;
    try {
      const res = await this.#dispatcher.request({
        origin: target.origin,
        path: `${target.pathname}${target.search}`,
        method: req.method,
        headers: req.headers ?? {},
        body: req.body ?? null,
        signal: req.signal ?? null,
      });
      const read = await readBounded(res.body, req.maxBodyBytes, req.onOverflow);
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
