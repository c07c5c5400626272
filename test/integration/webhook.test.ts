/**
 * The webhook sink over the wire, against real node:http / node:https peers on 127.0.0.1.
 */
import { createServer } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CloudEvent, HTTP } from 'cloudevents';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { classifyHttpStatus } from '../../src/sinks/shared/classify.ts';
import { toCloudEvent, type BridgeEvent } from '../../src/pipeline/cloudevent.ts';
import { diff } from '../../src/pipeline/diff.ts';
import { identityFrom } from '../../src/imds/identity.ts';
import { toDomainDocument, WireDocument } from '../../src/imds/wire.ts';
import { SinkConfig } from '../../src/config/schema.ts';
import type { Outcome, Sink } from '../../src/sinks/contract.ts';
import { webhookSink, type WebhookConfig } from '../../src/sinks/webhook.ts';
import { percentEncode } from '../../src/sinks/shared/bindings/http.ts';
import { sign, secretKey } from '../../src/lib/standard-webhooks.ts';
import { HttpPeer, type Recorded } from '../../testkit/http-peer.ts';
import { captureLogger, fixtureDocument, ROOT, tempDir } from '../helpers.ts';

const vectors = JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'vectors', 'signing.json'), 'utf8')) as {
  standard_webhooks_v1: { secret: string; webhook_id: string; webhook_timestamp: string; body: string; expected_signature: string };
};
const SECRET_A = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const SECRET_B = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

const [scheduled] = diff(fixtureDocument('live-migration-1.json'), fixtureDocument('live-migration-2.json'));
const [started] = diff(fixtureDocument('live-migration-2.json'), fixtureDocument('live-migration-3.json'));
const vm = identityFrom(null, { name: 'West NO "1" — ø' });
const ev = (t = scheduled!): BridgeEvent => toCloudEvent(t, { vm, observedAt: '2022-04-11T22:11:58.000Z' });

let peer: HttpPeer;
const sinks: Sink[] = [];
beforeEach(async () => {
  peer = new HttpPeer();
  await peer.listen();
});
afterEach(async () => {
  for (const s of sinks.splice(0)) await s.close();
  await peer.close();
});

async function makeSink(extra: Record<string, unknown> = {}, url = peer.url) {
  const config = SinkConfig.parse({ name: 'hook', type: 'webhook', url: `${url}/hook`, ...extra }) as WebhookConfig;
  const { logger, lines } = captureLogger();
  const sink = await webhookSink.create(config, { logger, stdout: process.stdout });
  sinks.push(sink);
  return { sink, lines };
}
const send = (sink: Sink, events: BridgeEvent[], signal = new AbortController().signal): Promise<Outcome[]> => sink.send(events, { signal });

/** A spec-following receiver: percent-decode the ce-* headers, then let the CloudEvents SDK read the message. */
function receive(r: Recorded): CloudEvent<unknown> | CloudEvent<unknown>[] {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(r.headers)) headers[k] = k.startsWith('ce-') ? decodeURIComponent(String(v)) : String(v);
  return HTTP.toEvent({ headers, body: r.body }) as CloudEvent<unknown> | CloudEvent<unknown>[];
}

describe('webhook sink: CloudEvents HTTP binding', () => {
  it('binary mode: data in the body, every attribute in a percent-encoded ce-* header', async () => {
    const { sink } = await makeSink();
    const e = ev();
    expect(await send(sink, [e])).toEqual([{ status: 'delivered' }]);
    const r = peer.requests[0]!;
    expect(r.method).toBe('POST');
    expect(r.url).toBe('/hook');
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.headers['ce-specversion']).toBe('1.0');
    expect(r.headers['ce-id']).toBe(e.id);
    expect(r.headers['ce-type']).toBe('azure.scheduledevent.scheduled');
    expect(r.headers['ce-incarnation']).toBe('2');
    // the source URN holds "%", spaces were already %20 in the URN: each % is encoded again
    expect(r.headers['ce-source']).toBe(percentEncode(e.source));
    expect(r.headers['ce-source']).toMatch(/^urn:se-bridge:vm:West%2520NO%2520%2522/);
    expect(JSON.parse(r.body)).toEqual(e.data);
    // in binary mode every attribute travels as a string: the integer extension comes back as "2"
    const back = receive(r) as CloudEvent<unknown>;
    expect({ ...back.toJSON(), incarnation: Number(back.incarnation) }).toEqual(e.toJSON());
  });

  it('percent-encodes space, quote, percent and non-ASCII as UTF-8', () => {
    expect(percentEncode('a b"c%d')).toBe('a%20b%22c%25d');
    expect(percentEncode('ø€')).toBe('%C3%B8%E2%82%AC');
    expect(percentEncode('plain-ASCII_~!')).toBe('plain-ASCII_~!');
  });

  it('structured mode: one application/cloudevents+json body', async () => {
    const { sink } = await makeSink({ mode: 'structured' });
    const e = ev();
    await send(sink, [e]);
    const r = peer.requests[0]!;
    expect(r.headers['content-type']).toBe('application/cloudevents+json; charset=utf-8');
    expect(r.headers['ce-id']).toBeUndefined();
    expect((receive(r) as CloudEvent<unknown>).toJSON()).toEqual(e.toJSON());
  });

  it('batch mode: one application/cloudevents-batch+json array per request', async () => {
    const { sink } = await makeSink({ mode: 'batch', batchSize: 10 });
    expect(sink.maxBatchSize).toBe(10);
    const events = [ev(), ev(started!)];
    expect(await send(sink, events)).toEqual([{ status: 'delivered' }, { status: 'delivered' }]);
    expect(peer.requests).toHaveLength(1);
    const r = peer.requests[0]!;
    expect(r.headers['content-type']).toBe('application/cloudevents-batch+json; charset=utf-8');
    const back = receive(r) as CloudEvent<unknown>[];
    expect(back.map((b) => b.id)).toEqual(events.map((e) => e.id));
  });
});

