/**
 * The verifier of Entra ID-protected deliveries over time: the tenant's key set (a stand-in of
 * Entra ID's, written from its reference, on 127.0.0.1; no Entra ID runs here) read over HTTP by
 * the real verifier, its tokens signed by hand. The verifier's clock is the test's, so a minute
 * or an hour passes without waiting for it; the key set is asked over the wire each time.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EntraTokens, EVENT_GRID_APP_ID } from '../../src/azure/bearer.ts';
import { EntraTenant, TENANT } from '../../testkit/entra-tenant.ts';
import { ROOT, waitFor } from '../helpers.ts';

const AUDIENCE = 'api://se-bridge-relay';
let tenant: EntraTenant;
let tokens: EntraTokens;
let clock = Date.parse('2026-11-27T10:00:00Z');
const nowS = () => Math.floor(clock / 1000);
const bearer = (o: { kid?: string; v?: 1 | 2 } = {}) => `Bearer ${tenant.token(AUDIENCE, {}, { ...o, nowS: nowS() })}`;

beforeEach(async () => {
  tenant = new EntraTenant();
  await tenant.listen();
  tokens = new EntraTokens({
    ...{ tenantId: TENANT, audience: AUDIENCE, allowedClients: [EVENT_GRID_APP_ID], maxLifetimeSeconds: 86_400 },
    ...{ jwksUrl: tenant.jwksUrl, now: () => clock },
  });
});
afterEach(async () => {
  tokens.close();
  await tenant.close();
});

describe("the tenant's key set, as the verifier reads it", () => {
  for (const mode of ['down', 'throttled'] as const)
    it(`${mode}: tokens wait (unavailable) and the keys are asked at most once a minute; once it is back, the next minute's token is taken`, async () => {
      tenant.mode = mode;
      for (let i = 0; i < 20; i++) expect(await tokens.check(bearer())).toMatchObject({ ok: false, kind: 'unavailable' });
      expect(tenant.fetches).toBe(1);
      tenant.mode = 'up';
      clock += 30_000;
      expect(await tokens.check(bearer())).toMatchObject({ ok: false, kind: 'unavailable' });
      expect(tenant.fetches).toBe(1);
      clock += 31_000;
      expect(await tokens.check(bearer())).toEqual({ ok: true, client: EVENT_GRID_APP_ID });
      expect(tenant.fetches).toBe(2);
    });

  it('an unknown key is looked for once a minute, however many tokens name one; a key the tenant rolled over to is found', async () => {
    expect(await tokens.check(bearer())).toMatchObject({ ok: true });
    const forged = async (n: number) => {
      for (let i = 0; i < n; i++)
        expect(await tokens.check(bearer({ kid: `k-forged-${i}` }))).toMatchObject({
          ok: false,
          kind: 'refused',
          why: expect.stringMatching(/not one of the tenant's/),
        });
    };
    // within the minute of the first read: none asked again
    await forged(20);
    expect(tenant.fetches).toBe(1);
    clock += 61_000;
    await forged(20);
    expect(tenant.fetches).toBe(2);
    tenant.kids = ['k2'];
    clock += 61_000;
    expect(await tokens.check(bearer({ kid: 'k2', v: 2 }))).toEqual({ ok: true, client: EVENT_GRID_APP_ID });
    expect(tenant.fetches).toBe(3);
  });

  it('after an hour the keys are read again; when that fails, the keys last read still verify their tokens, and a new key waits', async () => {
    expect(await tokens.check(bearer())).toMatchObject({ ok: true });
    tenant.mode = 'down';
    clock += 3_601_000;
    expect(await tokens.check(bearer())).toMatchObject({ ok: true });
    expect(tenant.fetches).toBe(2);
    clock += 61_000;
    expect(await tokens.check(bearer({ kid: 'k-new' }))).toMatchObject({ ok: false, kind: 'unavailable' });
    expect(tenant.fetches).toBe(3);
  });

  it('a key set that is no key set (not JSON, or no RSA key) verifies nothing and is asked again a minute later', async () => {
    tenant.peer.answer = () => ({ status: 200, body: '<html>maintenance</html>' });
    expect(await tokens.check(bearer())).toMatchObject({ ok: false, kind: 'unavailable', why: expect.stringMatching(/not JSON/) });
    tenant.peer.answer = () => ({ status: 200, body: JSON.stringify({ keys: [{ kty: 'oct', kid: 'k1', k: 'c2VjcmV0' }] }) });
    clock += 61_000;
    expect(await tokens.check(bearer())).toMatchObject({
      ok: false,
      kind: 'refused',
      why: expect.stringMatching(/not one of the tenant's/),
    });
    expect(tenant.fetches).toBe(2);
  });
});

describe('reading the key set', () => {
  it('tokens that come together at the start share one read of the keys', async () => {
    const verdicts = await Promise.all(Array.from({ length: 20 }, () => tokens.check(bearer())));
    expect(verdicts.filter((v) => !v.ok)).toEqual([]);
    expect(tenant.fetches).toBe(1);
  });

  it('a failed read is tried again a minute later to the millisecond, not before', async () => {
    tenant.mode = 'down';
    expect(await tokens.check(bearer())).toEqual({
      ok: false,
      kind: 'unavailable',
      why: "the tenant's signing keys could not be read (the key set answered 503); asked again within a minute",
    });
    tenant.mode = 'up';
    clock += 59_999;
    expect(await tokens.check(bearer())).toMatchObject({ ok: false, kind: 'unavailable' });
    expect(tenant.fetches).toBe(1);
    clock += 1;
    expect(await tokens.check(bearer())).toEqual({ ok: true, client: EVENT_GRID_APP_ID });
    expect(tenant.fetches).toBe(2);
  });

  it('the keys are kept an hour to the millisecond, then read again', async () => {
    expect(await tokens.check(bearer())).toMatchObject({ ok: true });
    clock += 3_600_000;
    expect(await tokens.check(bearer())).toMatchObject({ ok: true });
    expect(tenant.fetches).toBe(1);
    clock += 1;
    expect(await tokens.check(bearer())).toMatchObject({ ok: true });
    expect(tenant.fetches).toBe(2);
  });

  it("what is not a named RSA key in the set is left out, and the tenant's key beside it still verifies", async () => {
    const real = tenant.peer.answer;
    tenant.peer.answer = (req, i) => {
      const a = real(req, i) as { body: string };
      const { keys } = JSON.parse(a.body) as { keys: Record<string, unknown>[] };
      const junk = [null, 'k1', 7, { ...keys[0], kid: undefined }, { ...keys[0], kid: 42 }, { ...keys[0], kty: 'EC', kid: 'k-ec' }];
      return { status: 200, body: JSON.stringify({ keys: [...junk, ...keys] }) };
    };
    expect(await tokens.check(bearer())).toEqual({ ok: true, client: EVENT_GRID_APP_ID });
    expect(await tokens.check(bearer({ kid: 'k-ec' }))).toMatchObject({
      ok: false,
      kind: 'refused',
      why: expect.stringMatching(/not one of the tenant's/),
    });
  });

  it.each([
    ['keys that are no list', JSON.stringify({ keys: { k1: {} } }), 'refused', /not one of the tenant's/],
    ['no keys at all', '{}', 'refused', /not one of the tenant's/],
    ['null', 'null', 'unavailable', /could not be read/],
    ['over 256 KiB', JSON.stringify({ keys: [], pad: 'x'.repeat(256 * 1024) }), 'unavailable', /not JSON/],
  ] as const)('a key set of %s verifies nothing', async (_what, body, kind, why) => {
    tenant.peer.answer = () => ({ status: 200, body });
    expect(await tokens.check(bearer())).toMatchObject({ ok: false, kind, why: expect.stringMatching(why) });
  });

  it("a key set that does not answer: the verifier's deadline ends the read, and the next read waits a minute", async () => {
    tenant.mode = 'hang';
    const quick = new EntraTokens({
      ...{ tenantId: TENANT, audience: AUDIENCE, allowedClients: [EVENT_GRID_APP_ID], maxLifetimeSeconds: 86_400 },
      ...{ jwksUrl: tenant.jwksUrl, now: () => clock, timeoutMs: 200 },
    });
    try {
      expect(await quick.check(bearer())).toMatchObject({ ok: false, kind: 'unavailable', why: expect.stringMatching(/aborted/) });
      expect(await quick.check(bearer())).toMatchObject({ ok: false, kind: 'unavailable', why: expect.stringMatching(/aborted/) });
      expect(tenant.fetches).toBe(1);
    } finally {
      quick.close();
    }
  });
});

describe('closing', () => {
  it('close lets go of the connection to the key set', async () => {
    expect(await tokens.check(bearer())).toMatchObject({ ok: true });
    expect(tenant.peer.openConnections).toBe(1);
    tokens.close();
    await waitFor(() => tenant.peer.openConnections === 0, 'the connection to the key set closed', 10_000);
  });
});

describe('where the key set is read', () => {
  const tls = {
    key: readFileSync(join(ROOT, 'test/fixtures/tls/key.pem'), 'utf8'),
    cert: readFileSync(join(ROOT, 'test/fixtures/tls/cert.pem'), 'utf8'),
  };
  const options = {
    tenantId: TENANT,
    audience: AUDIENCE,
    allowedClients: [EVENT_GRID_APP_ID],
    maxLifetimeSeconds: 86_400,
    now: () => clock,
  };

  it('over HTTPS, trusting the CA it is given beside the system roots; without it, the keys cannot be read', async () => {
    const secure = new EntraTenant(TENANT, tls);
    await secure.listen();
    const trusting = new EntraTokens({ ...options, jwksUrl: secure.jwksUrl, ca: tls.cert });
    const untrusting = new EntraTokens({ ...options, jwksUrl: secure.jwksUrl });
    try {
      const t = `Bearer ${secure.token(AUDIENCE, {}, { nowS: nowS() })}`;
      expect(await trusting.check(t)).toEqual({ ok: true, client: EVENT_GRID_APP_ID });
      expect(await untrusting.check(t)).toMatchObject({ ok: false, kind: 'unavailable', why: expect.stringMatching(/certificate/) });
    } finally {
      trusting.close();
      untrusting.close();
      await secure.close();
    }
  });

  it("by default the tenant's own keys on Entra ID, through the proxy the environment names", async () => {
    // a proxy that refuses every tunnel, and says where each would have gone: nothing leaves this machine
    const tunnels: string[] = [];
    const proxy = createServer();
    proxy.on('connect', (req: IncomingMessage, socket: Socket) => {
      tunnels.push(String(req.url));
      socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const saved = { HTTPS_PROXY: process.env.HTTPS_PROXY, NO_PROXY: process.env.NO_PROXY };
    process.env.HTTPS_PROXY = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    process.env.NO_PROXY = '';
    const byDefault = new EntraTokens(options);
    try {
      expect(await byDefault.check(bearer())).toMatchObject({ ok: false, kind: 'unavailable' });
      expect(tunnels).toEqual(['login.microsoftonline.com:443']);
    } finally {
      byDefault.close();
      for (const [k, v] of Object.entries(saved))
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      await new Promise((r) => proxy.close(r));
    }
  });
});
