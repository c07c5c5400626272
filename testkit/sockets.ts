/**
 * Raw TCP clients for the connection-limit tests: each connects from a loopback address of its
 * own choosing (127.0.0.1, 127.0.0.2, ...), so one machine can play several clients.
 */
import { connect, type Socket } from 'node:net';

export interface OpenSocket {
  readonly socket: Socket;
  /** Resolves true when the server closes it. */
  readonly closed: Promise<boolean>;
}

/** openFrom connects to `url`'s host and port from `localAddress`. */
export function openFrom(url: string, localAddress: string): Promise<OpenSocket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), localAddress });
    const closed = new Promise<boolean>((done) => socket.once('close', () => done(true)));
    socket.once('connect', () => resolve({ socket, closed }));
    socket.once('error', reject);
  });
}

/** getFrom sends GET `path` over a new connection from `localAddress` and returns the raw answer. */
export async function getFrom(url: string, localAddress: string, path: string): Promise<string> {
  const s = await openFrom(url, localAddress);
  s.socket.write(`GET ${path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n`);
  return new Promise<string>((resolve) => {
    let text = '';
    s.socket.on('data', (c: Buffer) => (text += c.toString()));
    s.socket.once('close', () => resolve(text));
  });
}
