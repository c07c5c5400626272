/**
 * HttpPeer: a real HTTP (or HTTPS) server on 127.0.0.1, port 0, that records every request
 * and answers as the test scripts it: a status, a delay, a hang, a huge or broken body.
 */
import { createServer as createHttp, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttps } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';

export interface Recorded {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export type Answer = { status: number; body?: string | Buffer; headers?: Record<string, string>; delayMs?: number } | { hang: true };

export class HttpPeer {
  readonly requests: Recorded[] = [];
  /** Decides the answer to each request; default 200. */
  answer: (req: Recorded, index: number) => Answer = () => ({ status: 200 });
  readonly #server: ReturnType<typeof createHttp>;
  readonly #sockets = new Set<Socket>();
  readonly #tls: boolean;

  /** keepAliveMs: how long an idle connection is kept open (Node's default: 5 s). */
  constructor(tls?: { key: string; cert: string }, o: { keepAliveMs?: number } = {}) {
    this.#tls = tls !== undefined;
    const handler = (req: IncomingMessage, res: ServerResponse) => void this.#handle(req, res);
    this.#server = tls ? createHttps({ key: tls.key, cert: tls.cert }, handler) : createHttp(handler);
    if (o.keepAliveMs !== undefined) this.#server.keepAliveTimeout = o.keepAliveMs;
    this.#server.on('connection', (s: Socket) => {
      this.#sockets.add(s);
      s.on('close', () => this.#sockets.delete(s));
    });
    this.#server.on('secureConnection', (s: Socket) => {
      this.#sockets.add(s);
      s.on('close', () => this.#sockets.delete(s));
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((r) => this.#server.listen(0, '127.0.0.1', () => r()));
    return this.url;
  }

  get url(): string {
    return `${this.#tls ? 'https' : 'http'}://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** keepIdle: how long the peer keeps a client's idle connection open from now on. */
  keepIdle(ms: number): void {
    this.#server.keepAliveTimeout = ms;
  }

  /** The connections open to it now. */
  get openConnections(): number {
    return this.#sockets.size;
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((r) => this.#server.close(() => r()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
    const rec: Recorded = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
      at: Date.now(),
    };
    const index = this.requests.length;
    this.requests.push(rec);
    const a = this.answer(rec, index);
    if ('hang' in a) return;
    if (a.delayMs) await new Promise((r) => setTimeout(r, a.delayMs));
    res.writeHead(a.status, a.headers ?? {});
    res.end(a.body ?? '');
  }
}
