/**
 * The HTTP server plumbing of the bridge's own endpoints (approval API, metrics and health):
 * listening, and the limits that keep bad or slow clients from holding on to the process.
 */
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import { http } from './node-http.ts';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { clientKey, type Cidrs } from './client-address.ts';

/** ServerLimits bound what one server lets its clients hold. */
export interface ServerLimits {
  /** Open connections at most; more are closed as soon as they are accepted. */
  readonly maxConnections: number;
  /** A request's headers must arrive within this. */
  readonly headersTimeoutMs: number;
  /** A whole request must arrive within this. */
  readonly requestTimeoutMs: number;
  /** A connection on which nothing moves for this long is closed. */
  readonly idleTimeoutMs: number;
  /** A kept-alive connection waits this long for its next request. */
  readonly keepAliveTimeoutMs: number;
  /** Open connections from one client (an address; IPv6 per /64) at most; past it, a 429. */
  readonly maxConnectionsPerClient?: number;
  /** Reverse proxies: their connections carry many clients, so the per-client cap does not apply to them. */
  readonly trustedProxies?: Cidrs | null;
  /** Only these addresses may connect; any other connection is closed at once. */
  readonly allowFrom?: Cidrs | null;
  /**
   * What a connection past a cap gets: `refuse` (default) a JSON 429 (its client's cap) or 503
   * (the server's), with Retry-After, then closed; `serve` its answer as usual, then closed
   * (a health probe, whose answer costs nothing and must never look like a failure).
   */
  readonly overCap?: 'refuse' | 'serve';
}

export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  maxConnections: 256,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 20_000,
  idleTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5000,
};

/** How long a refused client is given to read its error answer before its socket is destroyed. */
const REFUSAL_FLUSH_MS = 1000;

/**
 * createGuardedServer is node:http's server with the limits applied, checked every second
 * (Node's default is every 30 s). A client that breaks the protocol or a timeout gets a JSON
 * error and its socket destroyed, never half-closed: a peer that never closes its side would
 * otherwise keep the descriptor forever, and enough of them exhaust the process's descriptors,
 * which IMDS polls need too.
 */
export function createGuardedServer(handler: RequestListener, limits: ServerLimits = DEFAULT_SERVER_LIMITS): Server {
  const over = new WeakMap<Socket, 'client' | 'server'>();
  const server = http.createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: 1000,
      maxHeaderSize: 16 * 1024,
    },
    (req, res) => {
      const past = over.get(req.socket);
      if (past === undefined) return handler(req, res);
      res.setHeader('connection', 'close');
      if (limits.overCap === 'serve') return handler(req, res);
      answerOverCap(req, res, past);
    },
  );
  capConnections(server, limits, over);
  server.setTimeout(limits.idleTimeoutMs, (socket: Socket) => socket.destroy());
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => refuse(err, socket));
  return server;
}

/** How many connections past maxConnections are still read and answered (429, 503) before new ones are closed unanswered. */
const OVERFLOW_FACTOR = 2;

/**
 * capConnections counts open connections, in all and per client. One past a cap is still
 * accepted and answered (with the over-cap answer, then closed), so a client always gets an
 * HTTP answer it can act on rather than a reset: up to twice maxConnections in all, past which
 * new connections are closed at once (a flood must not take every descriptor).
 */
function capConnections(server: Server, limits: ServerLimits, over: WeakMap<Socket, 'client' | 'server'>): void {
  const open = new Map<string, number>();
  let total = 0;
  server.on('connection', (socket: Socket) => {
    if (limits.allowFrom && !limits.allowFrom.has(socket.remoteAddress)) {
      socket.destroy();
      return;
    }
    if (total >= limits.maxConnections * OVERFLOW_FACTOR) {
      socket.destroy();
      return;
    }
    total += 1;
    const proxy = limits.trustedProxies?.has(socket.remoteAddress) === true;
    const who = clientKey(socket.remoteAddress);
    const n = open.get(who) ?? 0;
    if (total > limits.maxConnections) over.set(socket, 'server');
    else if (limits.maxConnectionsPerClient !== undefined && !proxy && n >= limits.maxConnectionsPerClient) over.set(socket, 'client');
    open.set(who, n + 1);
    socket.once('close', () => {
      total -= 1;
      const left = (open.get(who) ?? 1) - 1;
      if (left <= 0) open.delete(who);
      else open.set(who, left);
    });
  });
}

/** answerOverCap: a JSON 429 (the client's cap) or 503 (the server's) with Retry-After, once the request has arrived. */
function answerOverCap(req: IncomingMessage, res: ServerResponse, past: 'client' | 'server'): void {
  const [status, code, message] =
    past === 'client'
      ? [429, 'TOO_MANY_CONNECTIONS', 'this client holds as many connections as it may; retry on one of them, or later']
      : [503, 'SERVER_BUSY', 'the server holds as many connections as it may; retry later'];
  res.setHeader('retry-after', '1');
  req.resume();
  const send = () => sendJson(res, status, { error: { code, message } });
  if (req.complete) send();
  else req.once('end', send);
}

function refuse(err: NodeJS.ErrnoException, socket: Socket): void {
  if (!socket.writable || err.code === 'ECONNRESET' || err.code === 'EPIPE') {
    socket.destroy();
    return;
  }
  const [status, reason, code] =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'Request Timeout', 'REQUEST_TIMEOUT']
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', 'HEADERS_TOO_LARGE']
        : [400, 'Bad Request', 'BAD_REQUEST'];
  const body = JSON.stringify({
    error: { code, message: status === 408 ? 'the request did not arrive in time' : 'malformed HTTP request' },
  });
  const timer = setTimeout(() => socket.destroy(), REFUSAL_FLUSH_MS);
  timer.unref();
  socket.write(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    () => {
      clearTimeout(timer);
      socket.destroy();
    },
  );
}

/** listen starts an HTTP server on HOST:PORT (port 0 picks a free one) and returns its base URL. */
export async function listen(server: Server, host: string, port: number): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return baseUrl(server);
}

/** freePort finds a loopback port nothing listens on, for a server in another process that must be told its port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createTcpServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export function baseUrl(server: Server): string {
  const a = server.address() as AddressInfo;
  return `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
}

/** sendJson answers with a JSON body, its length declared. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** trackSockets keeps the open sockets of a server, for closing them all at shutdown. */
export function trackSockets(server: Server): Set<Socket> {
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return sockets;
}
