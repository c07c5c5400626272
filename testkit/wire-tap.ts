/**
 * WireTap: a recording relay on 127.0.0.1 port 0 (plain HTTP, or HTTPS with a given key and
 * certificate), or on a Unix socket, that keeps every request's method, path and raw headers
 * (`req.rawHeaders`: names as the client wrote them, in its order) and forwards it unchanged, its
 * headers in the same order and case, to a target (http or https; the target's certificate is
 * not checked: it is a local stand-in), piping the answer back. Put in front of a peer, it shows
 * which HTTP client wrote each request.
 *
 * viaUndici tells undici's requests from the others by what each client writes first:
 * - undici (lib/dispatcher/client-h1.js, writeH1) writes `host: ...` and then `connection: ...`,
 *   both in lower case, before any header of the caller's;
 * - Node's http client (`node:http` / `node:https` `request`) writes `Host` capitalized, after
 *   the caller's headers, and `Connection` capitalized last (_http_client.js, _http_outgoing.js);
 * - Node's global `fetch` is a copy of undici bundled with Node, so it writes `host` and
 *   `connection` first too, but the Fetch standard has it add `sec-fetch-mode`, which undici's
 *   own request API never writes.
 */
import {
  Agent as HttpAgent,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { Agent as HttpsAgent, createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';

export interface Tapped {
  readonly method: string;
  /** The request target as written (path and query). */
  readonly path: string;
  /** Names and values, alternating, as the client wrote them. */
  readonly rawHeaders: readonly string[];
}

/** viaUndici: the request was written by undici's own request API (see the header). */
export function viaUndici(rawHeaders: readonly string[]): boolean {
  const names = rawHeaders.filter((_, i) => i % 2 === 0);
  return names[0] === 'host' && names[1] === 'connection' && !names.some((n) => n.toLowerCase() === 'sec-fetch-mode');
}

export interface WireTapOptions {
  /** Serve HTTPS with this key and certificate. */
  readonly tls?: { readonly key: string; readonly cert: string };
  /** Listen on this Unix socket instead of 127.0.0.1. */
  readonly listenPath?: string;
  /** Reach the target through this Unix socket (the target URL then gives only the scheme). */
  readonly targetPath?: string;
}

export class WireTap {
  readonly requests: Tapped[] = [];
  readonly #target: URL;
  readonly #o: WireTapOptions;
  readonly #server: Server;
  readonly #agent: HttpAgent;
  readonly #open = new Set<Socket>();

  constructor(target: string, o: WireTapOptions = {}) {
    this.#target = new URL(target);
    this.#o = o;
    const https = this.#target.protocol === 'https:';
    this.#agent = https ? new HttpsAgent({ keepAlive: true, rejectUnauthorized: false }) : new HttpAgent({ keepAlive: true });
    const handler = (req: IncomingMessage, res: ServerResponse) => this.#forward(req, res);
    this.#server = o.tls === undefined ? createServer(handler) : createHttpsServer(o.tls, handler);
    const track = (s: Socket) => {
      this.#open.add(s);
      s.once('close', () => this.#open.delete(s));
    };
    this.#server.on('connection', track);
  }

  async start(): Promise<this> {
    const path = this.#o.listenPath;
    await new Promise<void>((resolve) =>
      path === undefined ? this.#server.listen(0, '127.0.0.1', resolve) : this.#server.listen(path, resolve),
    );
    return this;
  }

  /** url: the tap's address in place of the target's. */
  get url(): string {
    if (this.#o.listenPath !== undefined) return 'http://localhost';
    return `${this.#o.tls === undefined ? 'http' : 'https'}://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** seen: the requests whose path starts with `prefix`. */
  seen(prefix: string): Tapped[] {
    return this.requests.filter((r) => r.path.startsWith(prefix));
  }

  async close(): Promise<void> {
    this.#agent.destroy();
    for (const s of this.#open) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #forward(req: IncomingMessage, res: ServerResponse): void {
    this.requests.push({ method: req.method ?? '', path: req.url ?? '', rawHeaders: [...req.rawHeaders] });
    const send = this.#target.protocol === 'https:' ? httpsRequest : httpRequest;
    const where =
      this.#o.targetPath === undefined ? { hostname: this.#target.hostname, port: this.#target.port } : { socketPath: this.#o.targetPath };
    // an array of headers is written as it is: the same names, case and order as the client's
    const upstream = send({ ...where, method: req.method, path: req.url, headers: req.rawHeaders, agent: this.#agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.rawHeaders);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  }
}
