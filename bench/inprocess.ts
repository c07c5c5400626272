/** Benchmark phases C to G: the bridge and its parts in this process, against local peers. */
import { existsSync, readFileSync, statSync } from 'node:fs';
import tls from 'node:tls';
import { join } from 'node:path';
import { request } from 'undici';
import { validateConfig } from '../src/config/load.ts';
import { SinkConfig } from '../src/config/schema.ts';
import { Bridge } from '../src/daemon/bridge.ts';
import { Dispatcher } from '../src/delivery/dispatcher.ts';
import { identityFrom } from '../src/imds/identity.ts';
import { toDomainDocument, WireDocument, type EventsDocument } from '../src/imds/wire.ts';
import { secretKey, signatureHeaders } from '../src/lib/standard-webhooks.ts';
import { fullJitter } from '../src/lib/time.ts';
import { toCloudEvent } from '../src/pipeline/cloudevent.ts';
import { diff } from '../src/pipeline/diff.ts';
import { ImdsSimulator } from '../src/simulator/server.ts';
import { DeliveryConfig, FilterConfig, type Sink } from '../src/sinks/contract.ts';
import { webhookSink, type WebhookConfig } from '../sinks/webhook/index.ts';
import { Store } from '../src/store/store.ts';
import { AmqpPeer } from '../src/simulator/servicebus/amqp-peer.ts';
import { HttpPeer } from '../testkit/http-peer.ts';
import { EventGridPeer, PEER_KEY } from '../testkit/eventgrid-peer.ts';
import { bridgeEvents } from '../testkit/events.ts';
import { eventHubsSink, type EventHubsConfig } from '../sinks/eventhubs/index.ts';
import { API_SECRET, fleetApproval, fleetKeys, fleetPeer, relayConfig, sessionOf } from '../testkit/fleet.ts';
import { startRelay } from '../src/relay/relay.ts';
import { dir, dist, quick, silent, sleep } from './common.ts';

// ----- C. approval round trip ----------------------------------------------------------------

export async function phaseApprovals() {
  const n = quick ? 100 : 500;
  const secret = `whsec_${Buffer.alloc(32, 2).toString('base64')}`;
  const key = secretKey(secret)!;
  const sim = new ImdsSimulator({ tickMs: 100 });
  await sim.listen(0);
  const config = validateConfig(
    {
      imds: { endpoint: sim.url, pollIntervalMs: 60_000 },
      state: { path: join(dir, 'approvals.db') },
      approval: { secret },
      server: { listen: '127.0.0.1:0', rateLimit: { perSecond: 1000, burst: 1000 } },
      observability: { listen: 'off' },
    },
    'bench',
    {},
  );
  const ids = Array.from({ length: n }, () => sim.addEvent({ noticeMs: 3_600_000 }).eventId);
  const bridge = await Bridge.create({ config, logger: silent });
  await bridge.start();
  for (let k = 0; k < 400 && !bridge.store.journal.knowsEvent(ids.at(-1)!); k++) await sleep(25);
  const samples: number[] = [];
  for (const id of ids) {
    const body = JSON.stringify({ eventId: id, approver: 'bench' });
    const t0 = Date.now();
    const res = await request(`${bridge.approvalServerUrl}/v1/approvals`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signatureHeaders([key], `msg_${id}`, body) },
      body,
    });
    await res.body.dump();
    const at = sim.startRequests.find((s) => s.eventIds.includes(id))?.at;
    if (res.statusCode === 200 && at !== undefined) samples.push(at - t0);
    await sleep(205); // the IMDS budget is 5 requests/s, StartRequests included
  }
  await bridge.stop(1000);
  await sim.close();
  return dist(samples);
}

// ----- C2. fleet approval round trip ----------------------------------------------------------

/**
 * The same round trip through the relay: a signed POST /v1/approvals to the relay, a command
 * over the AMQP peer's Service Bus queue to the bridge's inbox session, StartRequests at the
 * simulator; the relay answers when the bridge's outcome is back.
 */
