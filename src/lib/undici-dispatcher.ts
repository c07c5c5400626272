// eslint-disable-next-line @typescript-eslint/triple-slash-reference -- the declarations of undici's parts, also for a program of only some files (the mutation checker)
/// <reference path="./undici-parts.d.ts" />
/**
 * The undici half of the HTTP client (http-client.ts), loaded at a client's first request, so
 * that a command that makes none (validate, --help) never loads undici: the dispatcher a client
 * sends through, from its options.
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
export function dispatcherFor(options: HttpClientOptions): Dispatcher {
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
