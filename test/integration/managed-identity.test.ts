/**
 * Every credential path of the Azure sinks, over the wire, and Entra ID tokens for the HTTP
 * sinks (webhook, teams), checked by an HTTP peer. The managed identity credential asks the IMDS
 * simulator's token endpoint (through AZURE_POD_IDENTITY_AUTHORITY_HOST) for a token; the real
 * @azure/event-hubs and @azure/service-bus clients connect over TLS, as they do to Azure, to the
 * AMQP peer, which checks in `$cbs` put-token that it got a JWT for the service's audience,
 * unexpired, from a principal with a role; or, for a connection string, a SharedAccessSignature
 * signed with its key. MSAL (under DefaultAzureCredential) picks its token endpoint once per
 * process, so one simulator serves this file.
 *
 * Tokens live 125 s here: under the credentials' 5-minute renewal margin, so every token request
 * reaches the simulator (nothing is served from a cache left by another test), and the SDKs renew
 * a token 2 minutes before it expires, so 5 s after it was issued.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SinkConfig } from '../../src/config/schema.ts';
import type { BridgeEvent } from '../../src/pipeline/cloudevent.ts';
import { eventHubsSink, type EventHubsConfig } from '../../sinks/eventhubs/index.ts';
import { createCredential } from '../../src/azure/credentials.ts';
import { serviceBusSink, type ServiceBusConfig } from '../../sinks/servicebus/index.ts';
import type { Outcome, Sink } from '../../src/sinks/contract.ts';
import { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { readJwt } from '../../src/simulator/identity.ts';
import { teamsSink, type TeamsConfig } from '../../sinks/teams/index.ts';
import { webhookSink, type WebhookConfig } from '../../sinks/webhook/index.ts';
import { HttpPeer, type Recorded } from '../../testkit/http-peer.ts';
import { EventGridPeer } from '../../testkit/eventgrid-peer.ts';
import { eventGridSink, type EventGridConfig } from '../../sinks/eventgrid/index.ts';
import { pino } from 'pino';
import { startRelay, type RunningRelay } from '../../src/relay/relay.ts';
import { secretKey, signatureHeaders } from '../../src/lib/standard-webhooks.ts';
import { API_SECRET, fleetApproval, fleetKeys, INBOX, relayConfig, REPLIES, sessionOf } from '../../testkit/fleet.ts';
import { startBridge, type Harness } from '../../testkit/harness.ts';
import { bridgeEvents, ROOT, silentLogger, waitFor } from '../helpers.ts';

const TLS = {
  key: readFileSync(join(ROOT, 'test/fixtures/tls/key.pem'), 'utf8'),
  cert: readFileSync(join(ROOT, 'test/fixtures/tls/cert.pem'), 'utf8'),
};
const EVENT_HUBS = 'https://eventhubs.azure.net/';
const SERVICE_BUS = 'https://servicebus.azure.net/';
const UA = {
  clientId: '6c1f1e2a-3b4c-4d5e-8f60-718293a4b5c6',
  objectId: '0a9b8c7d-6e5f-4a3b-9c2d-1e0f2a3b4c5d',
  resourceId:
    '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/ops/providers/Microsoft.ManagedIdentity/userAssignedIdentities/se-bridge',
};
const NO_ROLE = {
  clientId: '1b2c3d4e-5f60-4718-9a2b-3c4d5e6f7a8b',
  objectId: '2c3d4e5f-6071-4829-ab3c-4d5e6f7a8b9c',
  resourceId:
    '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/ops/providers/Microsoft.ManagedIdentity/userAssignedIdentities/no-role',
};

let sim: ImdsSimulator;
let peer: AmqpPeer;
const sinks: Sink[] = [];
let harness: Harness | null = null;
const defaultCAs = tls.getCACertificates('default');

const saved = { HTTP_PROXY: process.env.HTTP_PROXY, NO_PROXY: process.env.NO_PROXY, no_proxy: process.env.no_proxy };
beforeAll(async () => {
  sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
  process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = await sim.listen();
  // a proxy that refuses every connection: the token endpoint must be reached directly (IMDS
  // refuses proxied requests), so the credential adds its host to NO_PROXY
  process.env.HTTP_PROXY = 'http://127.0.0.1:9';
  delete process.env.NO_PROXY;
  delete process.env.no_proxy;
  // the first credential adds the token endpoint's host (here 127.0.0.1, which the peers share)
  // to NO_PROXY, before any sink of this file makes its HTTP client
  await createCredential({ kind: 'managedIdentity' });
  expect(process.env.NO_PROXY).toBe('169.254.169.254,127.0.0.1');
  // the peer's certificate (CN and IP SAN 127.0.0.1) is trusted as a CA, for TLS as in Azure
  tls.setDefaultCACertificates([...defaultCAs, TLS.cert]);
});
afterAll(async () => {
  delete process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST;
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  tls.setDefaultCACertificates(defaultCAs);
  await sim.close();
});
beforeEach(async () => {
  sim.identities.configure({ systemAssigned: true, userAssigned: [UA, NO_ROLE], tokenLifetimeSec: 125 });
  sim.identities.requests.length = 0;
  // events and faults of the test before go; the identities stay
  sim.reset();
  peer = new AmqpPeer();
  await peer.listen({ tls: TLS });
});
afterEach(async () => {
  await harness?.stop();
  harness = null;
  for (const s of sinks.splice(0)) await s.close().catch(() => undefined);
  await peer.close();
});

type Credential = Record<string, unknown>;
async function eventHubs(credential: Credential | null, extra: Record<string, unknown> = {}): Promise<Sink> {
  const auth =
    credential === null
      ? { connectionString: peer.connectionString('maintenance') }
      : { fullyQualifiedNamespace: peer.namespace, eventHubName: 'maintenance', credential };
  const config = SinkConfig.parse({ name: 'eh', type: 'eventhubs', ...auth, delivery: { timeoutMs: 5000 }, ...extra }) as EventHubsConfig;
  const sink = await eventHubsSink.create(config, { logger: silentLogger, stdout: process.stdout });
  sinks.push(sink);
  return sink;
}
async function serviceBus(credential: Credential | null): Promise<Sink> {
  const auth =
    credential === null ? { connectionString: peer.connectionString() } : { fullyQualifiedNamespace: peer.namespace, credential };
  const config = SinkConfig.parse({
    name: 'sb',
    type: 'servicebus',
    ...auth,
    entity: 'maintenance-queue',
    delivery: { timeoutMs: 5000 },
  }) as ServiceBusConfig;
  const sink = await serviceBusSink.create(config, { logger: silentLogger, stdout: process.stdout });
  sinks.push(sink);
  return sink;
}
const send = (sink: Sink, evs: BridgeEvent[]): Promise<Outcome[]> => sink.send(evs, { signal: new AbortController().signal });
const jwtsFor = (audience: string) => peer.tokens.filter((t) => t.type === 'jwt' && t.claims?.aud === audience);
/** expiredForPeer: the token's expiry has passed on the peer's clock (which runs `clockAheadMs` ahead). */
const expiredForPeer = (t: { claims?: Record<string, unknown> | null }) => Number(t.claims?.exp) * 1000 <= Date.now() + peer.clockAheadMs;

