/**
 * Entra ID-protected delivery at the relay, against the tokens an attacker would try: the relay
 * runs in this process with its real verifier (jose), the tenant's signing keys are a stand-in
 * of Entra ID's key set (no Entra ID runs here) on 127.0.0.1, read over HTTP, and the fleet's store
 * is the Kubernetes API stand-in's Leases, a namespace per test. A refused token is 401 UNAUTHORIZED, which Event Grid
 * drops; a key set that is down, throttled or hangs is 503 ENTRA_KEYS_UNAVAILABLE, which Event
 * Grid delivers again. Nothing a refused delivery carries is kept.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RelayConfig } from '../../src/relay/config.ts';
import { startRelay, type RunningRelay } from '../../src/relay/relay.ts';
import { EventGridDelivery, eventGridEvent, SUBSCRIPTION, vmId } from '../../testkit/azure-feed.ts';
import { EntraTenant, TENANT } from '../../testkit/entra-tenant.ts';
import { KubeStandIn } from '../../testkit/kube-apiserver.ts';

const AUDIENCE = 'api://se-bridge-relay';
const READ_KEY = 'fleet-read-key-0123456789';
let kube: KubeStandIn;
let dir: string;
let tenant: EntraTenant;
let relay: RunningRelay;
const logged: string[] = [];

beforeAll(async () => {
  kube = await new KubeStandIn().start();
  dir = mkdtempSync(join(tmpdir(), 'se-bridge-test-relay-entra-'));
  writeFileSync(join(dir, 'kubeconfig'), kube.kubeconfig());
});
afterAll(async () => {
  await kube?.close();
  rmSync(dir, { recursive: true, force: true });
});
let tests = 0;
beforeEach(async () => {
  tenant = new EntraTenant();
  await tenant.listen();
  const config = RelayConfig.parse({
    listen: '127.0.0.1:0',
    observability: { listen: 'off' },
    log: { level: 'silent' },
    fleet: { store: { type: 'kubernetes', namespace: `se-bridge-${++tests}`, kubeconfig: join(dir, 'kubeconfig') }, cacheMs: 0 },
    readKeys: [READ_KEY],
    azure: {
      recordKey: Buffer.alloc(32, 5).toString('base64'),
      subscriptions: [SUBSCRIPTION],
      checkSeconds: 3600,
      eventGrid: { entra: { tenantId: TENANT, audience: AUDIENCE, jwksUrl: tenant.jwksUrl } },
    },
  });
  const logger = pino({ level: 'warn' }, { write: (line: string) => void logged.push(line) });
  relay = await startRelay(config, logger, { host: '127.0.0.1', port: 0 });
});
afterEach(async () => {
  await relay?.close();
  await tenant?.close();
  logged.length = 0;
});

let n = 0;
/** deliver: one Event Grid delivery of one new event, with `authorization`; its status and JSON body. */
async function deliver(authorization: string | null): Promise<{ status: number; body: { error?: { code: string; message: string } } }> {
  const res = await fetch(`${relay.url}/v1/azure/eventgrid`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'aeg-event-type': 'Notification', ...(authorization ? { authorization } : {}) },
    body: JSON.stringify([eventGridEvent({ resourceId: vmId(`ghost${++n}`), eventId: `E-${n}` })]),
    signal: AbortSignal.timeout(15_000),
  });
  return { status: res.status, body: (await res.json()) as { error?: { code: string; message: string } } };
}

