/**
 * EntraTokens verifies an Entra ID bearer token, as Event Grid sends one to an Entra-protected
 * webhook, with panva/jose (`jwtVerify`): an RS256 JWT signed by one of the tenant's published
 * keys, issued by the tenant (its v1 or v2 issuer), for the configured audience, within its
 * lifetime (five minutes of clock skew allowed) and no longer-lived than `maxLifetimeSeconds`.
 * Then the claims that say who the caller is: the tenant (`tid`), the client the token was issued
 * to (`appid` in v1 tokens, `azp` in v2) among `allowedClients`, and, when configured, an app
 * role (`roles`). Any principal of a tenant can get a token for an app that does not require
 * assignment; only these claims tell Event Grid from another of them.
 * https://learn.microsoft.com/entra/identity-platform/access-tokens#validate-tokens
 *
 * The tenant's keys are fetched with the project's HTTP client (a deadline, the proxy, a CA),
 * kept for an hour and fetched again when a token names a key not seen yet, at most once a minute
 * whatever happens. A key set that cannot be read answers `unavailable` (the delivery is retried),
 * never crashes and never asks more often. jose is loaded on the first token, so nothing but a
 * relay with Entra-protected delivery loads it.
 */
import type { JWTPayload, JWTVerifyGetKey } from 'jose';
import { BridgeError, messageOf } from '../lib/errors.ts';
import { HttpClient } from '../lib/http-client.ts';

/**
 * EVENT_GRID_APP_ID: the application id of Event Grid's own Entra ID application in Azure's
 * public cloud, the client of the tokens it sends to an Entra-protected webhook (Microsoft's
 * "Deliver events to Microsoft Entra protected endpoints": `$eventGridAppId`).
 * https://learn.microsoft.com/azure/event-grid/secure-webhook-delivery
 */
export const EVENT_GRID_APP_ID = '4962773b-9cdb-44cf-a8bf-237846a00ab7';

export interface EntraTokenOptions {
  readonly tenantId: string;
  readonly audience: string;
  /** The client applications whose tokens are taken (`appid` / `azp`). */
  readonly allowedClients: readonly string[];
  /** An app role the token must carry in `roles`, when set. */
  readonly role?: string | undefined;
  /** The longest lifetime a token may have (`exp` - `nbf`, else `exp` - `iat`), and the oldest its `iat` may be. */
  readonly maxLifetimeSeconds: number;
  /** Default: the tenant's discovery keys on Entra ID. */
  readonly jwksUrl?: string | undefined;
  readonly timeoutMs?: number;
  /** PEM CA(s) to trust for jwksUrl beside the system's. */
  readonly ca?: string | undefined;
  readonly now?: () => number;
}

/** What a token came to: the client it was issued to, or why not (`refused`: 401; `unavailable`: the keys could not be read, 503). */
export type TokenVerdict =
  { readonly ok: true; readonly client: string } | { readonly ok: false; readonly kind: 'refused' | 'unavailable'; readonly why: string };

const SKEW_S = 300;
const KEYS_TTL_MS = 3_600_000;
const REFETCH_MS = 60_000;

/** KeysUnavailable: the tenant's keys could not be read, so the token is neither good nor bad yet. */
class KeysUnavailable extends BridgeError<'ENTRA_KEYS_UNAVAILABLE'> {
  constructor(why: string) {
    super('ENTRA_KEYS_UNAVAILABLE', why);
  }
}

/** whyOf: what a jose error says of a token, in a few words (never the token). */
function whyOf(err: unknown): string {
  const e = err as { code?: unknown; claim?: unknown; reason?: unknown };
  const claim = typeof e.claim === 'string' ? e.claim : '';
  if (e.reason === 'missing') return `the token has no ${claim} claim`;
  switch (e.code) {
    case 'ERR_JWT_EXPIRED':
      return claim === 'iat' ? 'the token was issued too long ago' : 'the token has expired';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (claim === 'aud') return 'the token is for another audience';
      if (claim === 'iss') return "the token's issuer is not the tenant's";
      if (claim === 'nbf') return 'the token is not valid yet';
      if (claim === 'iat') return 'the token was issued in the future';
      return `the token's ${claim} claim is refused`;
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return 'the token is not signed with RS256';
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return 'the signature does not verify';
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return "the token's key is not one of the tenant's";
    default:
      return 'the token is not a well-formed JWT';
  }
}

export class EntraTokens {
  readonly #o: EntraTokenOptions;
  readonly #url: string;
  readonly #issuers: string[];
  readonly #clients: Set<string>;
  readonly #now: () => number;
  readonly #http: HttpClient;
  #keys: JWTVerifyGetKey | null = null;
  #kids = new Set<string>();
  #fetchedAt = 0;
  #triedAt = -Infinity;
  /** Why the last fetch of the keys failed (null: it did not). */
  #failure: string | null = null;
  #fetching: Promise<void> | null = null;

  constructor(o: EntraTokenOptions) {
    this.#o = o;
    const tenant = o.tenantId.toLowerCase();
    this.#url = o.jwksUrl ?? `https://login.microsoftonline.com/${encodeURIComponent(tenant)}/discovery/v2.0/keys`;
    // the v1 and the v2 issuer of the tenant (an app's accessTokenAcceptedVersion says which it gets)
    this.#issuers = [`https://sts.windows.net/${tenant}/`, `https://login.microsoftonline.com/${tenant}/v2.0`];
    this.#clients = new Set(o.allowedClients.map((c) => c.toLowerCase()));
    this.#now = o.now ?? Date.now;
    this.#http = new HttpClient({ proxy: 'env', maxSockets: 1, ...(o.ca === undefined ? {} : { ca: o.ca }) });
  }