const CASES = [
  { name: 'Event Hubs', audience: EVENT_HUBS, make: eventHubs, entity: 'maintenance' },
  { name: 'Service Bus', audience: SERVICE_BUS, make: serviceBus, entity: 'maintenance-queue' },
] as const;
const IDENTITIES = [
  { name: 'system-assigned', credential: { kind: 'managedIdentity' }, asked: 'system', principal: () => sim.identities.system.objectId },
  {
    name: 'user-assigned by clientId',
    credential: { kind: 'managedIdentity', clientId: UA.clientId },
    asked: `client_id=${UA.clientId}`,
    principal: () => UA.objectId,
  },
  {
    name: 'user-assigned by objectId',
    credential: { kind: 'managedIdentity', objectId: UA.objectId },
    asked: `object_id=${UA.objectId}`,
    principal: () => UA.objectId,
  },
  {
    name: 'user-assigned by resourceId',
    credential: { kind: 'managedIdentity', resourceId: UA.resourceId },
    asked: `msi_res_id=${UA.resourceId}`,
    principal: () => UA.objectId,
  },
] as const;

describe.each(CASES)('$name with a managed identity, over TLS', ({ audience, make, entity }) => {
  it.each(IDENTITIES)(
    '$name: the peer got a JWT for the service, from that principal, and the event',
    async ({ credential, asked, principal }) => {
      expect(process.env.HTTP_PROXY).toBe('http://127.0.0.1:9');
      peer.auth = { kind: 'jwt', audience, principals: [principal()] };
      const sink = await make(credential);
      expect(await send(sink, bridgeEvents(2))).toEqual([{ status: 'delivered' }, { status: 'delivered' }]);
      const [token] = jwtsFor(audience);
      expect(token).toMatchObject({
        status: 202,
        audience: `sb://${peer.namespace}/${entity}`,
        claims: { oid: principal(), idtyp: 'app' },
      });
      expect(peer.tokens.every((t) => t.type === 'jwt' && t.status === 202)).toBe(true);
      expect(sim.identities.requests).toContainEqual(expect.objectContaining({ resource: audience, asked, status: 200 }));
      expect(peer.messages.filter((m) => m.address === entity)).toHaveLength(2);
    },
  );

  it('a principal without a role on the entity: refused in put-token, the send retried with the service reason', async () => {
    peer.auth = { kind: 'jwt', audience, principals: [UA.objectId] };
    const sink = await make({ kind: 'managedIdentity', clientId: NO_ROLE.clientId });
    const [o] = await send(sink, bridgeEvents(1));
    expect(o).toMatchObject({ status: 'retry', reason: expect.stringMatching(/^Unauthorized\w*: .*'Send' claim\(s\) are required/) });
    expect(peer.tokens[0]).toMatchObject({ status: 401, claims: { oid: NO_ROLE.objectId } });
    expect(peer.messages).toEqual([]);
  });

  it('an identity not assigned to the VM: the token endpoint answers 400, nothing reaches the service, the send is retried', async () => {
    peer.auth = { kind: 'jwt', audience };
    const stranger = '9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a';
    const sink = await make({ kind: 'managedIdentity', clientId: stranger });
    const [o] = await send(sink, bridgeEvents(1));
    expect(o).toMatchObject({ status: 'retry', reason: expect.stringContaining('Identity not found') });
    expect(sim.identities.requests).toContainEqual(expect.objectContaining({ asked: `client_id=${stranger}`, status: 400 }));
    expect(peer.tokens).toEqual([]);
  });

  it('a connection string: the SharedAccessSignature is checked against the key; another key is refused', async () => {
    const good = await make(null);
    expect(await send(good, bridgeEvents(1))).toEqual([{ status: 'delivered' }]);
    expect(peer.tokens[0]).toMatchObject({ type: 'servicebus.windows.net:sastoken', status: 202 });
    // the same namespace and entity, signed with another key
    const forged = peer
      .connectionString(entity === 'maintenance' ? 'maintenance' : undefined)
      .replace(/SharedAccessKey=[^;]+/, 'SharedAccessKey=YW5vdGhlci1rZXk=');
    const config = SinkConfig.parse(
      entity === 'maintenance'
        ? { name: 'eh2', type: 'eventhubs', connectionString: forged, delivery: { timeoutMs: 5000 } }
        : { name: 'sb2', type: 'servicebus', connectionString: forged, entity, delivery: { timeoutMs: 5000 } },
    );
    const bad =
      entity === 'maintenance'
        ? await eventHubsSink.create(config as EventHubsConfig, { logger: silentLogger, stdout: process.stdout })
        : await serviceBusSink.create(config as ServiceBusConfig, { logger: silentLogger, stdout: process.stdout });
    sinks.push(bad);
    const [o] = await send(bad, bridgeEvents(1));
    expect(o).toMatchObject({ status: 'retry', reason: expect.stringMatching(/^Unauthorized\w*: .*InvalidSignature/) });
    expect(peer.tokens.at(-1)).toMatchObject({ status: 401 });
    expect(peer.messages).toHaveLength(1);
  });
});

