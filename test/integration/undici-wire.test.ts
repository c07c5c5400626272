/**
 * Every outbound HTTP request of the bridge and the relay is written by undici, as seen on the
 * wire: each kind of request, configured as a user configures it, goes through a recording relay
 * (testkit/wire-tap.ts) in front of the peer its own tests use, and the relay sees the headers
 * undici writes first (`host`, then `connection`, in lower case) and none that Node's http client
 * or its fetch would write. The peers: the IMDS simulator, HTTP peers for the webhook, Teams and
 * Slack, the Event Grid stand-in, Azurite for Blob Storage, and stand-ins written from the API
 * references for Resource Manager, Entra ID's key set and the Kubernetes API server (none of
 * those services runs here). The control channel is a Unix socket: a tap listens on one and
 * forwards to the daemon's.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as nodeRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EntraTokens, EVENT_GRID_APP_ID } from '../../src/azure/bearer.ts';
import { ImdsTokens } from '../../src/azure/imds-token.ts';
import { parseEventResource } from '../../src/azure/resource-id.ts';
import { controlCall } from '../../src/control/client.ts';
import { controlPath } from '../../src/control/server.ts';
import { BlobRest, endpointOf } from '../../src/fleet/budget/stores/blob-rest.ts';
import { KubeConnection } from '../../src/kube/client.ts';
import { HttpClient } from '../../src/lib/http-client.ts';
import { ArmClient } from '../../src/relay/arm.ts';
import { Azurite, DEV_ACCOUNT } from '../../src/simulator/azurite.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { ArmStandIn, scheduledEventOf, vmId } from '../../testkit/azure-feed.ts';
import { EntraTenant, TENANT } from '../../testkit/entra-tenant.ts';
import { EventGridPeer, PEER_KEY } from '../../testkit/eventgrid-peer.ts';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { KUBE_KEY, KUBE_TOKEN } from '../../testkit/kube-objects.ts';
import { KUBE_CERT } from '../../testkit/kube-apiserver.ts';
import { useStandIn, writeKubeconfig } from '../../testkit/kubeconfig.ts';
import { viaUndici, WireTap, type Tapped } from '../../testkit/wire-tap.ts';
import { envSaved, ROOT, waitFor } from '../helpers.ts';

const TLS = {
  key: readFileSync(join(ROOT, 'test/fixtures/tls/key.pem'), 'utf8'),
  cert: readFileSync(join(ROOT, 'test/fixtures/tls/cert.pem'), 'utf8'),
};
const taps: WireTap[] = [];
/** What a test started, stopped after the file, last first, whether the test passed or not. */
const later: (() => unknown)[] = [];
const tap = async (target: string, o: ConstructorParameters<typeof WireTap>[1] = {}) => {
  const t = await new WireTap(target, o).start();
  taps.push(t);
  return t;
};

/** writers: for each kind of request, 'undici' when every one seen was undici's, else what was seen. */
function writers(kinds: Record<string, readonly Tapped[]>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(kinds).map(([kind, seen]) => {
      const other = seen.find((r) => !viaUndici(r.rawHeaders));
      const names = (r: Tapped) => r.rawHeaders.filter((_, i) => i % 2 === 0).join(',');
      return [kind, seen.length === 0 ? 'not seen' : other === undefined ? 'undici' : `not undici: ${other.method} ${names(other)}`];
    }),
  );
}
const json = (body: unknown) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const all = (kinds: Record<string, unknown>, what: string) => Object.fromEntries(Object.keys(kinds).map((k) => [k, what]));

const { api: kube, dir: kubeDir } = useStandIn('se-bridge-test-wire-');
const env = envSaved('AZURE_POD_IDENTITY_AUTHORITY_HOST');
let sim: ImdsSimulator;
let peer: HttpPeer;

beforeAll(async () => {
  sim = new ImdsSimulator({ vmName: 'vm0', peers: ['vm1'], tickMs: 10 });
  await sim.listen(0);
  peer = new HttpPeer();
  await peer.listen();
  peer.answer = (r) => {
    if (r.url === '/slack') return { status: 200, body: 'ok' };
    if (r.url.startsWith('/slack-api/')) return json({ ok: true, channel: 'C1', ts: '1.0' });
    if (r.url.startsWith('/prometheus/')) return json({ status: 'success', data: { resultType: 'vector', result: [] } });
    return { status: 200 };
  };
}, 30_000);

afterAll(async () => {
  await stopAll();
  for (const stop of later.splice(0).reverse()) await stop();
  for (const t of taps.splice(0)) await t.close();
  await peer?.close();
  await sim?.close();
  env.restore();
});

