/**
 * The webhook sink over the wire, continued: headers, auth, TLS, proxies, and every outcome.
 */
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyHttpStatus } from '../../src/sinks/classify.ts';
import { SinkConfig } from '../../src/config/schema.ts';
import type { Outcome } from '../../src/sinks/contract.ts';
import { ForwardProxy } from '../../testkit/forward-proxy.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { ROOT, tempDir } from '../../test/helpers.ts';
import { ev, makeSink, peer, send, sinks, started, usePeer } from '../../testkit/webhook-sink.ts';

usePeer();

describe('webhook sink: headers, auth, TLS', () => {
  it('sends static headers and bearer auth', async () => {
    const { sink } = await makeSink({ headers: { 'X-Env': 'prod' }, auth: { bearer: 't0ken' } });
    await send(sink, [ev()]);
    expect(peer.requests[0]!.headers).toMatchObject({ 'x-env': 'prod', authorization: 'Bearer t0ken' });
    expect(peer.requests[0]!.headers['user-agent']).toMatch(/^se-bridge\//);
  });

  it('sends basic auth', async () => {
    const { sink } = await makeSink({ auth: { basic: { username: 'u', password: 'p:w' } } });
    await send(sink, [ev()]);
    expect(peer.requests[0]!.headers.authorization).toBe(`Basic ${Buffer.from('u:p:w').toString('base64')}`);
  });

  it('refuses headers the sink sets itself', () => {
    const r = SinkConfig.safeParse({
      name: 'h',
      type: 'webhook',
      url: 'https://x.example',
      headers: { 'ce-id': 'x', 'Content-Type': 'y' },
    });
    expect(r.success).toBe(false);
  });

  describe('over TLS with a private CA', () => {
    let dir: ReturnType<typeof tempDir>;
    let tlsPeer: HttpPeer;
    beforeAll(async () => {
      dir = tempDir();
      // a self-signed certificate for 127.0.0.1 kept with the fixtures (no openssl needed here)
      for (const f of ['key.pem', 'cert.pem']) copyFileSync(join(ROOT, 'test', 'fixtures', 'tls', f), join(dir.path, f));
      tlsPeer = new HttpPeer({
        key: readFileSync(join(dir.path, 'key.pem'), 'utf8'),
        cert: readFileSync(join(dir.path, 'cert.pem'), 'utf8'),
      });
      await tlsPeer.listen();
    });
    afterAll(async () => {
      await tlsPeer.close();
      dir.cleanup();
    });

    it('delivers when the CA file is configured', async () => {
      const { sink } = await makeSink({ tls: { caFile: join(dir.path, 'cert.pem') } }, tlsPeer.url);
      expect(await send(sink, [ev()])).toEqual([{ status: 'delivered' }]);
      expect(tlsPeer.requests).toHaveLength(1);
    });

    it('retries with a TLS error, and never skips verification silently', async () => {
      const { sink } = await makeSink({ proxy: 'none' }, tlsPeer.url);
      const [o] = await send(sink, [ev()]);
      expect(o).toMatchObject({
        status: 'retry',
        reason: expect.stringMatching(/^TLS error (DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN)/),
      });
      const insecure = await makeSink({ tls: { insecureSkipVerify: true } }, tlsPeer.url);
      expect(await send(insecure.sink, [ev()])).toEqual([{ status: 'delivered' }]);
      expect(insecure.lines.some((l) => l.code === 'TLS_VERIFICATION_OFF' && l.level === 40)).toBe(true);
    });

    it('names a CA file that cannot be read, by path', () => {
      const r = SinkConfig.safeParse({ name: 'h', type: 'webhook', url: 'https://x.example', tls: { caFile: '/nonexistent/ca.pem' } });
      expect(r.success).toBe(false);
      expect(r.error!.issues[0]!.path).toEqual(['tls', 'caFile']);
    });
  });
});

describe('webhook sink: proxies', () => {
  it('goes through the proxy it is configured with, and straight to the peer with proxy: none', async () => {
    // a proxy that records the target of each request: plain HTTP is forwarded (absolute-form
    // request line), HTTPS is tunnelled (CONNECT)
    const proxy = await new ForwardProxy().start();
    const proxyUrl = proxy.url;
    const tunnels = () => proxy.requests.map((r) => r.target);
    try {
      const via = await makeSink({ proxy: proxyUrl });
      expect(await send(via.sink, [ev()])).toEqual([{ status: 'delivered' }]);
      expect(tunnels()).toEqual([new URL(peer.url).host]);
      expect(peer.requests).toHaveLength(1);
      const direct = await makeSink({ proxy: 'none' });
      expect(await send(direct.sink, [ev()])).toEqual([{ status: 'delivered' }]);
      expect(peer.requests).toHaveLength(2);
      expect(tunnels()).toHaveLength(1);
      // HTTPS through the same proxy is a CONNECT tunnel, and TLS is still verified end to end
      const tlsPeer = new HttpPeer({
        key: readFileSync(join(ROOT, 'test', 'fixtures', 'tls', 'key.pem'), 'utf8'),
        cert: readFileSync(join(ROOT, 'test', 'fixtures', 'tls', 'cert.pem'), 'utf8'),
      });
      await tlsPeer.listen();
      try {
        const tunnelled = await makeSink(
          { proxy: proxyUrl, tls: { caFile: join(ROOT, 'test', 'fixtures', 'tls', 'cert.pem') } },
          tlsPeer.url,
        );
        expect(await send(tunnelled.sink, [ev()])).toEqual([{ status: 'delivered' }]);
        expect(tunnels()).toEqual([new URL(peer.url).host, new URL(tlsPeer.url).host]);
        expect(proxy.tunnels()).toEqual([new URL(tlsPeer.url).host]);
        expect(tlsPeer.requests).toHaveLength(1);
      } finally {
        for (const s of sinks.splice(0)) await s.close();
        await tlsPeer.close();
      }
    } finally {
      for (const s of sinks.splice(0)) await s.close();
      await proxy.close();
    }
  });
});

describe('webhook sink: outcomes', () => {
  it.each<[number, Outcome['status']]>([
    [200, 'delivered'],
    [201, 'delivered'],
    [202, 'delivered'],
    [204, 'delivered'],
    [301, 'reject'],
    [302, 'reject'],
    [307, 'reject'],
    [400, 'reject'],
    [401, 'reject'],
    [403, 'reject'],
    [404, 'reject'],
    [408, 'retry'],
    [409, 'reject'],
    [410, 'reject'],
    [413, 'reject'],
    [422, 'reject'],
    [429, 'retry'],
    [500, 'retry'],
    [502, 'retry'],
    [503, 'retry'],
    [504, 'retry'],
  ])('HTTP %i -> %s', (status, expected) => {
    expect(classifyHttpStatus(status).status).toBe(expected);
  });

  it('carries Retry-After of a 429 or 503', async () => {
    const { sink } = await makeSink();
    peer.answer = () => ({ status: 503, headers: { 'retry-after': '7' }, body: 'busy' });
    expect(await send(sink, [ev()])).toEqual([{ status: 'retry', reason: 'HTTP 503: busy', retryAfterMs: 7000 }]);
  });

  it('does not follow redirects', async () => {
    const { sink, lines } = await makeSink();
    peer.answer = (r) => (r.url === '/hook' ? { status: 302, headers: { location: '/elsewhere' } } : { status: 200 });
    const [o] = await send(sink, [ev()]);
    expect(o).toMatchObject({ status: 'reject', reason: expect.stringContaining('redirects are not followed') });
    expect(peer.requests.map((r) => r.url)).toEqual(['/hook']);
    expect(lines.some((l) => l.code === 'WEBHOOK_REDIRECT')).toBe(true);
  });

  it('on 410 rejects and disables the sink loudly: later events are not sent', async () => {
    const { sink, lines } = await makeSink();
    peer.answer = () => ({ status: 410 });
    expect((await send(sink, [ev()]))[0]!.status).toBe('reject');
    expect(lines.some((l) => l.code === 'SINK_DISABLED' && l.level === 50)).toBe(true);
    const [o] = await send(sink, [ev(started)]);
    expect(o).toMatchObject({ status: 'reject', reason: expect.stringMatching(/^sink disabled: HTTP 410/) });
    expect(peer.requests).toHaveLength(1);
  });

  it('reads at most a little of a huge error body, and makes non-UTF-8 text printable', async () => {
    const { sink } = await makeSink();
    peer.answer = () => ({
      status: 500,
      body: Buffer.concat([Buffer.from([0xff, 0xfe, 0x00, 0x41]), Buffer.alloc(5 * 1024 * 1024, 0x42)]),
    });
    const [o] = await send(sink, [ev()]);
    expect(o!.status).toBe('retry');
    const reason = (o as { reason: string }).reason;
    // the sink keeps at most 4 KiB of it; the dispatcher cuts the reason to 300 after scrubbing
    expect(reason.length).toBeLessThan(4200);
    expect(reason).toMatch(/^HTTP 500: A?B+…$/);
  });

  it('retries an unreachable host with the network error code', async () => {
    const { sink } = await makeSink({ proxy: 'none' }, 'http://127.0.0.1:1');
    const [o] = await send(sink, [ev()]);
    expect(o).toMatchObject({ status: 'retry', reason: expect.stringMatching(/^network error ECONNREFUSED/) });
  });

  it('gives up on a slow body when the dispatcher aborts the attempt', async () => {
    const { sink } = await makeSink();
    peer.answer = () => ({ hang: true });
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('timed out')), 100);
    const [o] = await send(sink, [ev()], ac.signal);
    expect(o!.status).toBe('retry');
  });

  it('shares one keep-alive connection across requests', async () => {
    const { sink } = await makeSink();
    for (let i = 0; i < 5; i++) await send(sink, [ev()]);
    expect(new Set(peer.requests.map((r) => r.headers.connection))).toEqual(new Set(['keep-alive']));
  });
});
