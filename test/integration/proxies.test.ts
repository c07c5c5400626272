/**
 * Behind a reverse proxy each client has its own rate limit. A real proxying hop (node:http on
 * 127.0.0.1, appending the client's address to X-Forwarded-For as nginx's
 * `$proxy_add_x_forwarded_for` does) stands in front of the bridge's approval server; clients
 * reach it from different loopback addresses. With `server.trustedProxies` naming the proxy,
 * one client's burst leaves the others untouched, and a client cannot choose its address by
 * sending its own X-Forwarded-For. Without it, every client shares the proxy's limit. And the
 * `Forwarded` header (RFC 7239) is read the same way.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startBridge, stopAll } from '../../testkit/harness.ts';
import { clientAddress, Cidrs } from '../../src/lib/client-address.ts';

afterEach(stopAll);
const SECRET = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;

/** proxy forwards every request to `target`, appending the client's address to X-Forwarded-For. */
async function proxy(target: string): Promise<{ url: string; server: Server }> {
  const t = new URL(target);
  const server = createServer((req, res) => {
    const xff = [req.headers['x-forwarded-for'], req.socket.remoteAddress].filter((x) => x !== undefined).join(', ');
    const up = request(
      {
        host: t.hostname,
        port: t.port,
        path: req.url,
        method: req.method,
        headers: { ...req.headers, 'x-forwarded-for': xff },
        localAddress: '127.0.0.1',
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    up.on('error', () => res.writeHead(502).end());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** post sends an (unsigned) approval from `localAddress` through the proxy and gives the status. */
function post(url: string, localAddress: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/v1/approvals`,
      { method: 'POST', localAddress, agent: false, headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end('{"eventId":"E"}');
  });
}

async function behindProxy(trustedProxies: string[]) {
  const h = await startBridge({
    config: {
      approval: { secret: SECRET },
      server: { listen: '127.0.0.1:0', rateLimit: { perSecond: 0.1, burst: 3 }, trustedProxies },
    },
    sinks: [],
  });
  const p = await proxy(h.bridge.approvalServerUrl!);
  return { h, p };
}

describe('behind a reverse proxy', () => {
  it('with trustedProxies, each client has its own rate limit, and its own X-Forwarded-For cannot change who it is', async () => {
    const { p } = await behindProxy(['127.0.0.1']);
    try {
      const a = [];
      for (let i = 0; i < 5; i++) a.push(await post(p.url, '127.0.0.2'));
      expect(a.slice(0, 3).every((s) => s !== 429)).toBe(true);
      expect(a.slice(3)).toEqual([429, 429]);
      // another client behind the same proxy is not limited by the first one's burst
      expect(await post(p.url, '127.0.0.3')).not.toBe(429);
      // the first client claiming another address is still the first client
      expect(await post(p.url, '127.0.0.2', { 'x-forwarded-for': '192.0.2.77' })).toBe(429);
    } finally {
      p.server.close();
    }
  });

  it('without trustedProxies, every client shares the proxy’s limit', async () => {
    const { p } = await behindProxy([]);
    try {
      for (let i = 0; i < 3; i++) await post(p.url, '127.0.0.2');
      expect(await post(p.url, '127.0.0.3')).toBe(429);
    } finally {
      p.server.close();
    }
  });

  it('reads Forwarded (RFC 7239) and X-Forwarded-For: the last hop that is not a trusted proxy', () => {
    const req = (socket: string, headers: Record<string, string>) =>
      ({ socket: { remoteAddress: socket }, headers }) as unknown as IncomingMessage;
    const trusted = new Cidrs(['10.0.0.0/8']);
    expect(clientAddress(req('10.0.0.5', { forwarded: 'for=192.0.2.60;proto=https, for="[2001:db8::1]:4711"' }), trusted)).toBe(
      '2001:db8::1',
    );
    expect(clientAddress(req('10.0.0.5', { forwarded: 'for="198.51.100.7:443", for=10.0.0.9' }), trusted)).toBe('198.51.100.7');
    expect(clientAddress(req('10.0.0.5', { 'x-forwarded-for': '203.0.113.9, 198.51.100.2, 10.1.1.1' }), trusted)).toBe('198.51.100.2');
    // from a socket that is not a trusted proxy, the headers are ignored
    expect(clientAddress(req('198.51.100.3', { 'x-forwarded-for': '203.0.113.9' }), trusted)).toBe('198.51.100.3');
    // a hop that is not an address: the proxy itself is the client
    expect(clientAddress(req('10.0.0.5', { 'x-forwarded-for': 'unknown' }), trusted)).toBe('10.0.0.5');
    expect(clientAddress(req('::ffff:10.0.0.5', { 'x-forwarded-for': '203.0.113.9' }), trusted)).toBe('203.0.113.9');
  });
});
