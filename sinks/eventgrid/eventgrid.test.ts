/**
 * The eventgrid sink against a local peer that speaks Event Grid's publish API (basic topics
 * and namespace topics) and checks every event against the CloudEvents spec: the wire format,
 * access-key auth, batching within 1 MB, the error table, and the same delivery suite as the
 * other sinks (an outage, isolation from a stuck peer, dead letters and their replay). Entra ID
 * auth is in managed-identity.test.ts, beside the token endpoint it needs.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SinkConfig } from '../../src/config/schema.ts';
import { eventGridSink, packBatches, publishUrl, type EventGridConfig } from './index.ts';
import type { Outcome, Sink } from '../../src/sinks/contract.ts';
import type { BridgeEvent } from '../../src/pipeline/cloudevent.ts';
import { cloudEventProblem, EventGridPeer, PEER_KEY } from '../../testkit/eventgrid-peer.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { startBridge, stopAll } from '../../testkit/harness.ts';
import { bridgeEvents, silentLogger, waitFor } from '../../test/helpers.ts';

let peer: EventGridPeer;
const sinks: Sink[] = [];
beforeEach(async () => {
  peer = new EventGridPeer();
  await peer.listen();
});
afterEach(async () => {
  await stopAll();
  for (const s of sinks.splice(0)) await s.close();
  await peer.close();
});

async function grid(extra: Record<string, unknown> = {}): Promise<Sink> {
  const config = SinkConfig.parse({
    name: 'grid',
    type: 'eventgrid',
    endpoint: peer.url,
    accessKey: PEER_KEY,
    delivery: { timeoutMs: 3000 },
    ...extra,
  }) as EventGridConfig;
  const sink = await eventGridSink.create(config, { logger: silentLogger, stdout: process.stdout });
  sinks.push(sink);
  return sink;
}
const send = (sink: Sink, evs: BridgeEvent[]): Promise<Outcome[]> => sink.send(evs, { signal: new AbortController().signal });
const delivered = (n: number) => Array.from({ length: n }, () => ({ status: 'delivered' }));

describe('eventgrid sink on the wire', () => {
  it('a basic topic: one cloudevents-batch+json array with aeg-sas-key, every event a valid CloudEvent', async () => {
    const events = bridgeEvents(3);
    expect(await send(await grid(), events)).toEqual(delivered(3));
    expect(peer.publishes).toEqual([{ topic: 'basic', auth: 'key', status: 200, events: 3 }]);
    expect(peer.events()).toEqual(JSON.parse(JSON.stringify(events)));
    expect(peer.events().map(cloudEventProblem)).toEqual([null, null, null]);
  });

  it('a namespace topic: POST /topics/NAME:publish with Authorization: SharedAccessKey', async () => {
    expect(await send(await grid({ namespaceTopic: 'maintenance' }), bridgeEvents(2))).toEqual(delivered(2));
    expect(peer.publishes).toEqual([{ topic: 'maintenance', auth: 'key', status: 200, events: 2 }]);
  });

  it('builds the publish URL of either kind of topic', () => {
    expect(publishUrl({ endpoint: 'https://t.westeurope-1.eventgrid.azure.net' })).toBe(
      'https://t.westeurope-1.eventgrid.azure.net/api/events?api-version=2018-01-01',
    );
    expect(publishUrl({ endpoint: 'https://t.westeurope-1.eventgrid.azure.net/api/events' })).toBe(
      'https://t.westeurope-1.eventgrid.azure.net/api/events?api-version=2018-01-01',
    );
    expect(publishUrl({ endpoint: 'https://ns.westeurope-1.eventgrid.azure.net/', namespaceTopic: 'm' })).toBe(
      'https://ns.westeurope-1.eventgrid.azure.net/topics/m:publish?api-version=2024-06-01',
    );
  });

  it('keeps every request within 1 MB, in order, and rejects an event larger than Event Grid accepts', async () => {
    // 100 events of about 40 KB: three requests or more, none over the limit
    const events = bridgeEvents(100, 'Scheduled', 40_000);
    expect(await send(await grid(), events)).toEqual(delivered(100));
    expect(peer.publishes.length).toBeGreaterThanOrEqual(4);
    expect(peer.publishes.every((p) => p.status === 200)).toBe(true);
    expect(peer.events().map((e) => e.id)).toEqual(events.map((e) => e.id));
    const [huge] = bridgeEvents(1, 'Scheduled', 1_100_000);
    const [small] = bridgeEvents(1);
    const outcomes = await send(await grid(), [huge!, small!]);
    expect(outcomes[0]).toMatchObject({
      status: 'reject',
      reason: expect.stringMatching(/^the event is \d+ bytes; Event Grid accepts at most 1048574 per event$/),
    });
    expect(outcomes[1]).toEqual({ status: 'delivered' });
  });

  it('the peer refuses what Event Grid refuses: events that break the CloudEvents spec, another content type, an unsigned request', async () => {
    const good = JSON.parse(JSON.stringify(bridgeEvents(1)[0])) as Record<string, unknown>;
    expect(cloudEventProblem(good)).toBeNull();
    expect(cloudEventProblem({ ...good, specversion: '0.3' })).toMatch(/specversion/);
    expect(cloudEventProblem({ ...good, id: '' })).toMatch(/^id/);
    expect(cloudEventProblem({ ...good, source: undefined })).toMatch(/^source/);
    expect(cloudEventProblem({ ...good, time: 'Mon, 11 Apr 2022 22:26:58 GMT' })).toMatch(/RFC 3339/);
    expect(cloudEventProblem({ ...good, BadName: 1 })).toMatch(/extension name/);
    const post = (headers: Record<string, string>, body: string) =>
      fetch(`${peer.url}/api/events?api-version=2018-01-01`, { method: 'POST', headers, body });
    expect((await post({ 'content-type': 'application/json', 'aeg-sas-key': PEER_KEY }, JSON.stringify([good]))).status).toBe(400);
    expect((await post({ 'content-type': 'application/cloudevents-batch+json' }, JSON.stringify([good]))).status).toBe(401);
    expect(
      (
        await post(
          { 'content-type': 'application/cloudevents-batch+json', 'aeg-sas-key': PEER_KEY },
          JSON.stringify([{ ...good, type: 7 }]),
        )
      ).status,
    ).toBe(400);
    expect(peer.events()).toEqual([]);
  });

  it('goes through the configured proxy', async () => {
    const proxy = new HttpPeer();
    await proxy.listen();
    proxy.answer = () => ({ status: 200, body: '{}' });
    try {
      const sink = await grid({ endpoint: 'http://mytopic.westeurope-1.eventgrid.invalid', proxy: proxy.url, allowInsecureHttp: true });
      expect(await send(sink, bridgeEvents(1))).toEqual(delivered(1));
      // a forward proxy gets the absolute URL
      expect(proxy.requests.map((r) => r.url)).toEqual(['http://mytopic.westeurope-1.eventgrid.invalid/api/events?api-version=2018-01-01']);
      expect(proxy.requests[0]!.headers['aeg-sas-key']).toBe(PEER_KEY);
    } finally {
      await proxy.close();
    }
  });

  it('packs batches up to the byte limit, never an empty one', () => {
    expect(packBatches([4, 4, 4], 12)).toEqual([[0, 1], [2]]);
    expect(packBatches([20, 1], 12)).toEqual([[0], [1]]);
    expect(packBatches([], 12)).toEqual([]);
  });
});

describe('eventgrid sink: the error table', () => {
  it.each([
    [500, 'retry'],
    [503, 'retry'],
    [408, 'retry'],
    [401, 'retry'],
    [403, 'retry'],
    [404, 'reject'],
    [410, 'reject'],
  ] as const)('HTTP %i is %s', async (status, expected) => {
    peer.faults.push({ status, count: 1 });
    const [o] = await send(await grid(), bridgeEvents(1));
    expect(o!.status).toBe(expected);
    expect(o).toMatchObject({ reason: expect.stringMatching(new RegExp(`^HTTP ${status}`)) });
  });

  it('429 is retried after its Retry-After', async () => {
    peer.faults.push({ status: 429, count: 1, retryAfter: '7' });
    const [o] = await send(await grid(), bridgeEvents(1));
    expect(o).toMatchObject({ status: 'retry', retryAfterMs: 7000 });
  });

  it('a batch refused as invalid (400) is sent again one event at a time: only the offending event is rejected', async () => {
    const events = bridgeEvents(3);
    peer.refuseSubject = events[1]!.subject!;
    const outcomes = await send(await grid(), events);
    expect(outcomes.map((o) => o.status)).toEqual(['delivered', 'reject', 'delivered']);
    expect(outcomes[1]).toMatchObject({ reason: expect.stringContaining('refused by the topic') });
    expect(peer.events().map((e) => e.id)).toEqual([events[0]!.id, events[2]!.id]);
  });

  it('a wrong key and a missing namespace topic are named by the peer, and nothing is accepted', async () => {
    const [wrong] = await send(await grid({ accessKey: 'd3Jvbmcta2V5' }), bridgeEvents(1));
    expect(wrong).toMatchObject({ status: 'retry', reason: expect.stringContaining('the access key is not valid for this topic') });
    const [missing] = await send(await grid({ namespaceTopic: 'nope' }), bridgeEvents(1));
    expect(missing).toMatchObject({ status: 'reject', reason: expect.stringContaining('does not exist') });
    expect(peer.events()).toEqual([]);
  });

  it('needs either an access key or a credential, by path', () => {
    const neither = SinkConfig.safeParse({ name: 'g', type: 'eventgrid', endpoint: 'https://t.example' });
    expect(neither.error!.issues.map((i) => i.path.join('.'))).toContain('accessKey');
    const both = SinkConfig.safeParse({
      name: 'g',
      type: 'eventgrid',
      endpoint: 'https://t.example',
      accessKey: 'k',
      credential: { kind: 'managedIdentity' },
    });
    expect(both.success).toBe(false);
  });
});

describe('eventgrid sink in the bridge: the delivery suite', () => {
  const fast = { initialBackoffMs: 20, maxBackoffMs: 100, timeoutMs: 2000 };
  const types = () => peer.events().map((e) => `${String(e.type).slice(21)}:${String(e.subject)}`);

  it('rides out an outage of 503s: everything arrives, in order per event, nothing dead-lettered', async () => {
    peer.faults.push({ status: 503, count: 1_000_000, retryAfter: '0' });
    const h = await startBridge({ sinks: [{ name: 'grid', type: 'eventgrid', endpoint: peer.url, accessKey: PEER_KEY, delivery: fast }] });
    const e = h.sim.addEvent({ noticeMs: 300, startedMs: 300 });
    await waitFor(() => h.sim.events.length === 0, 'the event to run its course');
    await waitFor(() => peer.publishes.length >= 6, 'several failed attempts');
    peer.faults.length = 0;
    await waitFor(() => h.bridge.store.outbox.depth().size === 0 && types().includes(`completed:${e.eventId}`), 'the outbox to drain');
    expect(types()).toEqual([`scheduled:${e.eventId}`, `started:${e.eventId}`, `completed:${e.eventId}`]);
    expect(h.bridge.store.outbox.deadLetters()).toEqual([]);
    expect(h.lines.some((l) => l.code === 'DELIVERY_RETRY' && l.sink === 'grid' && String(l.err).startsWith('HTTP 503'))).toBe(true);
  });

  it('a topic that never answers does not hold back a healthy sink', async () => {
    peer.faults.push({ hang: true, count: 1_000_000 });
    const healthy = new HttpPeer();
    await healthy.listen();
    try {
      const h = await startBridge({
        sinks: [
          { name: 'grid', type: 'eventgrid', endpoint: peer.url, accessKey: PEER_KEY, delivery: { timeoutMs: 600_000 } },
          { name: 'healthy', type: 'webhook', url: healthy.url },
        ],
      });
      const a = h.sim.addEvent({ noticeMs: 600_000 });
      const b = h.sim.addEvent({ noticeMs: 600_000 });
      await waitFor(() => healthy.requests.length === 2, 'the healthy peer');
      expect(new Set(healthy.requests.map((r) => r.headers['ce-subject']))).toEqual(new Set([a.eventId, b.eventId]));
      expect(h.bridge.store.outbox.depth().get('grid')).toBe(2);
      expect(peer.events()).toEqual([]);
    } finally {
      await stopAll();
      await healthy.close();
    }
  });

  it('dead-letters at once when the topic does not exist, and delivers after a replay once it does', async () => {
    peer.topics.delete('maintenance');
    const h = await startBridge({
      sinks: [{ name: 'grid', type: 'eventgrid', endpoint: peer.url, namespaceTopic: 'maintenance', accessKey: PEER_KEY, delivery: fast }],
    });
    const e = h.sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => h.bridge.store.outbox.deadLetters().length === 1, 'a dead letter');
    expect(h.bridge.store.outbox.deadLetters()[0]).toMatchObject({
      sink: 'grid',
      eventId: e.eventId,
      attempts: 1,
      lastError: expect.stringMatching(/^rejected: HTTP 404: the topic does not exist/),
    });
    peer.topics.add('maintenance');
    expect(h.bridge.store.outbox.replayDeadLetters('grid')).toBe(1);
    await waitFor(() => peer.events('maintenance').length === 1, 'the replayed delivery', 10_000);
    expect(peer.events('maintenance')[0]).toMatchObject({ subject: e.eventId, type: 'azure.scheduledevent.scheduled' });
  });
});
