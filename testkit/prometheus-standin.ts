/**
 * A Prometheus HTTP API stand-in on 127.0.0.1, written from the API reference
 * (https://prometheus.io/docs/prometheus/latest/querying/api/): GET /api/v1/query?query=… answers
 * `{"status": "success", "data": {"resultType": "vector", "result": [...]}}` with the series a test
 * set for that query (none unless set), and a query the test marked as bad with 400
 * `{"status": "error", "errorType": "bad_data", "error": …}`, as Prometheus answers a query it
 * cannot parse. Every query asked is recorded.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export class PrometheusStandIn {
  /** The series each query answers: metric labels and a value. */
  readonly series = new Map<string, { metric: Record<string, string>; value: string }[]>();
  readonly bad = new Set<string>();
  readonly asked: string[] = [];
  readonly #server: Server;

  constructor() {
    this.#server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const query = url.searchParams.get('query');
      const json = (status: number, body: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.method !== 'GET' || url.pathname !== '/api/v1/query' || query === null)
        return json(404, { status: 'error', errorType: 'not_found', error: 'not found' });
      this.asked.push(query);
      if (this.bad.has(query))
        return json(400, { status: 'error', errorType: 'bad_data', error: `invalid parameter "query": parse error` });
      const at = Date.now() / 1000;
      json(200, {
        status: 'success',
        data: { resultType: 'vector', result: (this.series.get(query) ?? []).map((s) => ({ metric: s.metric, value: [at, s.value] })) },
      });
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}