/** kept: the events the relay keeps (its fleet read API). */
async function kept(): Promise<string[]> {
  const res = await fetch(`${relay.url}/v1/fleet/events?limit=1000`, { headers: { authorization: `Bearer ${READ_KEY}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { events: { eventId: string }[] }).events.map((e) => e.eventId);
}

describe('Entra ID-protected delivery: the tokens an attacker would try, refused 401 UNAUTHORIZED, nothing kept', () => {
  it('alg none, HS256 keyed with the public key or a secret, and the tenant key under another algorithm', async () => {
    const now = Math.floor(Date.now() / 1000);
    const refusals: [string, string, RegExp][] = [
      ['alg none', tenant.forged(AUDIENCE, 'none'), /not signed with RS256/],
      ["HS256 keyed with the public key's bytes", tenant.forged(AUDIENCE, 'hs256-public-key'), /not signed with RS256/],
      ['HS256 keyed with a secret', tenant.forged(AUDIENCE, 'hs256-secret', { secret: 'guessed' }), /not signed with RS256/],
      ["RS384 with the tenant's own key", tenant.token(AUDIENCE, {}, { alg: 'RS384' }), /not signed with RS256/],
      ["RS512 with the tenant's own key", tenant.token(AUDIENCE, {}, { alg: 'RS512' }), /not signed with RS256/],
      ["PS256 with the tenant's own key", tenant.token(AUDIENCE, {}, { alg: 'PS256' }), /not signed with RS256/],
      ['a future nbf', tenant.token(AUDIENCE, { nbf: now + 3600, exp: now + 7200 }), /not valid yet/],
      ['an audience array with ours', tenant.token(AUDIENCE, { aud: [AUDIENCE, 'api://another'] }), /more than one audience/],
      ['an audience array without ours', tenant.token(AUDIENCE, { aud: ['api://another', 'api://third'] }), /another audience/],
    ];
    for (const [what, token, why] of refusals)
      expect(await deliver(`Bearer ${token}`), what).toEqual({
        status: 401,
        body: { error: { code: 'UNAUTHORIZED', message: expect.stringMatching(why) } },
      });
    expect(await kept()).toEqual([]);
    // said in the log with why, never with the token
    expect(logged.filter((l) => l.includes('RELAY_DELIVERY_REFUSED'))).toHaveLength(refusals.length);
    for (const [what, token] of refusals) expect(logged.join('').includes(token.split('.')[1]!), what).toBe(false);
    // and the tenant's own token, after them all, is taken: the refusals were for the tokens, not the relay's state
    expect(await deliver(`Bearer ${tenant.token(AUDIENCE)}`)).toMatchObject({ status: 200 });
    expect(await kept()).toHaveLength(1);
  });
});

describe("Entra ID-protected delivery: the tenant's own tokens", () => {
  it("deliveries that come together as the relay starts are each taken, with one read of the tenant's keys", async () => {
    const answers = await Promise.all(Array.from({ length: 10 }, () => deliver(`Bearer ${tenant.token(AUDIENCE)}`)));
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 10 }, () => 200));
    expect(tenant.fetches).toBe(1);
    expect(await kept()).toHaveLength(10);
  });
});

describe("Entra ID-protected delivery while the tenant's key set cannot be read: 503 ENTRA_KEYS_UNAVAILABLE, which Event Grid delivers again", () => {
  it.each([
    ['down (503)', 'down', /answered 503/],
    ['throttled (429 with Retry-After)', 'throttled', /answered 429/],
  ] as const)('%s: every attempt answered at once, the keys asked once, nothing kept', async (_what, mode, said) => {
    tenant.mode = mode;
    const grid = new EventGridDelivery(`${relay.url}/v1/azure/eventgrid`, { authorization: `Bearer ${tenant.token(AUDIENCE)}` });
    const d = await grid.deliver([eventGridEvent({ resourceId: vmId('ghost-keys'), eventId: 'E-keys' })]);
    expect(d).toMatchObject({
      status: 503,
      attempts: 6,
      body: { error: { code: 'ENTRA_KEYS_UNAVAILABLE', message: expect.stringMatching(said) } },
    });
    expect(tenant.fetches).toBe(1);
    expect(await kept()).toEqual([]);
  });

  it("hanging (no answer at all): the verifier's own deadline ends the read, 503, nothing kept", async () => {
    tenant.mode = 'hang';
    const d = await deliver(`Bearer ${tenant.token(AUDIENCE)}`);
    expect(d).toEqual({ status: 503, body: { error: { code: 'ENTRA_KEYS_UNAVAILABLE', message: expect.stringMatching(/aborted/) } } });
    expect(tenant.fetches).toBe(1);
    expect(await kept()).toEqual([]);
  });
});
