/**
 * What the verifier of Entra ID-protected deliveries takes and refuses, claim by claim, and why it
 * says so (the 401's message, which tells an operator what to fix): the real verifier (jose)
 * reads the tenant's key set over HTTP from a stand-in of Entra ID's (no Entra ID runs here) on
 * 127.0.0.1, its tokens signed by hand. The verifier's clock is the test's, so each bound is
 * tried one second inside and one second outside it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EntraTokens, EVENT_GRID_APP_ID, type EntraTokenOptions } from '../../src/azure/bearer.ts';
import { EntraTenant, TENANT } from '../../testkit/entra-tenant.ts';

const AUDIENCE = 'api://se-bridge-relay';
const ROLE = 'AzureEventGridSecureWebhookSubscriber';
const DAY = 86_400;
const clock = Date.parse('2026-11-27T10:00:00Z');
const now = Math.floor(clock / 1000);
// made before the tables below are (its tokens need no listening), listening before the first test
const tenant = new EntraTenant();
const open: EntraTokens[] = [];
let verify: EntraTokens;

beforeAll(async () => {
  await tenant.listen();
  verify = verifier();
});
afterAll(async () => {
  for (const t of open) t.close();
  await tenant.close();
});

/** verifier: the relay's verifier of the stand-in tenant's tokens, on the test's clock, with `over` on top. */
function verifier(over: Partial<EntraTokenOptions> = {}): EntraTokens {
  const t = new EntraTokens({
    ...{ tenantId: TENANT, audience: AUDIENCE, allowedClients: [EVENT_GRID_APP_ID], maxLifetimeSeconds: DAY },
    ...{ jwksUrl: tenant.jwksUrl, now: () => clock, ...over },
  });
  open.push(t);
  return t;
}

const token = (
  claims: Record<string, unknown> = {},
  o: { v?: 1 | 2; kid?: string | null; alg?: 'RS256' | 'RS384' | 'RS512' | 'PS256' } = {},
) => `Bearer ${tenant.token(AUDIENCE, claims, { nowS: now, ...o })}`;
const OTHER_TENANT = '11111111-1111-1111-1111-111111111111';
const longClient = `${'a'.repeat(64)}${'Z'.repeat(36)}`;

describe('the tokens the verifier takes: who they were issued to', () => {
  it.each<[string, string, string]>([
    ['a v1 token (appid)', token(), EVENT_GRID_APP_ID],
    ['a v2 token (azp)', token({}, { v: 2 }), EVENT_GRID_APP_ID],
    ['the client named in capitals', token({ appid: EVENT_GRID_APP_ID.toUpperCase() }), EVENT_GRID_APP_ID.toUpperCase()],
    ['the tenant named in capitals (tid)', token({ tid: TENANT.toUpperCase() }), EVENT_GRID_APP_ID],
    ['lives exactly maxLifetimeSeconds', token({ exp: now + DAY }), EVENT_GRID_APP_ID],
    [
      'lives maxLifetimeSeconds from its nbf, longer from its iat',
      token({ iat: now - 100, nbf: now - 50, exp: now - 50 + DAY }),
      EVENT_GRID_APP_ID,
    ],
    ['not valid for 299 s yet (within the skew)', token({ nbf: now + 299, exp: now + 3600 }), EVENT_GRID_APP_ID],
    ['expired 299 s ago (within the skew)', token({ iat: now - 3600, nbf: now - 3600, exp: now - 299 }), EVENT_GRID_APP_ID],
    ['issued 299 s ahead (within the skew)', token({ iat: now + 299, nbf: now, exp: now + 3600 }), EVENT_GRID_APP_ID],
    ['issued maxLifetimeSeconds and 299 s ago', token({ iat: now - DAY - 299, nbf: now - 10, exp: now + 3600 }), EVENT_GRID_APP_ID],
  ])('%s', async (_what, t, client) => {
    expect(await verify.check(t)).toEqual({ ok: true, client });
  });

  it('configured in capitals (tenant, clients) as in lower case: the same tenant and clients', async () => {
    const v = verifier({ tenantId: TENANT.toUpperCase(), allowedClients: [EVENT_GRID_APP_ID.toUpperCase()] });
    expect(await v.check(token())).toEqual({ ok: true, client: EVENT_GRID_APP_ID });
    expect(await v.check(token({}, { v: 2 }))).toEqual({ ok: true, client: EVENT_GRID_APP_ID });
  });

  it('with a role configured: only a token that carries it in its roles', async () => {
    const v = verifier({ role: ROLE });
    expect(await v.check(token({ roles: ['Reader', ROLE] }))).toEqual({ ok: true, client: EVENT_GRID_APP_ID });
    for (const [what, roles] of [
      ['no roles', undefined],
      ['another role', ['Reader']],
      ['the role as a string, not a list', ROLE],
      ['a longer role that contains it', [`${ROLE}s`]],
    ] as const)
      expect(await v.check(token({ roles })), what).toEqual({
        ok: false,
        kind: 'refused',
        why: `the token does not carry the role ${ROLE}`,
      });
    // without a role configured, roles are not asked for
    expect(await verify.check(token({ roles: undefined }))).toMatchObject({ ok: true });
  });
});