describe('the fingerprint', () => {
  it("tells undici's requests from Node's http client's and from its fetch's", async () => {
    const t = await tap(peer.url);
    await new Promise<void>((resolve, reject) => {
      const req = nodeRequest(`${t.url}/node-http`, { method: 'GET' }, (res) => res.resume().on('end', resolve));
      req.on('error', reject);
      req.end();
    });
    await (await fetch(`${t.url}/node-fetch`, { signal: AbortSignal.timeout(10_000) })).arrayBuffer();
    const client = new HttpClient({ proxy: 'none' });
    await client.request(`${t.url}/undici`, {
      method: 'GET',
      maxBodyBytes: 1024,
      onOverflow: 'drain',
      signal: AbortSignal.timeout(10_000),
    });
    client.close();
    expect(t.requests.map((r) => [r.path, viaUndici(r.rawHeaders)])).toEqual([
      ['/node-http', false],
      ['/node-fetch', false],
      ['/undici', true],
    ]);
    // what each wrote first: Node's http client capitalizes; its fetch adds the Fetch standard's header
    expect(t.requests[0]!.rawHeaders).toContain('Host');
    expect(t.requests[1]!.rawHeaders.slice(0, 3)).toEqual(['host', expect.any(String), 'connection']);
    expect(t.requests[1]!.rawHeaders).toContain('sec-fetch-mode');
  });
});