describe('a refused token through the bridge', () => {
  it('is retried, then dead-lettered after maxAttempts with the service reason, and delivered after a replay once the role is there', async () => {
    peer.auth = { kind: 'jwt', audience: EVENT_HUBS, principals: [UA.objectId] };
    harness = await startBridge({
      sim,
      sinks: [
        {
          name: 'hub',
          type: 'eventhubs',
          fullyQualifiedNamespace: peer.namespace,
          eventHubName: 'maintenance',
          credential: { kind: 'managedIdentity' },
          delivery: { initialBackoffMs: 20, maxBackoffMs: 50, maxAttempts: 3, timeoutMs: 5000 },
        },
      ],
    });
    const e = sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => harness!.bridge.store.outbox.deadLetters().length === 1, 'the dead letter', 20_000);
    expect(harness.bridge.store.outbox.deadLetters()[0]).toMatchObject({
      sink: 'hub',
      eventId: e.eventId,
      attempts: 3,
      lastError: expect.stringMatching(/^gave up after 3 attempts: Unauthorized\w*: .*'Send' claim\(s\) are required/),
    });
    expect(peer.messages).toEqual([]);
    // the role assignment arrives: a replay delivers it
    peer.auth = { kind: 'jwt', audience: EVENT_HUBS, principals: [UA.objectId, sim.identities.system.objectId] };
    expect(harness.bridge.store.outbox.replayDeadLetters('hub')).toBe(1);
    await waitFor(() => peer.messages.length === 1, 'the replayed event', 15_000);
  }, 40_000);
});