  close(): void {
    this.#http.close();
  }

  /** check: who the token was issued to, or why it is not taken (never thrown: every bad token is one answer). */
  async check(authorization: string | undefined): Promise<TokenVerdict> {
    const token = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)$/.exec(authorization ?? '')?.[1];
    if (token === undefined) return { ok: false, kind: 'refused', why: 'no bearer token' };
    const { jwtVerify } = await import('jose');
    let claims: JWTPayload;
    try {
      const max = this.#o.maxLifetimeSeconds;
      ({ payload: claims } = await jwtVerify(token, this.#key, {
        ...{ issuer: this.#issuers, audience: this.#o.audience, algorithms: ['RS256'], requiredClaims: ['exp', 'iat'] },
        ...{ maxTokenAge: max, clockTolerance: SKEW_S, currentDate: new Date(this.#now()) },
      }));
    } catch (err) {
      if (err instanceof KeysUnavailable) return { ok: false, kind: 'unavailable', why: err.message };
      if (err instanceof BridgeError) return { ok: false, kind: 'refused', why: err.message };
      return { ok: false, kind: 'refused', why: whyOf(err) };
    }
    const why = this.#who(claims);
    return typeof why === 'string' ? { ok: false, kind: 'refused', why } : why;
  }

  /** who: the claims that say who the caller is, checked once the token verifies. */
  #who(c: JWTPayload): { ok: true; client: string } | string {
    // one audience: a token for several can be replayed to each of them (Entra issues none)
    if (typeof c.aud !== 'string') return 'the token names more than one audience';
    if (typeof c.tid !== 'string' || c.tid.toLowerCase() !== this.#o.tenantId.toLowerCase()) return 'the token is from another tenant';
    const start = typeof c.nbf === 'number' ? c.nbf : c.iat!;
    if (c.exp! - start > this.#o.maxLifetimeSeconds)
      return `the token lives ${c.exp! - start} s, longer than maxLifetimeSeconds (${this.#o.maxLifetimeSeconds})`;
    const clients = [c.appid, c.azp].filter((x): x is string => typeof x === 'string');
    if (clients.length === 0) return 'the token names no client (appid or azp)';
    const other = clients.find((x) => !this.#clients.has(x.toLowerCase()));
    if (other !== undefined) return `the token was issued to ${other.slice(0, 64)}, not one of allowedClients`;
    const role = this.#o.role;
    if (role !== undefined && !(Array.isArray(c.roles) && c.roles.includes(role))) return `the token does not carry the role ${role}`;
    return { ok: true, client: clients[0]! };
  }

  /** key resolves the token's key: the tenant's keys, fetched again for a key not seen yet (at most once a minute). */
  readonly #key: JWTVerifyGetKey = async (header, jws) => {
    const kid = header.kid;
    if (typeof kid !== 'string') throw new BridgeError('UNAUTHORIZED', 'the token names no key (kid)');
    const now = this.#now();
    if (now - this.#triedAt >= REFETCH_MS && (now - this.#fetchedAt > KEYS_TTL_MS || !this.#kids.has(kid)))
      this.#fetching ??= this.#fetch().finally(() => (this.#fetching = null));
    // a read under way (this token's or another's) is waited for: tokens that come together share it
    if (this.#fetching !== null) await this.#fetching;
    // a key not among those last read, while the keys cannot be read: it may be a new one of the tenant's
    if (this.#keys === null || (this.#failure !== null && !this.#kids.has(kid)))
      throw new KeysUnavailable(`the tenant's signing keys could not be read (${this.#failure ?? 'not yet'}); asked again within a minute`);
    return this.#keys(header, jws);
  };

  async #fetch(): Promise<void> {
    this.#triedAt = this.#now();
    try {
      const r = await this.#http.request(this.#url, {
        method: 'GET',
        signal: AbortSignal.timeout(this.#o.timeoutMs ?? 5000),
        maxBodyBytes: 256 * 1024,
        onOverflow: 'destroy',
      });
      if (r.status !== 200) throw new Error(`the key set answered ${r.status}`);
      const body = JSON.parse(r.bytes.toString('utf8')) as { keys?: unknown };
      // the tenant's RSA keys that name themselves; anything else in the set is no key to trust
      const keys = (Array.isArray(body.keys) ? (body.keys as unknown[]) : []).filter(
        (k): k is Record<string, unknown> & { kid: string } =>
          typeof k === 'object' && k !== null && (k as { kty?: unknown }).kty === 'RSA' && typeof (k as { kid?: unknown }).kid === 'string',
      );
      const { createLocalJWKSet } = await import('jose');
      this.#keys = createLocalJWKSet({ keys });
      this.#kids = new Set(keys.map((k) => k.kid));
      this.#fetchedAt = this.#now();
      this.#failure = null;
    } catch (err) {
      // unreadable: tokens wait (503, Event Grid delivers again); the keys last read, if any, still verify theirs
      this.#failure = err instanceof SyntaxError ? 'the key set is not JSON' : messageOf(err);
    }
  }
}