describe('the tokens the verifier refuses, and why it says so', () => {
  it.each<[string, string | undefined, string]>([
    ['no Authorization header', undefined, 'no bearer token'],
    ['another scheme', `Basic ${Buffer.from('a:b').toString('base64')}`, 'no bearer token'],
    ['the scheme in lower case', token().replace('Bearer', 'bearer'), 'no bearer token'],
    ['a token after something else', `x${token()}`, 'no bearer token'],
    ['something after the token', `${token()} x`, 'no bearer token'],
    ['two parts, not three', `Bearer ${tenant.token(AUDIENCE).split('.').slice(0, 2).join('.')}`, 'no bearer token'],
    ['padding in the token', `${token()}=`, 'no bearer token'],
    ['no JWT at all', 'Bearer not.a.jwt', 'the token is not a well-formed JWT'],
    ['another audience', token({ aud: 'api://another' }), 'the token is for another audience'],
    ['an audience list with ours', token({ aud: [AUDIENCE, 'api://another'] }), 'the token names more than one audience'],
    ['an audience list without ours', token({ aud: ['api://another', 'api://third'] }), 'the token is for another audience'],
    ['another issuer', token({ iss: `https://sts.windows.net/${OTHER_TENANT}/` }), "the token's issuer is not the tenant's"],
    [
      'the issuer of v2 for another tenant',
      token({ iss: `https://login.microsoftonline.com/${OTHER_TENANT}/v2.0` }),
      "the token's issuer is not the tenant's",
    ],
    ['another tenant', token({ tid: OTHER_TENANT }), 'the token is from another tenant'],
    ['no tenant', token({ tid: undefined }), 'the token is from another tenant'],
    ['a tenant that is no string', token({ tid: 42 }), 'the token is from another tenant'],
    ['no exp', token({ exp: undefined }), 'the token has no exp claim'],
    ['no iat', token({ iat: undefined }), 'the token has no iat claim'],
    ['an exp that is no time', token({ exp: 'soon' }), "the token's exp claim is refused"],
    ['expired 301 s ago', token({ iat: now - 3600, nbf: now - 3600, exp: now - 301 }), 'the token has expired'],
    ['not valid for 301 s yet', token({ nbf: now + 301, exp: now + 3600 }), 'the token is not valid yet'],
    ['issued 301 s ahead', token({ iat: now + 301, nbf: now, exp: now + 3600 }), 'the token was issued in the future'],
    [
      'issued maxLifetimeSeconds and 301 s ago',
      token({ iat: now - DAY - 301, nbf: now - 10, exp: now + 3600 }),
      'the token was issued too long ago',
    ],
    [
      'lives a second longer than maxLifetimeSeconds',
      token({ exp: now + DAY + 1 }),
      `the token lives ${DAY + 1} s, longer than maxLifetimeSeconds (${DAY})`,
    ],
    [
      'no nbf, and lives longer from its iat',
      token({ nbf: undefined, exp: now + DAY + 1 }),
      `the token lives ${DAY + 1} s, longer than maxLifetimeSeconds (${DAY})`,
    ],
    ['no client', token({ appid: undefined }), 'the token names no client (appid or azp)'],
    ['a client that is no string', token({ appid: 7 }), 'the token names no client (appid or azp)'],
    ['another appid (v1)', token({ appid: OTHER_TENANT }), `the token was issued to ${OTHER_TENANT}, not one of allowedClients`],
    ['another azp (v2)', token({ azp: OTHER_TENANT }, { v: 2 }), `the token was issued to ${OTHER_TENANT}, not one of allowedClients`],
    ['its appid ours, its azp another', token({ azp: OTHER_TENANT }), `the token was issued to ${OTHER_TENANT}, not one of allowedClients`],
    [
      'a long client, named in 64 characters',
      token({ appid: longClient }),
      `the token was issued to ${'a'.repeat(64)}, not one of allowedClients`,
    ],
    ['alg none', `Bearer ${tenant.forged(AUDIENCE, 'none', { nowS: now })}`, 'the token is not signed with RS256'],
    [
      "HS256 keyed with the public key's bytes",
      `Bearer ${tenant.forged(AUDIENCE, 'hs256-public-key', { nowS: now })}`,
      'the token is not signed with RS256',
    ],
    ['HS256 keyed with a secret', `Bearer ${tenant.forged(AUDIENCE, 'hs256-secret', { nowS: now })}`, 'the token is not signed with RS256'],
    ["RS384 with the tenant's key", token({}, { alg: 'RS384' }), 'the token is not signed with RS256'],
    ["RS512 with the tenant's key", token({}, { alg: 'RS512' }), 'the token is not signed with RS256'],
    ["PS256 with the tenant's key", token({}, { alg: 'PS256' }), 'the token is not signed with RS256'],
    ['no key named', token({}, { kid: null }), 'the token names no key (kid)'],
    ["a key not the tenant's", token({}, { kid: 'k-unknown' }), "the token's key is not one of the tenant's"],
    ['a broken signature', `${token().slice(0, -6)}AAAAAA`, 'the signature does not verify'],
  ])('%s', async (_what, authorization, why) => {
    expect(await verify.check(authorization)).toEqual({ ok: false, kind: 'refused', why });
  });
});