describe('webhook sink: Standard Webhooks signatures', () => {
  it('signs the published test vector', () => {
    const v = vectors.standard_webhooks_v1;
    expect(sign(secretKey(v.secret)!, v.webhook_id, v.webhook_timestamp, v.body)).toBe(v.expected_signature);
  });

  it('signs each request so the standardwebhooks library verifies it, with webhook-id = the CloudEvent id', async () => {
    const { sink } = await makeSink({ secret: SECRET_A });
    const e = ev();
    await send(sink, [e]);
    const r = peer.requests[0]!;
    expect(r.headers['webhook-id']).toBe(e.id);
    expect(Math.abs(Number(r.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    const headers = Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)]));
    expect(new Webhook(SECRET_A).verify(r.body, headers)).toEqual(e.data);
    expect(() => new Webhook(SECRET_B).verify(r.body, headers)).toThrow();
  });

  it('keeps webhook-id ASCII for an EventId that is not, signed as sent', async () => {
    const wire = { EventId: 'événement-1 ✓', EventType: 'Reboot', EventStatus: 'Scheduled', Resources: ['vm0'], NotBefore: '' };
    const [t] = diff(null, toDomainDocument(WireDocument.parse({ DocumentIncarnation: 1, Events: [wire] })).document);
    const e = ev(t!);
    for (const mode of ['binary', 'structured'] as const) {
      const { sink } = await makeSink({ secret: SECRET_A, mode });
      await send(sink, [e]);
      const r = peer.requests.at(-1)!;
      const id = String(r.headers['webhook-id']);
      expect(id).toMatch(/^[\x21-\x7e]+$/);
      expect(decodeURIComponent(id)).toBe(e.id);
      const headers = Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)]));
      expect(new Webhook(SECRET_A).verify(r.body, headers)).toBeTruthy();
    }
  });

  it('signs with every secret during a rotation', async () => {
    const { sink } = await makeSink({ secret: [SECRET_A, SECRET_B], mode: 'structured' });
    await send(sink, [ev()]);
    const r = peer.requests[0]!;
    const headers = Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)]));
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(new Webhook(SECRET_A).verify(r.body, headers)).toBeTruthy();
    expect(new Webhook(SECRET_B).verify(r.body, headers)).toBeTruthy();
  });

  it('rejects a secret that is not whsec_ in the configuration, by path', () => {
    const r = SinkConfig.safeParse({ name: 'h', type: 'webhook', url: 'https://x.example', secret: 'hunter2' });
    expect(r.success).toBe(false);
    expect(r.error!.issues[0]!.path).toEqual(['secret']);
  });
});

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
    const r = SinkConfig.safeParse({ name: 'h', type: 'webhook', url: 'https://x.example', headers: { 'ce-id': 'x', 'Content-Type': 'y' } });
    expect(r.success).toBe(false);
  });

  describe('over TLS with a private CA', () => {
    let dir: ReturnType<typeof tempDir>;
    let tlsPeer: HttpPeer;
    beforeAll(async () => {
      dir = tempDir();
      // a self-signed certificate for 127.0.0.1 kept with the fixtures (no openssl needed here)
      for (const f of ['key.pem', 'cert.pem']) copyFileSync(join(ROOT, 'test', 'fixtures', 'tls', f), join(dir.path, f));
      tlsPeer = new HttpPeer({ key: readFileSync(join(dir.path, 'key.pem'), 'utf8'), cert: readFileSync(join(dir.path, 'cert.pem'), 'utf8') });
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
      expect(o).toMatchObject({ status: 'retry', reason: expect.stringMatching(/^TLS error (DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN)/) });
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
    // a tunnelling proxy (HTTP CONNECT) that records which target each tunnel was for
    const tunnels: string[] = [];
    const proxy = createServer();
    proxy.on('connect', (req, client: Socket, head: Buffer) => {
      tunnels.push(String(req.url));
      const [host, port] = String(req.url).split(':') as [string, string];
      const upstream = connect(Number(port), host, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(client).pipe(upstream);
      });
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const via = await makeSink({ proxy: proxyUrl });
      expect(await send(via.sink, [ev()])).toEqual([{ status: 'delivered' }]);
      expect(tunnels).toEqual([new URL(peer.url).host]);
      expect(peer.requests).toHaveLength(1);
      const direct = await makeSink({ proxy: 'none' });
      expect(await send(direct.sink, [ev()])).toEqual([{ status: 'delivered' }]);
      expect(peer.requests).toHaveLength(2);
      expect(tunnels).toHaveLength(1);
    } finally {
      for (const s of sinks.splice(0)) await s.close();
      proxy.closeAllConnections();
      await new Promise<void>((r) => proxy.close(() => r()));
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
    const [o] = await send(sink, [ev(started!)]);
    expect(o).toMatchObject({ status: 'reject', reason: expect.stringMatching(/^sink disabled: HTTP 410/) });
    expect(peer.requests).toHaveLength(1);
  });

  it('reads at most a little of a huge error body, and makes non-UTF-8 text printable', async () => {
    const { sink } = await makeSink();
    peer.answer = () => ({ status: 500, body: Buffer.concat([Buffer.from([0xff, 0xfe, 0x00, 0x41]), Buffer.alloc(5 * 1024 * 1024, 0x42)]) });
    const [o] = await send(sink, [ev()]);
    expect(o!.status).toBe('retry');
    const reason = (o as { reason: string }).reason;
    expect(reason.length).toBeLessThan(400);
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