describe('the token endpoint failing', () => {
  it('a 500 from the token endpoint is retried by the credential, and the event delivered', async () => {
    peer.auth = { kind: 'jwt', audience: EVENT_HUBS };
    sim.injectFault({ kind: 'status', status: 500, target: 'token', count: 1 });
    const before = sim.requests.length;
    const sink = await eventHubs({ kind: 'managedIdentity' });
    expect(await send(sink, bridgeEvents(1))).toEqual([{ status: 'delivered' }]);
    expect(
      sim.requests
        .slice(before)
        .filter((r) => r.path.startsWith('/metadata/identity/'))
        .map((r) => r.status),
    ).toEqual([500, 200]);
  });

  it('a token endpoint slower than the delivery timeout: the attempt is retried, not lost', async () => {
    peer.auth = { kind: 'jwt', audience: EVENT_HUBS };
    sim.injectFault({ kind: 'slow', delayMs: 4000, target: 'token', count: 1 });
    const sink = await eventHubs({ kind: 'managedIdentity' }, { delivery: { timeoutMs: 1000 } });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 1000);
    const [o] = await sink.send(bridgeEvents(1), { signal: ac.signal });
    expect(o!.status).toBe('retry');
    await waitFor(() => sim.identities.requests.length >= 1, 'the slow token answer', 6000);
    expect(await send(sink, bridgeEvents(1))).toEqual([{ status: 'delivered' }]);
  });
});