describe('the daemon', () => {
  let h: Harness;
  let imds: WireTap;
  let hooks: WireTap;
  let grid: EventGridPeer;
  let gridTap: WireTap;
  let identity: WireTap;

  beforeAll(async () => {
    imds = await tap(sim.url);
    hooks = await tap(peer.url);
    grid = new EventGridPeer();
    await grid.listen();
    gridTap = await tap(grid.url);
    // the managed identity's token endpoint, as the daemon takes it from the environment
    identity = await tap(sim.url);
    process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = identity.url;
    h = await startBridge({
      sim,
      config: {
        imds: { endpoint: imds.url },
        approval: { rules: [{ match: { eventType: 'Freeze' }, action: 'approve' }] },
        health: {
          http: { url: `${hooks.url}/healthz` },
          prometheus: { url: `${hooks.url}/prometheus`, query: 'up == 0' },
          intervalSeconds: 1,
        },
      },
      sinks: [
        { name: 'hook', type: 'webhook', url: `${hooks.url}/hook` },
        { name: 'entra', type: 'webhook', url: `${hooks.url}/entra`, auth: { kind: 'managedIdentity', scope: 'api://receiver/.default' } },
        { name: 'teams', type: 'teams', webhookUrl: `${hooks.url}/teams` },
        { name: 'slack', type: 'slack', webhookUrl: `${hooks.url}/slack` },
        { name: 'slackbot', type: 'slack', botToken: 'xoxb-wire-test', channel: 'C1', apiUrl: `${hooks.url}/slack-api/` },
        { name: 'grid', type: 'eventgrid', endpoint: gridTap.url, namespaceTopic: 'maintenance', accessKey: PEER_KEY },
      ],
    });
  }, 30_000);
  afterAll(async () => {
    await h?.stop();
    await grid?.close();
  });

  it('IMDS (Scheduled Events, the compute document, StartRequests), every HTTP sink and its token, the health checks: undici', async () => {
    const e = sim.addEvent({ EventType: 'Freeze', noticeMs: 600_000, startedMs: 0 });
    const kinds = () => ({
      'IMDS Scheduled Events': imds.seen('/metadata/scheduledevents').filter((r) => r.method === 'GET'),
      'IMDS compute document': imds.seen('/metadata/instance'),
      'IMDS StartRequests': imds.seen('/metadata/scheduledevents').filter((r) => r.method === 'POST'),
      webhook: hooks.seen('/hook'),
      "webhook's Entra ID token": identity.seen('/metadata/identity'),
      'webhook with an Entra ID token': hooks.seen('/entra'),
      Teams: hooks.seen('/teams'),
      'Slack incoming webhook': hooks.seen('/slack').filter((r) => r.path === '/slack'),
      'Slack Web API': hooks.seen('/slack-api/'),
      'Event Grid': gridTap.seen('/topics/maintenance:publish'),
      'health check (http)': hooks.seen('/healthz'),
      'health check (prometheus)': hooks.seen('/prometheus/'),
    });
    await waitFor(() => Object.values(kinds()).every((seen) => seen.length > 0), 'every kind of request on the wire');
    expect(sim.startRequests.flatMap((r) => r.eventIds)).toEqual([e.eventId]);
    expect(grid.events('maintenance').length).toBeGreaterThan(0);
    expect(writers(kinds())).toEqual(all(kinds(), 'undici'));
  });

  it('the control channel: a tap on a Unix socket in front of the daemon’s sees undici', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'se-bridge-test-wire-'));
    try {
      // the socket controlCall finds for a state at `dir`, relaying to the daemon's
      const listenPath = controlPath(join(dir, 'state.db'));
      mkdirSync(dirname(listenPath), { recursive: true, mode: 0o700 });
      const control = await tap('http://localhost', { listenPath, targetPath: controlPath(h.config.state.path) });
      const answer = await controlCall(join(dir, 'state.db'), 'GET', '/v1/drills/current');
      // the daemon's own answer: no drill was played
      expect(answer).toMatchObject({ status: 404, body: { error: 'NO_DRILL' } });
      expect(writers({ control: control.seen('/v1/drills') })).toEqual({ control: 'undici' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('components in process', () => {
  it('the managed identity token from IMDS, the Blob store, Resource Manager, Entra ID’s key set, the Kubernetes API: undici', async () => {
    const identity = await tap(sim.url);
    process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = identity.url;
    const tokens = new ImdsTokens({ kind: 'managedIdentity' });
    expect(await tokens.token('https://storage.azure.com')).toMatch(/^ey/);
    later.push(() => tokens.close());
    const imdsToken = identity.requests.splice(0);

    // Resource Manager, its token from the same identity endpoint (the stand-in checks the token's audience: its own origin)
    const arm = new ArmStandIn(TLS, 50);
    await arm.peer.listen();
    later.push(() => arm.peer.close());
    const armTap = await tap(arm.peer.url, { tls: TLS });
    const E1 = '00000000-0000-4000-b000-000000000001';
    arm.rows = [scheduledEventOf({ resourceId: vmId('web-1'), eventId: E1 })];
    const client = new ArmClient({ endpoint: armTap.url, caFile: join(ROOT, 'test/fixtures/tls/cert.pem'), timeoutMs: 5000 });
    const answer = await client.acknowledge(parseEventResource(vmId('web-1'))!, [E1]);
    client.close();
    // the stand-in answered: a token for the tap's origin is not for its own
    expect(answer.status).toBe(401);
    const armToken = identity.requests.splice(0);

    // the Blob store's REST calls, against Azurite
    const azurite = await Azurite.start();
    later.push(() => azurite.stop());
    const blobTap = await tap(azurite.url);
    const rest = new BlobRest(endpointOf(azurite.connectionString(`${blobTap.url}/${DEV_ACCOUNT}`)));
    try {
      await rest.call('create the container', { method: 'PUT', path: 'wire', query: { restype: 'container' } });
      await rest.call('write', { method: 'PUT', path: 'wire/r.json', headers: { 'x-ms-blob-type': 'BlockBlob' }, body: '{}' });
      expect((await rest.call('read', { method: 'GET', path: 'wire/r.json' })).body.toString()).toBe('{}');
    } finally {
      rest.close();
    }

    // Entra ID's signing keys, read by the verifier of Entra-protected deliveries
    const tenant = new EntraTenant();
    await tenant.listen();
    later.push(() => tenant.close());
    const keysTap = await tap(tenant.peer.url);
    const audience = 'api://se-bridge-relay';
    const verifier = new EntraTokens({
      ...{ tenantId: TENANT, audience, allowedClients: [EVENT_GRID_APP_ID], maxLifetimeSeconds: 86_400 },
      jwksUrl: `${keysTap.url}/${TENANT}/discovery/v2.0/keys`,
    });
    expect(await verifier.check(`Bearer ${tenant.token(audience)}`)).toEqual({ ok: true, client: EVENT_GRID_APP_ID });
    verifier.close();

    // the Kubernetes API, over HTTPS with the cluster's CA from a kubeconfig
    const kubeTap = await tap(kube.url, { tls: { key: KUBE_KEY, cert: KUBE_CERT } });
    const connection = KubeConnection.open(writeKubeconfig(kubeDir, 'wire', { server: kubeTap.url, user: { token: KUBE_TOKEN } }))!;
    expect((await connection.request<{ metadata: { name: string } }>({ method: 'GET', path: '/api/v1/nodes/n0' })).metadata.name).toBe(
      'n0',
    );
    connection.close();

    const kinds = {
      'IMDS managed identity token': imdsToken,
      'Resource Manager': armTap.seen('/subscriptions/'),
      "Resource Manager's token": armToken,
      'Blob Storage': blobTap.requests,
      "Entra ID's key set": keysTap.requests,
      'Kubernetes API': kubeTap.requests,
    };
    expect(writers(kinds)).toEqual(all(kinds, 'undici'));
  });
});
