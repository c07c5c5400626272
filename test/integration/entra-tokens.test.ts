/**
 * The verifier of Entra ID-protected deliveries over time: the tenant's key set (a stand-in of
 * Entra ID's, written from its reference, on 127.0.0.1; no Entra ID runs here) read over HTTP by
 * the real verifier, its tokens signed by hand. The verifier's clock is the test's, so a minute
 * or an hour passes without waiting for it; the key set is asked over the wire each time.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EntraTokens, EVENT_GRID_APP_ID } from '../../src/azure/bearer.ts';
import { EntraTenant, TENANT } from '../../testkit/entra-tenant.ts';

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
          why: /not one of the tenant's/,
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
    expect(await tokens.check(bearer())).toMatchObject({ ok: false, kind: 'unavailable', why: /not JSON/ });
    tenant.peer.answer = () => ({ status: 200, body: JSON.stringify({ keys: [{ kty: 'oct', kid: 'k1', k: 'c2VjcmV0' }] }) });
    clock += 61_000;
    expect(await tokens.check(bearer())).toMatchObject({ ok: false, kind: 'refused', why: /not one of the tenant's/ });
    expect(tenant.fetches).toBe(2);
  });
});
