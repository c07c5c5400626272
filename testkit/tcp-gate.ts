/**
 * TcpGate: a TCP relay on 127.0.0.1 in front of a server, which a test can close (every
 * connection reset, new ones refused at once) and open again: a store, an API server or any
 * peer that becomes unreachable for a while and comes back as it was.
 */
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export class TcpGate {
  readonly #target: { host: string; port: number };
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #open = true;
  port = 0;
  /** Bytes the target sent through the gate, in all. */
  received = 0;

  constructor(targetUrl: string) {
    const u = new URL(targetUrl);
    this.#target = { host: u.hostname, port: Number(u.port) };
    this.#server = createServer((client) => {
      if (!this.#open) return void client.resetAndDestroy();
      const upstream = connect(this.#target);
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on('close', () => this.#sockets.delete(s));
        s.on('error', () => undefined);
      }
      upstream.on('data', (chunk: Buffer) => (this.received += chunk.length));
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.port = (this.#server.address() as AddressInfo).port;
    return this;
  }

  /** url: the target's URL with the gate's port in its place. */
  url(targetUrl: string): string {
    const u = new URL(targetUrl);
    u.port = String(this.port);
    return u.toString().replace(/\/$/, targetUrl.endsWith('/') ? '/' : '');
  }

  /** close resets every connection and refuses new ones until open. */
  close(): void {
    this.#open = false;
    for (const s of this.#sockets) s.resetAndDestroy();
  }

  open(): void {
    this.#open = true;
  }

  async stop(): Promise<void> {
    this.close();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