describe('token expiry and renewal', () => {
  it('renews a short-lived token before the service would refuse it: every send over 13 s delivered at the first attempt, on one connection', async () => {
    // the peer's clock runs 118 s ahead: a 125 s token is expired for it 7 s after it was
    // issued, and the SDKs renew 2 minutes before expiry, 5 s after. Without renewal, sends
    // after 7 s would be refused (the next test shows that refusal).
    peer.clockAheadMs = 118_000;
    peer.auth = { kind: 'jwt', audience: EVENT_HUBS };
    const eh = await eventHubs({ kind: 'managedIdentity' });
    const outcomes: Outcome[] = [];
    const started = Date.now();
    // 13 s of sends and more than 20 of them, however slow the machine (bounded: 60 sends, 25 s)
    for (let i = 0; i < 60 && (Date.now() - started < 13_000 || outcomes.length <= 20) && Date.now() - started < 25_000; i++) {
      outcomes.push(...(await send(eh, bridgeEvents(1))));
      await new Promise((r) => setTimeout(r, 300));
    }
    expect(outcomes.length).toBeGreaterThan(20);
    expect(outcomes.every((o) => o.status === 'delivered')).toBe(true);
    expect(peer.expiredRefusals).toBe(0);
    expect(peer.connections).toBe(1);
    const tokens = jwtsFor(EVENT_HUBS).filter((t) => t.audience.endsWith('/maintenance'));
    expect(tokens.length).toBeGreaterThanOrEqual(3);
    expect(new Set(tokens.map((t) => t.claims!.jti)).size).toBe(tokens.length);
    expect(peer.messages).toHaveLength(outcomes.length);
  }, 30_000);

  it('Service Bus renews too: a send after the first token expired for the peer is delivered at once', async () => {
    peer.clockAheadMs = 118_000;
    peer.auth = { kind: 'jwt', audience: SERVICE_BUS };
    const sb = await serviceBus({ kind: 'managedIdentity' });
    expect(await send(sb, bridgeEvents(1))).toEqual([{ status: 'delivered' }]);
    await waitFor(() => jwtsFor(SERVICE_BUS).length >= 2, 'the renewed token', 10_000);
    await waitFor(() => expiredForPeer(jwtsFor(SERVICE_BUS)[0]!), 'the first token expired for the peer', 15_000);
    expect(await send(sb, bridgeEvents(1))).toEqual([{ status: 'delivered' }]);
    expect(peer.expiredRefusals).toBe(0);
    expect(peer.connections).toBe(1);
  }, 30_000);

  it('a token the service holds expired detaches the link: the send is retried, and through the bridge nothing is lost', async () => {
    // 124 s ahead: every token is expired for the peer one second after it was issued, before
    // the SDK renews it; each new link negotiates a fresh one
    peer.clockAheadMs = 124_000;
    peer.auth = { kind: 'jwt', audience: EVENT_HUBS };
    harness = await startBridge({
      sim,
      sinks: [
        {
          name: 'hub',
          type: 'eventhubs',
          fullyQualifiedNamespace: peer.namespace,
          eventHubName: 'maintenance',
          credential: { kind: 'managedIdentity' },
          delivery: { initialBackoffMs: 50, maxBackoffMs: 200, timeoutMs: 5000 },
        },
      ],
    });
    const first = sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => peer.messages.length === 1, 'the first event');
    await waitFor(() => jwtsFor(EVENT_HUBS).every(expiredForPeer), 'every token issued so far expired for the peer', 10_000);
    const second = sim.addEvent({ noticeMs: 600_000 });
    await waitFor(
      () => harness!.bridge.store.outbox.depth().size === 0 && peer.messages.length === 2,
      'the second event, after a refusal',
      20_000,
    );
    expect(peer.expiredRefusals).toBeGreaterThanOrEqual(1);
    const subjects = peer.messages.map((m) => (m.message.application_properties as Record<string, unknown>)['cloudEvents_subject']);
    expect(subjects).toEqual([first.eventId, second.eventId]);
    expect(harness.bridge.store.outbox.deadLetters()).toEqual([]);
    // the SDK is left waiting on the detached link until the attempt's timeout, then retries
    expect(harness.lines.some((l) => l.code === 'DELIVERY_RETRY' && l.eventId === second.eventId)).toBe(true);
  }, 30_000);
});