export async function phaseFleetApprovals() {
  const n = quick ? 100 : 300;
  const sim = new ImdsSimulator({ vmName: 'bench-fleet-vm', peers: [], tickMs: 100 });
  await sim.listen(0);
  const peer = await fleetPeer();
  const keys = fleetKeys();
  const relay = await startRelay(
    relayConfig(peer, keys, { rateLimit: { perSecond: 1000, burst: 1000 }, log: { level: 'silent' } }),
    silent,
    { host: '127.0.0.1', port: 0 },
  );
  const config = validateConfig(
    {
      imds: { endpoint: sim.url, pollIntervalMs: 60_000 },
      state: { path: join(dir, 'fleet-approvals.db') },
      approval: fleetApproval(peer, keys, sessionOf(sim), relay.url),
      observability: { listen: 'off' },
    },
    'bench',
    {},
  );
  const ids = Array.from({ length: n }, () => sim.addEvent({ noticeMs: 3_600_000 }).eventId);
  const bridge = await Bridge.create({ config, logger: silent });
  await bridge.start();
  for (let k = 0; k < 400 && !(bridge.store.journal.knowsEvent(ids.at(-1)!) && bridge.inbox?.connected && relay.bus?.listening); k++)
    await sleep(25);
  const key = secretKey(API_SECRET)!;
  const samples: number[] = [];
  const answered: number[] = [];
  for (const id of ids) {
    const body = JSON.stringify({ vm: sessionOf(sim), eventId: id, approver: 'bench' });
    const t0 = Date.now();
    const res = await request(`${relay.url}/v1/approvals`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signatureHeaders([key], `msg_${id}`, body) },
      body,
    });
    await res.body.dump();
    const t1 = Date.now();
    const at = sim.startRequests.find((s) => s.eventIds.includes(id))?.at;
    if (res.statusCode === 200 && at !== undefined) {
      samples.push(at - t0);
      answered.push(t1 - t0);
    }
    await sleep(205); // the IMDS budget is 5 requests/s, StartRequests included
  }
  await relay.close();
  await bridge.stop(1000);
  await peer.close();
  await sim.close();
  return { toStart: dist(samples), toAnswer: dist(answered) };
}

// ----- D. fan-out and isolation ----------------------------------------------------------------

export async function phaseFanout(withStuck: boolean) {
  const sim = new ImdsSimulator({ vmName: 'bench-vm', tickMs: 20 });
  await sim.listen(0);
  const http = new HttpPeer();
  await http.listen();
  http.answer = (r) => (r.url === '/stuck' ? { hang: true } : r.url.startsWith('/teams') ? { status: 202 } : { status: 200, body: 'ok' });
  const amqp = new AmqpPeer();
  await amqp.listen();
  const grid = new EventGridPeer();
  await grid.listen();
  const file = join(dir, `fanout-${withStuck}.jsonl`);
  const sinks: Record<string, unknown>[] = [
    { name: 'webhook', type: 'webhook', url: `${http.url}/hook` },
    { name: 'file', type: 'file', path: file },
    { name: 'eventhubs', type: 'eventhubs', connectionString: amqp.connectionString('maintenance') },
    { name: 'servicebus', type: 'servicebus', connectionString: amqp.connectionString(), entity: 'q' },
    { name: 'slack', type: 'slack', webhookUrl: `${http.url}/services/x` },
    { name: 'teams', type: 'teams', webhookUrl: `${http.url}/teams` },
    { name: 'eventgrid', type: 'eventgrid', endpoint: grid.url, namespaceTopic: 'maintenance', accessKey: PEER_KEY },
  ];
  if (withStuck) sinks.push({ name: 'stuck', type: 'webhook', url: `${http.url}/stuck`, delivery: { timeoutMs: 600_000 } });
  const config = validateConfig(
    {
      imds: { endpoint: sim.url, pollIntervalMs: 200 },
      state: { path: join(dir, `fanout-${withStuck}.db`) },
      sinks,
      observability: { listen: 'off' },
    },
    'bench',
    {},
  );
  const doneAt = new Map<string, number>();
  let counts: Record<string, number> = {};
  const bridge = await Bridge.create({
    config,
    logger: silent,
    onOutcome: (r) => {
      if (r.outcome !== 'delivered') return;
      counts[r.sink] = (counts[r.sink] ?? 0) + 1;
      if (counts[r.sink] === 50) doneAt.set(r.sink, performance.now());
    },
  });
  await bridge.start();
  // warm up: one event through every sink, so connections exist in both runs alike
  sim.addEvent({ noticeMs: 3_600_000 });
  for (let k = 0; k < 500 && Object.keys(counts).length < sinks.length - (withStuck ? 1 : 0); k++) await sleep(10);
  await sleep(500);
  counts = {};
  const t0 = performance.now();
  for (let i = 0; i < 50; i++) sim.addEvent({ noticeMs: 3_600_000 });
  const names = ['webhook', 'file', 'eventhubs', 'servicebus', 'slack', 'teams', 'eventgrid'];
  for (let k = 0; k < 3000 && names.some((n) => !doneAt.has(n)); k++) await sleep(10);
  await bridge.stop(500);
  await Promise.all([sim.close(), http.close(), amqp.close(), grid.close()]);
  return Object.fromEntries(names.map((n) => [n, Math.round((doneAt.get(n) ?? NaN) - t0)]));
}

