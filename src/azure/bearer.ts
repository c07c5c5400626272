/**
 * EntraTokens verifies an Entra ID bearer token, as Event Grid sends one to an Entra-protected
 * webhook: an RS256 JWT signed by one of the tenant's published keys (fetched from its discovery
 * keys, with a deadline, kept for an hour and fetched again when a token names a key not seen
 * yet, at most once a minute), for the configured audience (`aud`) and tenant (`tid`), within its
 * lifetime (five minutes of clock skew allowed).
 * https://learn.microsoft.com/entra/identity-platform/access-tokens#validate-tokens
 */
import { createPublicKey, verify, type JsonWebKey, type KeyObject } from 'node:crypto';
import { HttpClient } from '../lib/http-client.ts';

export interface EntraTokenOptions {
  readonly tenantId: string;
  readonly audience: string;
  /** Default: the tenant's discovery keys on Entra ID. */
  readonly jwksUrl?: string | undefined;
  readonly timeoutMs?: number;
  /** PEM CA(s) to trust for jwksUrl beside the system's. */
  readonly ca?: string | undefined;
  readonly now?: () => number;
}

const SKEW_S = 300;
const KEYS_TTL_MS = 3_600_000;
const REFETCH_MS = 60_000;

export class EntraTokens {
  readonly #o: EntraTokenOptions;
  readonly #url: string;
  #keys = new Map<string, KeyObject>();
  #fetchedAt = 0;
  #triedAt = 0;
  readonly #http: HttpClient;
  #fetching: Promise<void> | null = null;

  constructor(o: EntraTokenOptions) {
    this.#o = o;
    this.#url = o.jwksUrl ?? `https://login.microsoftonline.com/${encodeURIComponent(o.tenantId)}/discovery/v2.0/keys`;
    this.#http = new HttpClient({ proxy: 'env', maxSockets: 1, ...(o.ca === undefined ? {} : { ca: o.ca }) });
  }

  close(): void {
    this.#http.close();
  }

  /** check: null when the token is good, else why not (never thrown: every bad token is one answer, 401). */
  async check(authorization: string | undefined): Promise<string | null> {
    const m = /^Bearer ([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(authorization ?? '');
    if (m === null) return 'no bearer token';
    const [, h, p, s] = m as unknown as [string, string, string, string];
    let header: { alg?: unknown; kid?: unknown };
    let claims: Record<string, unknown>;
    try {
      header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as typeof header;
      claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Record<string, unknown>;
    } catch {
      return 'the token is not a JWT';
    }
    if (header.alg !== 'RS256' || typeof header.kid !== 'string') return 'the token is not signed with RS256 by a named key';
    const key = await this.#key(header.kid);
    if (key === null) return `the token's key ${header.kid} is not one of the tenant's`;
    if (!verify('RSA-SHA256', Buffer.from(`${h}.${p}`), key, Buffer.from(s, 'base64url'))) return 'the signature does not verify';
    const now = Math.floor((this.#o.now ?? Date.now)() / 1000);
    if (typeof claims.exp !== 'number' || claims.exp + SKEW_S < now) return 'the token has expired';
    if (typeof claims.nbf === 'number' && claims.nbf - SKEW_S > now) return 'the token is not valid yet';
    const aud = claims.aud;
    if (aud !== this.#o.audience && !(Array.isArray(aud) && aud.includes(this.#o.audience))) return 'the token is for another audience';
    if (typeof claims.tid !== 'string' || claims.tid.toLowerCase() !== this.#o.tenantId.toLowerCase())
      return 'the token is from another tenant';
    return null;
  }

  async #key(kid: string): Promise<KeyObject | null> {
    const now = Date.now();
    // asked again at most once a minute, whether the last fetch failed or the token names a key not seen
    if (now - this.#triedAt > REFETCH_MS && (now - this.#fetchedAt > KEYS_TTL_MS || !this.#keys.has(kid))) {
      this.#fetching ??= this.#fetch().finally(() => (this.#fetching = null));
      await this.#fetching;
    }
    return this.#keys.get(kid) ?? null;
  }

  async #fetch(): Promise<void> {
    this.#triedAt = Date.now();
    try {
      const r = await this.#http.request(this.#url, {
        method: 'GET',
        signal: AbortSignal.timeout(this.#o.timeoutMs ?? 5000),
        maxBodyBytes: 256 * 1024,
        onOverflow: 'destroy',
      });
      if (r.status !== 200) return;
      const body = JSON.parse(r.bytes.toString('utf8')) as { keys?: unknown };
      const keys = new Map<string, KeyObject>();
      for (const k of Array.isArray(body.keys) ? (body.keys as (JsonWebKey & { kid?: unknown })[]) : []) {
        if (typeof k.kid !== 'string' || k.kty !== 'RSA') continue;
        try {
          keys.set(k.kid, createPublicKey({ key: k, format: 'jwk' }));
        } catch {
          // a key this platform cannot read is no key of the tenant's to trust
        }
      }
      this.#keys = keys;
      this.#fetchedAt = Date.now();
    } catch {
      // unreachable: every token is refused until the keys can be read (Event Grid retries)
    }
  }
}