describe('Entra ID tokens for the webhook and teams sinks', () => {
  const APP = 'api://3f1e2d3c-4b5a-4697-8877-66554433aa11';
  let http: HttpPeer;
  /** Tokens the receiver holds revoked: it answers 401 to them. */
  const revoked = new Set<string>();
  const bearerOf = (r: Recorded) => String(r.headers.authorization ?? '').replace(/^Bearer /, '');

  beforeEach(async () => {
    revoked.clear();
    http = new HttpPeer();
    await http.listen();
    // the receiver's check, as Entra-protected apps do it: a JWT for this app, unexpired, not revoked
    http.answer = (r) => {
      const token = bearerOf(r);
      const claims = readJwt(token);
      if (claims === null) return { status: 401, body: '{"error":"invalid_token","error_description":"no bearer token"}' };
      if (claims.aud !== APP)
        return { status: 401, body: `{"error":"invalid_token","error_description":"audience ${String(claims.aud)} is not accepted"}` };
      if (Number(claims.exp) * 1000 <= Date.now()) return { status: 401, body: '{"error":"invalid_token","error_description":"expired"}' };
      if (revoked.has(token)) return { status: 401, body: '{"error":"invalid_token","error_description":"revoked"}' };
      return { status: 202 };
    };
  });
  afterEach(async () => {
    await http.close();
  });

  async function webhook(auth: Record<string, unknown>): Promise<Sink> {
    const config = SinkConfig.parse({
      name: 'hook',
      type: 'webhook',
      url: `${http.url}/hook`,
      auth,
      delivery: { timeoutMs: 5000 },
    }) as WebhookConfig;
    const sink = await webhookSink.create(config, { logger: silentLogger, stdout: process.stdout });
    sinks.push(sink);
    return sink;
  }
  const tokenRequests = () => sim.identities.requests.filter((r) => r.resource === APP);

  it('webhook: every request carries a token for the app, from the VM identity, cached across sends', async () => {
    const sink = await webhook({ kind: 'managedIdentity', scope: `${APP}/.default` });
    expect(await send(sink, bridgeEvents(3))).toEqual(Array.from({ length: 3 }, () => ({ status: 'delivered' })));
    expect(await send(sink, bridgeEvents(2))).toEqual([{ status: 'delivered' }, { status: 'delivered' }]);
    expect(http.requests).toHaveLength(5);
    expect(new Set(http.requests.map(bearerOf)).size).toBe(1);
    expect(readJwt(bearerOf(http.requests[0]!))).toMatchObject({ aud: APP, oid: sim.identities.system.objectId });
    expect(tokenRequests()).toHaveLength(1);
  });

  it("webhook with a user-assigned identity: the token is that identity's", async () => {
    const sink = await webhook({ kind: 'managedIdentity', scope: `${APP}/.default`, clientId: UA.clientId });
    expect(await send(sink, bridgeEvents(1))).toEqual([{ status: 'delivered' }]);
    expect(readJwt(bearerOf(http.requests[0]!))).toMatchObject({ aud: APP, appid: UA.clientId, oid: UA.objectId });
  });

  it('renews the token before it expires: a 4 s token is replaced after 2 s, and the receiver never sees an expired one', async () => {
    sim.identities.configure({ tokenLifetimeSec: 4 });
    const sink = await webhook({ kind: 'managedIdentity', scope: `${APP}/.default` });
    const outcomes: Outcome[] = [];
    for (let i = 0; i < 10; i++) {
      outcomes.push(...(await send(sink, bridgeEvents(1))));
      await new Promise((r) => setTimeout(r, 600));
    }
    expect(outcomes.every((o) => o.status === 'delivered')).toBe(true);
    // 6 s of sends with a token renewed every 2 s: three or four tokens, never one per request
    const tokens = new Set(http.requests.map(bearerOf));
    expect(tokens.size).toBeGreaterThanOrEqual(3);
    expect(tokens.size).toBeLessThan(10);
    expect(http.requests).toHaveLength(10);
  });

  it('a 401 renews the token once and sends again; a receiver that refuses every token gets exactly one renewal, and the event is retried', async () => {
    const sink = await webhook({ kind: 'managedIdentity', scope: `${APP}/.default` });
    expect(await send(sink, bridgeEvents(1))).toEqual([{ status: 'delivered' }]);
    revoked.add(bearerOf(http.requests[0]!));
    // the cached token is now refused: one renewal, then delivered with the new token
    expect(await send(sink, bridgeEvents(1))).toEqual([{ status: 'delivered' }]);
    expect(http.requests.map((r) => r.headers.authorization !== undefined)).toEqual([true, true, true]);
    expect(bearerOf(http.requests[2]!)).not.toBe(bearerOf(http.requests[1]!));
    // now every token is refused
    http.answer = () => ({ status: 401, body: '{"error":"invalid_token"}' });
    const before = http.requests.length;
    const [o] = await send(sink, bridgeEvents(1));
    expect(o).toMatchObject({
      status: 'retry',
      reason: 'HTTP 401: the Entra ID token was refused, also after a renewal: {"error":"invalid_token"}',
    });
    expect(http.requests.length - before).toBe(2);
    // the token never reaches an outcome's reason
    for (const r of http.requests) expect(JSON.stringify(o)).not.toContain(bearerOf(r));
  });

  it('kind: default (DefaultAzureCredential) finds the managed identity too', async () => {
    const sink = await webhook({ kind: 'default', scope: `${APP}/.default` });
    expect(await send(sink, bridgeEvents(1))).toEqual([{ status: 'delivered' }]);
    expect(readJwt(bearerOf(http.requests[0]!))).toMatchObject({ aud: APP, oid: sim.identities.system.objectId });
    const hub = await eventHubs({ kind: 'default' });
    peer.auth = { kind: 'jwt', audience: EVENT_HUBS };
    expect(await send(hub, bridgeEvents(1))).toEqual([{ status: 'delivered' }]);
    expect(jwtsFor(EVENT_HUBS)[0]).toMatchObject({ status: 202, claims: { oid: sim.identities.system.objectId } });
  });

  it('a token that cannot be had (an identity not on the VM) is a retry, and nothing is sent', async () => {
    const sink = await webhook({ kind: 'managedIdentity', scope: `${APP}/.default`, clientId: '9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a' });
    const [o] = await send(sink, bridgeEvents(1));
    expect(o).toMatchObject({ status: 'retry', reason: expect.stringContaining('Identity not found') });
    expect(http.requests).toEqual([]);
  });

  it('teams: the workflow gets the card with a token for its scope', async () => {
    const config = SinkConfig.parse({
      name: 'teams',
      type: 'teams',
      webhookUrl: `${http.url}/workflow`,
      auth: { kind: 'managedIdentity', scope: `${APP}/.default` },
    }) as TeamsConfig;
    const sink = await teamsSink.create(config, { logger: silentLogger, stdout: process.stdout });
    sinks.push(sink);
    expect(await send(sink, bridgeEvents(1))).toEqual([{ status: 'delivered' }]);
    expect(readJwt(bearerOf(http.requests[0]!))).toMatchObject({ aud: APP });
    expect(JSON.parse(http.requests[0]!.body)).toMatchObject({
      type: 'message',
      attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive' }],
    });
  });

  it('refuses a scope that is not a .default scope, by path', () => {
    const r = SinkConfig.safeParse({
      name: 'hook',
      type: 'webhook',
      url: 'https://x.example',
      auth: { kind: 'managedIdentity', scope: 'api://app' },
    });
    expect(r.success).toBe(false);
    expect(r.error!.issues.some((i) => i.path.join('.') === 'auth.scope' || /scope/.test(i.message))).toBe(true);
  });
});

