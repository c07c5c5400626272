/**
 * RoutedServer: what the approval server and the relay share. A guarded node:http server
 * (limits from lib/http-server.ts) with a route table, strict 404/405 answers, a per-client
 * rate limit (behind trusted proxies, per forwarded client), JSON 500s for a handler that throws, and a close that lets running tasks (Slack
 * updates) finish before it cuts every socket.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { errorFields, type Code } from '../lib/errors.ts';
import { createGuardedServer, DEFAULT_SERVER_LIMITS, listen, sendJson, trackSockets } from '../lib/http-server.ts';
import { RateLimiter } from './rate-limit.ts';
import { Cidrs, clientAddress, clientKey } from '../lib/client-address.ts';

export interface RoutedServerOptions {
  /** Path to the methods it takes. */
  readonly routes: Record<string, string[]>;
  /** Paths the rate limit does not apply to (health checks, scrapes). */
  readonly unlimited?: readonly string[];
  readonly rate: { perSecond: number; burst: number };
  readonly maxConnections: number;
  /** Open connections from one client at most. */
  readonly maxConnectionsPerClient: number;
  /** Reverse proxies: behind them the client is the last untrusted forwarded hop. */
  readonly trustedProxies: readonly string[];
  readonly logger: Logger;
  /** The code and message a handler's unexpected failure is logged with. */
  readonly failure: { code: Code; message: string };
  /** Called when each answer is finished (metrics). */
  readonly onFinish?: (route: string, status: number) => void;
}

/**
 * routeOf finds the route of a path: the path itself, or a `/prefix/*` route that takes one more
 * segment (`/v1/approvals/*` takes `/v1/approvals/abc`, not `/v1/approvals/a/b`).
 */
function routeOf(routes: Record<string, string[]>, path: string): string | null {
  if (Object.hasOwn(routes, path) && !path.endsWith('/*')) return path;
  const cut = path.lastIndexOf('/');
  const wildcard = `${path.slice(0, cut)}/*`;
  return cut > 0 && path.length > cut + 1 && Object.hasOwn(routes, wildcard) ? wildcard : null;
}

export abstract class RoutedServer {
  readonly #server: Server;
  readonly #sockets: Set<Socket>;
  readonly #limiter: RateLimiter;
  readonly #pending = new Set<Promise<unknown>>();
  readonly #r: RoutedServerOptions;
  readonly #proxies: Cidrs;

  constructor(r: RoutedServerOptions) {
    this.#r = r;
    this.#proxies = new Cidrs(r.trustedProxies);
    this.#server = createGuardedServer(
      (req, res) => {
        const url = new URL(req.url ?? '/', 'http://approval.invalid');
        if (r.onFinish !== undefined) res.on('finish', () => r.onFinish!(routeOf(r.routes, url.pathname) ?? 'other', res.statusCode));
        this.#serve(req, res, url).catch((err: unknown) => {
          r.logger.error({ ...errorFields(err), code: r.failure.code }, r.failure.message);
          if (!res.headersSent) sendJson(res, 500, { error: { code: 'INTERNAL', message: 'internal error' } });
          else res.destroy();
        });
      },
      {
        ...DEFAULT_SERVER_LIMITS,
        maxConnections: r.maxConnections,
        maxConnectionsPerClient: r.maxConnectionsPerClient,
        trustedProxies: this.#proxies,
      },
    );
    this.#sockets = trackSockets(this.#server);
    this.#limiter = new RateLimiter(r.rate);
  }

  listen(host: string, port: number): Promise<string> {
    return listen(this.#server, host, port);
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.#pending]);
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** track keeps a task that outlives its request (a Slack update) until close. */
  protected track(task: Promise<unknown>): void {
    this.#pending.add(task);
    void task.finally(() => this.#pending.delete(task));
  }

  /** clientOf: the request's client address (the last untrusted hop behind trustedProxies), for the logs. */
  protected clientOf(req: IncomingMessage): string {
    return clientAddress(req, this.#proxies) ?? 'unknown';
  }

  /** handle answers a request for a known route, with an allowed method, within the rate limit. */
  protected abstract handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void>;

  async #serve(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    res.setHeader('cache-control', 'no-store');
    res.setHeader('x-content-type-options', 'nosniff');
    const route = routeOf(this.#r.routes, url.pathname);
    const methods = route === null ? undefined : this.#r.routes[route];
    if (methods === undefined || (req.url ?? '').includes('..')) {
      req.resume();
      return sendJson(res, 404, { error: { code: 'NOT_FOUND', message: 'no such route' } });
    }
    if (!methods.includes(req.method ?? '')) {
      req.resume();
      res.setHeader('allow', methods.join(', '));
      return sendJson(res, 405, { error: { code: 'METHOD_NOT_ALLOWED', message: `use ${methods.join(' or ')}` } });
    }
    if (!(this.#r.unlimited ?? []).includes(url.pathname)) {
      const wait = this.#limiter.take(clientKey(clientAddress(req, this.#proxies)));
      if (wait > 0) {
        req.resume();
        res.setHeader('retry-after', String(Math.ceil(wait / 1000)));
        return sendJson(res, 429, { error: { code: 'RATE_LIMITED', message: 'too many requests' } });
      }
    }
    return this.handle(req, res, url);
  }
}
