/**
 * The webhook sink over the wire, against real node:http / node:https peers on 127.0.0.1:
 * the CloudEvents binding modes and the Standard Webhooks signatures.
 */
import { CloudEvent } from 'cloudevents';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { diff } from '../../src/pipeline/diff.ts';
import { toDomainDocument, WireDocument } from '../../src/imds/wire.ts';
import { SinkConfig } from '../../src/config/schema.ts';
import { percentEncode } from '../../src/cloudevents/http.ts';
import { sign, secretKey } from '../../src/lib/standard-webhooks.ts';
import { ev, makeSink, peer, receive, SECRET_A, SECRET_B, send, started, vectors, usePeer } from '../../testkit/webhook-sink.ts';

usePeer();

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
    expect({ ...back.toJSON(), incarnation: Number(back.incarnation) }).toEqual({ ...e });
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
    expect((receive(r) as CloudEvent<unknown>).toJSON()).toEqual({ ...e });
  });

  it('batch mode: one application/cloudevents-batch+json array per request', async () => {
    const { sink } = await makeSink({ mode: 'batch', batchSize: 10 });
    expect(sink.maxBatchSize).toBe(10);
    const events = [ev(), ev(started)];
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
    const before = Math.floor(Date.now() / 1000);
    await send(sink, [e]);
    const after = Math.ceil(Date.now() / 1000);
    const r = peer.requests[0]!;
    expect(r.headers['webhook-id']).toBe(e.id);
    // the time of signing, in seconds: between the send's start and its end
    expect(Number(r.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(before);
    expect(Number(r.headers['webhook-timestamp'])).toBeLessThanOrEqual(after);
    const headers = Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)]));
    expect(new Webhook(SECRET_A).verify(r.body, headers)).toEqual(e.data);
    expect(() => new Webhook(SECRET_B).verify(r.body, headers)).toThrow();
  });

  it('keeps webhook-id ASCII for an EventId that is not, signed as sent', async () => {
    const wire = { EventId: 'événement-1 ✓', EventType: 'Reboot', EventStatus: 'Scheduled', Resources: ['vm0'], NotBefore: '' };
    const [t] = diff(null, toDomainDocument(WireDocument.parse({ DocumentIncarnation: 1, Events: [wire] })).document);
    const e = ev(t);
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