// ----- E. throughput ---------------------------------------------------------------------------

export async function phaseThroughput() {
  const total = quick ? 2000 : 10_000;
  const perDoc = 100;
  const hook = new HttpPeer();
  await hook.listen();
  let received = 0;
  hook.answer = () => {
    received++;
    return { status: 204 };
  };
  const path = join(dir, 'throughput.db');
  const store = Store.open(path);
  const config = SinkConfig.parse({ name: 'hook', type: 'webhook', url: hook.url }) as WebhookConfig;
  const sink = await webhookSink.create(config, { logger: silent, stdout: process.stdout });
  const dispatcher = new Dispatcher({
    outbox: store.outbox,
    logger: silent,
    targets: [
      {
        name: 'hook',
        type: 'webhook',
        sink,
        delivery: DeliveryConfig.parse({}),
        maxBatchSize: sink.maxBatchSize ?? 1,
        filter: FilterConfig.parse({}),
        prepare: false,
        undoes: false,
      },
    ],
  });
  dispatcher.start();
  const vm = identityFrom(null, { name: 'bench-vm' });
  let previous: EventsDocument | null = null;
  const events: Record<string, unknown>[] = [];
  const t0 = performance.now();
  for (let d = 0; d < total / perDoc; d++) {
    for (let i = 0; i < perDoc; i++) {
      events.push({
        EventId: `E-${d}-${i}`,
        EventType: 'Reboot',
        EventStatus: 'Scheduled',
        Resources: ['bench-vm'],
        NotBefore: 'Mon, 11 Apr 2022 22:26:58 GMT',
        DurationInSeconds: -1,
      });
    }
    const doc = toDomainDocument(WireDocument.parse({ DocumentIncarnation: d + 2, Events: events.slice(-perDoc) })).document;
    const observedAt = new Date().toISOString();
    const ces = diff(previous, doc)
      .filter((t) => t.kind === 'scheduled')
      .map((t) => toCloudEvent(t, { vm, observedAt }));
    store.journal.commit({
      document: doc,
      etag: null,
      observedAt,
      events: ces.map((e) => ({ id: e.id, eventId: e.subject, transition: 'scheduled', json: JSON.stringify(e), sinks: ['hook'] })),
    });
    dispatcher.notify();
    previous = { incarnation: doc.incarnation, events: [] };
  }
  const committedMs = performance.now() - t0;
  for (let k = 0; k < 12_000 && received < total; k++) await sleep(5);
  const elapsedMs = performance.now() - t0;
  await dispatcher.stop(1000);
  const bytes = statSync(path).size + (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);
  store.close();
  await hook.close();
  return {
    transitions: total,
    received,
    committedPerSecond: Math.round(total / (committedMs / 1000)),
    deliveredPerSecond: Math.round(received / (elapsedMs / 1000)),
    storeBytesPerEvent: Math.round(bytes / total),
  };
}

// ----- F. a 10-minute outage under the default delivery policy -----------------------------------

/** phaseOutage replays the dispatcher's own backoff (fullJitter, the default DeliveryConfig) over many simulated outages. */
export function phaseOutage(outageMs: number, trials: number) {
  const d = DeliveryConfig.parse({});
  const attempts: number[] = [];
  const waits: number[] = [];
  let deadLettered = 0;
  for (let t = 0; t < trials; t++) {
    let now = 0;
    let n = 0;
    for (;;) {
      n += 1;
      if (now >= outageMs) break;
      if (n >= d.maxAttempts || now > d.maxAgeMs) {
        deadLettered += 1;
        break;
      }
      now += fullJitter(n - 1, d.initialBackoffMs, d.maxBackoffMs) + 5;
    }
    attempts.push(n);
    waits.push(now - outageMs);
  }
  const a = dist(attempts);
  const w = dist(waits);
  return {
    trials,
    deadLettered,
    attemptsMedian: a.p50,
    attemptsMax: a.max,
    recoveryWaitMs: { p50: Math.round(w.p50), p90: Math.round(w.p90), max: Math.round(w.max) },
  };
}

