/**
 * The observability endpoints on `observability.listen`: /metrics (Prometheus text),
 * /livez (the event loop answers) and /readyz (503 until the first good IMDS read, and while
 * reads keep failing past the threshold).
 */
import type { Server } from 'node:http';
import { createGuardedServer, DEFAULT_SERVER_LIMITS, listen } from '../lib/http-server.ts';
import type { Metrics } from './metrics.ts';

/**
 * Scrapers and probes need few connections; the cap keeps the endpoint from costing descriptors,
 * and the cap per address keeps one client from taking every slot (and the probes with them).
 */
const MAX_CONNECTIONS = 64;
const MAX_CONNECTIONS_PER_CLIENT = 16;

export interface Readiness {
  ready: boolean;
  reason: string;
  /** More parts' states, shown in the body (the approval inbox). */
  details?: Record<string, unknown>;
}

export class ObservabilityServer {
  readonly #server: Server;

  constructor(metrics: { readonly registry: Metrics['registry'] }, readiness: () => Readiness) {
    this.#server = createGuardedServer(
      (req, res) => {
        const path = new URL(req.url ?? '/', 'http://o.invalid').pathname;
        const send = (status: number, type: string, body: string) => {
          res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
          res.end(body);
        };
        if (req.method !== 'GET' && req.method !== 'HEAD')
          return send(405, 'application/json', '{"error":{"code":"METHOD_NOT_ALLOWED","message":"use GET"}}');
        if (path === '/livez') return send(200, 'application/json', '{"status":"ok"}');
        if (path === '/readyz') {
          const r = readiness();
          return send(
            r.ready ? 200 : 503,
            'application/json',
            JSON.stringify({ status: r.ready ? 'ready' : 'not-ready', reason: r.reason, ...(r.details ?? {}) }),
          );
        }
        if (path === '/metrics') {
          metrics.registry.metrics().then(
            (text) => send(200, metrics.registry.contentType, text),
            (err: unknown) => send(500, 'text/plain', String(err)),
          );
          return;
        }
        send(404, 'application/json', '{"error":{"code":"NOT_FOUND","message":"try /metrics, /livez or /readyz"}}');
      },
      { ...DEFAULT_SERVER_LIMITS, maxConnections: MAX_CONNECTIONS, maxConnectionsPerClient: MAX_CONNECTIONS_PER_CLIENT },
    );
  }

  listen(host: string, port: number): Promise<string> {
    return listen(this.#server, host, port);
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