describe('eventgrid with a managed identity, over HTTPS', () => {
  let grid: EventGridPeer;
  beforeEach(async () => {
    grid = new EventGridPeer(TLS);
    await grid.listen();
  });
  afterEach(async () => {
    await grid.close();
  });

  it.each([
    { topic: 'a basic topic', namespaceTopic: undefined, identity: IDENTITIES[0] },
    { topic: 'a namespace topic', namespaceTopic: 'maintenance', identity: IDENTITIES[1] },
    { topic: 'a namespace topic', namespaceTopic: 'maintenance', identity: IDENTITIES[3] },
  ])('$topic, $identity.name: a bearer token for https://eventgrid.azure.net from that principal', async ({ namespaceTopic, identity }) => {
    const config = SinkConfig.parse({
      name: 'grid',
      type: 'eventgrid',
      endpoint: grid.url,
      ...(namespaceTopic ? { namespaceTopic } : {}),
      credential: identity.credential,
    }) as EventGridConfig;
    expect(grid.url.startsWith('https://')).toBe(true);
    const sink = await eventGridSink.create(config, { logger: silentLogger, stdout: process.stdout });
    sinks.push(sink);
    expect(await send(sink, bridgeEvents(2))).toEqual([{ status: 'delivered' }, { status: 'delivered' }]);
    expect(grid.publishes).toEqual([{ topic: namespaceTopic ?? 'basic', auth: 'bearer', status: 200, events: 2 }]);
    expect(sim.identities.requests).toContainEqual(
      expect.objectContaining({ resource: 'https://eventgrid.azure.net', asked: identity.asked, status: 200 }),
    );
  });
});

