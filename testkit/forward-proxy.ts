/**
 * ForwardProxy: an HTTP forward proxy on 127.0.0.1, as Squid or a corporate proxy behaves: plain
 * HTTP comes in absolute form (`GET http://host:port/path`) and is forwarded; HTTPS comes as a
 * CONNECT tunnel (RFC 9110, section 9.3.6) to `host:port`, over which TLS goes end to end. It
 * records the target of each, and the Proxy-Authorization each carried. Given a certificate, it is
 * an https:// proxy: TLS to the proxy itself, and inside it the tunnel.
 */
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer, Server as HttpsServer } from 'node:https';
import { connect, type AddressInfo, type Socket } from 'node:net';

export interface ProxiedRequest {
  /** CONNECT (a tunnel) or the forwarded request's method. */
  readonly method: string;
  /** host:port */
  readonly target: string;
  readonly proxyAuthorization: string | undefined;
}

export class ForwardProxy {
  readonly requests: ProxiedRequest[] = [];
  readonly #server: Server;
  readonly #open = new Set<Socket>();

  /** With `tls`, an https:// proxy: the client speaks TLS to the proxy itself, and through it to the target. */
  constructor(tls?: { readonly cert: string; readonly key: string }) {
    const forward = (req: IncomingMessage, res: ServerResponse) => {
      const target = new URL(String(req.url));
      this.requests.push({ method: req.method ?? '', target: target.host, proxyAuthorization: req.headers['proxy-authorization'] });
      const upstream = request(target, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    };
    this.#server = tls === undefined ? createServer(forward) : createTlsServer(tls, forward);
    this.#server.on('connect', (req, client: Socket, head: Buffer) => {
      this.requests.push({ method: 'CONNECT', target: String(req.url), proxyAuthorization: req.headers['proxy-authorization'] });
      this.#open.add(client);
      client.once('close', () => this.#open.delete(client));
      const { hostname, port } = new URL(`http://${String(req.url)}`);
      const upstream = connect(Number(port), hostname.replace(/^\[|\]$/g, ''), () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(client).pipe(upstream);
      });
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
      client.on('close', () => upstream.destroy());
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  get url(): string {
    return `${this.#server instanceof HttpsServer ? 'https' : 'http'}://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** tunnels: the targets of the CONNECT requests, in order. */
  tunnels(): string[] {
    return this.requests.filter((r) => r.method === 'CONNECT').map((r) => r.target);
  }

  async close(): Promise<void> {
    for (const socket of this.#open) socket.destroy();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