// ----- G. managed identity: what an Entra ID token costs ----------------------------------------

/**
 * phaseIdentity compares each sink's credential paths against local peers: a webhook with a
 * static bearer and with an Entra ID token from the simulator's token endpoint (first request,
 * then throughput with the cached token), and Event Hubs over TLS with a connection string and
 * with a managed identity (create to first delivery, then single sends). It sets
 * AZURE_POD_IDENTITY_AUTHORITY_HOST for this process, so it runs last.
 */
export async function phaseIdentity() {
  const sim = new ImdsSimulator({ vmName: 'bench-vm' });
  process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = await sim.listen(0);
  const cert = readFileSync(join(import.meta.dirname, '..', 'test', 'fixtures', 'tls', 'cert.pem'), 'utf8');
  const key = readFileSync(join(import.meta.dirname, '..', 'test', 'fixtures', 'tls', 'key.pem'), 'utf8');
  const defaults = tls.getCACertificates('default');
  tls.setDefaultCACertificates([...defaults, cert]);
  const http = new HttpPeer();
  await http.listen();
  http.answer = () => ({ status: 204 });
  const ctx = { logger: silent, stdout: process.stdout };
  const total = quick ? 500 : 2000;
  const webhook: { name: string; firstMs: number; perSecond: number; tokenRequests: number }[] = [];
  for (const [name, auth] of [
    ['static bearer', { bearer: 'bench-token' }],
    ['Entra ID token (managed identity)', { kind: 'managedIdentity', scope: 'api://bench/.default' }],
  ] as const) {
    const before = sim.identities.requests.length;
    const sink = await webhookSink.create(
      SinkConfig.parse({ name: 'w', type: 'webhook', url: `${http.url}/hook`, auth }) as WebhookConfig,
      ctx,
    );
    const ac = new AbortController();
    const t0 = performance.now();
    await sink.send(bridgeEvents(1), { signal: ac.signal });
    const firstMs = performance.now() - t0;
    const batch = bridgeEvents(10);
    const t1 = performance.now();
    for (let i = 0; i < total / 10; i++) await sink.send(batch, { signal: ac.signal });
    const perSecond = Math.round(total / ((performance.now() - t1) / 1000));
    await sink.close();
    webhook.push({ name, firstMs: Math.round(firstMs * 10) / 10, perSecond, tokenRequests: sim.identities.requests.length - before });
  }
  const amqp = new AmqpPeer();
  await amqp.listen({ tls: { key, cert } });
  const eventHubs: { name: string; firstMs: number; sendP50: number; sendP99: number }[] = [];
  for (const [name, auth] of [
    ['connection string (SAS)', { connectionString: amqp.connectionString('maintenance') }],
    [
      'managed identity (JWT)',
      { fullyQualifiedNamespace: amqp.namespace, eventHubName: 'maintenance', credential: { kind: 'managedIdentity' } },
    ],
  ] as const) {
    amqp.auth = 'credential' in auth ? { kind: 'jwt', audience: 'https://eventhubs.azure.net/' } : { kind: 'sas' };
    const ac = new AbortController();
    const t0 = performance.now();
    const sink: Sink = await eventHubsSink.create(SinkConfig.parse({ name: 'eh', type: 'eventhubs', ...auth }) as EventHubsConfig, ctx);
    const [first] = await sink.send(bridgeEvents(1), { signal: ac.signal });
    const firstMs = performance.now() - t0;
    const samples: number[] = [];
    for (let i = 0; i < (quick ? 50 : 200); i++) {
      const t = performance.now();
      await sink.send(bridgeEvents(1), { signal: ac.signal });
      samples.push(performance.now() - t);
    }
    await sink.close();
    const d = dist(samples);
    if (first?.status !== 'delivered') throw new Error(`identity phase: ${name} did not deliver: ${JSON.stringify(first)}`);
    eventHubs.push({ name, firstMs: Math.round(firstMs), sendP50: Math.round(d.p50 * 10) / 10, sendP99: Math.round(d.p99 * 10) / 10 });
  }
  await Promise.all([amqp.close(), http.close(), sim.close()]);
  tls.setDefaultCACertificates(defaults);
  delete process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST;
  return { webhook, eventHubs, tokensIssued: sim.identities.requests.length };
}