describe('fleet approvals with managed identities, over TLS', () => {
  let relay: RunningRelay | null = null;
  afterEach(async () => {
    await relay?.close();
    relay = null;
  });

  /** The VM's bridge (system-assigned identity) and the relay (a user-assigned one), over namespace + credential. */
  async function fleet() {
    peer.queue(INBOX, { sessions: true, duplicateDetectionMs: 600_000, maxDeliveryCount: 10 });
    peer.queue(REPLIES, { sessions: true });
    const keys = fleetKeys();
    const approval = fleetApproval(peer, keys, sessionOf(sim)) as { relayUrl: string; inbox: Record<string, unknown> };
    delete approval.inbox.connectionString;
    harness = await startBridge({
      sim,
      config: {
        approval: {
          ...approval,
          inbox: { ...approval.inbox, fullyQualifiedNamespace: peer.namespace, credential: { kind: 'managedIdentity' } },
        },
      },
    });
    const config = relayConfig(peer, keys, {
      serviceBus: {
        queue: INBOX,
        replies: REPLIES,
        fullyQualifiedNamespace: peer.namespace,
        credential: { kind: 'managedIdentity', clientId: UA.clientId },
      },
    });
    relay = await startRelay(config, pino({ level: 'silent' }), { host: '127.0.0.1', port: 0 });
    return harness;
  }
  const vm = () => sim.identities.system.objectId;

  it('the relay (Send on the inbox, Listen on the replies) and the VM (the reverse) each prove their own identity, and the approval goes through', async () => {
    peer.auth = {
      kind: 'jwt',
      audience: SERVICE_BUS,
      rights: { [INBOX]: { send: [UA.objectId], listen: [vm()] }, [REPLIES]: { send: [vm()], listen: [UA.objectId] } },
    };
    const h = await fleet();
    await waitFor(() => h.bridge.inbox?.connected && relay!.bus?.listening, 'the inbox and the relay sessions', 20_000);
    const e = h.sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => h.kinds().includes(`scheduled:${e.eventId}`), 'the scheduled event');
    const body = JSON.stringify({ vm: h.bridge.identity.resourceId, eventId: e.eventId, approver: 'alice' });
    const res = await fetch(`${relay!.url}/v1/approvals`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signatureHeaders([secretKey(API_SECRET)!], 'msg_mi', body) },
      body,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ eventId: e.eventId, status: 'approved', approvedBy: 'alice' });
    expect(sim.startRequests.map((r) => r.eventIds)).toEqual([[e.eventId]]);
    expect(peer.refusedLinks).toEqual([]);
    const principals = new Set(peer.tokens.filter((t) => t.status === 202).map((t) => t.claims?.oid));
    expect(principals).toEqual(new Set([vm(), UA.objectId]));
    expect(peer.tokens.every((t) => t.type === 'jwt')).toBe(true);
  }, 30_000);

  it('a VM without Listen on the inbox is refused at attach: the inbox stays disconnected and says why', async () => {
    peer.auth = {
      kind: 'jwt',
      audience: SERVICE_BUS,
      rights: { [INBOX]: { send: [UA.objectId], listen: [UA.objectId] }, [REPLIES]: { send: [vm()], listen: [UA.objectId] } },
    };
    const h = await fleet();
    await waitFor(
      () => peer.refusedLinks.some((r) => r.entity === INBOX && r.right === 'Listen' && r.principal === vm()),
      'the refused inbox link',
      20_000,
    );
    await waitFor(
      () => /'Listen' claim\(s\) are required/.test(String(h.bridge.inbox?.lastError ?? '')),
      'the inbox to name the missing right',
      20_000,
    );
    expect(h.bridge.inbox?.connected).toBe(false);
  }, 30_000);
});
