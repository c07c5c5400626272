/**
 * The load balancer's prober always gets an answer. Over the wire, against the probe sink of a
 * running bridge: 64 keep-alive connections from four loopback addresses (16 each, the
 * per-address cap) ask the probe over and over and reconnect whenever they are closed, and a
 * separate prober from a fifth address is answered every time. `allowFrom` closes anyone else's
 * connection unanswered. And the same addresses' keys: IPv6 clients count per /64.
 */
import { connect, type Socket } from 'node:net';
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startBridge, stopAll } from '../../testkit/harness.ts';
import { clientKey, Cidrs, normalizeAddress } from '../../src/lib/client-address.ts';
import { freePort, waitFor } from '../../test/helpers.ts';

afterEach(stopAll);

/** ask sends one GET /probe from `localAddress` on a new connection. */
function ask(port: number, localAddress: string): Promise<{ status: number; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/probe', localAddress, agent: false, timeout: 2000 }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 2 s')));
    req.on('error', reject);
    req.end();
  });
}

/** A flooder: `n` keep-alive connections from one address, each asking every `everyMs`, reconnecting when closed. */
class Flooder {
  readonly sockets = new Set<Socket>();
  answers = 0;
  #stopped = false;
  readonly port: number;
  readonly localAddress: string;
  readonly n: number;
  readonly everyMs: number;
  constructor(port: number, localAddress: string, n: number, everyMs: number) {
    this.port = port;
    this.localAddress = localAddress;
    this.n = n;
    this.everyMs = everyMs;
  }
  start(): this {
    for (let i = 0; i < this.n; i++) this.#open();
    return this;
  }
  #open(): void {
    if (this.#stopped) return;
    const s = connect({ host: '127.0.0.1', port: this.port, localAddress: this.localAddress });
    this.sockets.add(s);
    const send = () => {
      if (!s.destroyed && s.writable) s.write('GET /probe HTTP/1.1\r\nHost: probe\r\nConnection: keep-alive\r\n\r\n');
    };
    const timer = setInterval(send, this.everyMs);
    s.on('connect', send);
    s.on('data', (d: Buffer) => (this.answers += (d.toString().match(/HTTP\/1\.1 \d{3}/g) ?? []).length));
    s.on('error', () => undefined);
    s.on('close', () => {
      clearInterval(timer);
      this.sockets.delete(s);
      setTimeout(() => this.#open(), 5);
    });
  }
  stop(): void {
    this.#stopped = true;
    for (const s of this.sockets) s.destroy();
  }
}

describe('the probe under a flood of keep-alive connections', () => {
  it('answers a separate prober every time, and closes each connection after its answer', async () => {
    const port = await freePort();
    await startBridge({ sinks: [{ name: 'lb', type: 'probe', listen: `127.0.0.1:${port}`, drainSeconds: 0 }] });
    await waitFor(async () => (await ask(port, '127.0.0.1')).status === 200, 'the probe in service');
    const flood = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'].map((a) => new Flooder(port, a, 16, 100).start());
    try {
      await waitFor(() => flood.every((f) => f.answers >= 16), 'the flood answered', 10_000);
      const answers: number[] = [];
      for (let i = 0; i < 30; i++) {
        const r = await ask(port, '127.0.0.9').catch(() => ({ status: 0, connection: undefined }));
        answers.push(r.status);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(answers).toEqual(Array<number>(30).fill(200));
      expect((await ask(port, '127.0.0.9')).connection).toBe('close');
      expect(flood.reduce((n, f) => n + f.answers, 0)).toBeGreaterThan(64);
    } finally {
      for (const f of flood) f.stop();
    }
  });

  it('allowFrom: only the prober addresses get an answer; any other connection is closed unanswered', async () => {
    const port = await freePort();
    await startBridge({
      sinks: [{ name: 'lb', type: 'probe', listen: `127.0.0.1:${port}`, drainSeconds: 0, allowFrom: ['127.0.0.1', '127.0.7.0/24'] }],
    });
    await waitFor(async () => (await ask(port, '127.0.0.1')).status === 200, 'the probe in service');
    expect((await ask(port, '127.0.7.42')).status).toBe(200);
    await expect(ask(port, '127.0.0.2')).rejects.toThrow(/socket hang up|ECONNRESET/);
  });
});

describe('client keys', () => {
  it('count an IPv6 client per /64 and an IPv4-mapped address as IPv4; ranges match both', () => {
    expect(clientKey('2001:db8:1:2:aaaa::1')).toBe(clientKey('2001:db8:1:2:ffff:ffff:ffff:ffff'));
    expect(clientKey('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:db8:1:3::1')).not.toBe(clientKey('2001:db8:1:2::1'));
    expect(clientKey('::1')).toBe('0:0:0:0::/64');
    expect(clientKey('::ffff:10.1.2.3')).toBe('10.1.2.3');
    expect(normalizeAddress('::FFFF:192.0.2.1')).toBe('192.0.2.1');
    const ranges = new Cidrs(['168.63.129.16', '10.0.0.0/8', 'fd00::/8']);
    expect(ranges.has('168.63.129.16')).toBe(true);
    expect(ranges.has('::ffff:10.200.0.1')).toBe(true);
    expect(ranges.has('fd12:3456::1')).toBe(true);
    expect(ranges.has('168.63.129.17')).toBe(false);
    expect(ranges.has('2001:db8::1')).toBe(false);
    expect(() => new Cidrs(['10.0.0.0/33'])).toThrow(/not an address or CIDR range/);
  });
});
