/**
 * EntraTenant: a stand-in of an Entra ID tenant's signing keys, written from Microsoft's page on
 * validating tokens (no Entra ID runs here): the tenant's JSON Web Key Set served over HTTP on
 * 127.0.0.1 (`{"keys": [{kty, use, kid, n, e, x5t}]}`), which a test can take down (503), throttle
 * (429 with Retry-After, as Entra ID's endpoints do) or leave hanging (no answer at all), and the
 * access tokens the tenant issues, signed by hand with node:crypto (RS256, `kid` in the header; v1
 * claims `iss: https://sts.windows.net/<tid>/`, `appid`; v2 `iss:
 * https://login.microsoftonline.com/<tid>/v2.0`, `azp`), so that the verifier under test is never
 * its own oracle. `forged` makes the tokens an attacker would try: `alg: none`, HS256 keyed with
 * the public key's bytes (the classic confusion) or with a secret of its own; `token`'s `alg` signs
 * with the tenant's own key under another algorithm (RS384, RS512, PS256), which Entra ID never uses.
 * https://learn.microsoft.com/entra/identity-platform/access-tokens
 */
import { constants, createHmac, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { HttpPeer, type Answer } from './http-peer.ts';

export const TENANT = '72f988bf-86f1-41af-91ab-2d7cd011db47';
export const EVENT_GRID_CLIENT = '4962773b-9cdb-44cf-a8bf-237846a00ab7';

const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

export class EntraTenant {
  readonly peer: HttpPeer;
  readonly #keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  /** What the key set answers: its keys, 503 (down), 429 (throttled, with Retry-After) or nothing (hang). */
  mode: 'up' | 'down' | 'throttled' | 'hang' = 'up';
  /** The key ids it publishes. */
  kids = ['k1'];

  readonly tenantId: string;

  /** tls: the key set served over HTTPS with this certificate, as Entra ID's is. */
  constructor(tenantId = TENANT, tls?: { key: string; cert: string }) {
    this.tenantId = tenantId;
    // idle connections kept open two minutes, so only the verifier closes its own
    this.peer = new HttpPeer(tls, { keepAliveMs: 120_000 });
    this.peer.answer = (): Answer => {
      if (this.mode === 'hang') return { hang: true };
      if (this.mode === 'down') return { status: 503, body: '{"error":"temporarily_unavailable"}' };
      if (this.mode === 'throttled') return { status: 429, headers: { 'retry-after': '30' }, body: '{"error":"throttled"}' };
      const jwk = this.#keys.publicKey.export({ format: 'jwk' });
      const keys = this.kids.map((kid) => ({ kty: 'RSA', use: 'sig', kid, x5t: kid, n: jwk.n, e: jwk.e }));
      return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ keys }) };
    };
  }

  async listen(): Promise<string> {
    await this.peer.listen();
    return this.jwksUrl;
  }

  get jwksUrl(): string {
    return `${this.peer.url}/${this.tenantId}/discovery/v2.0/keys`;
  }

  /** How many times the key set was asked. */
  get fetches(): number {
    return this.peer.requests.length;
  }

  close(): Promise<void> {
    return this.peer.close();
  }

  /**
   * token: an access token of this tenant for `audience`, issued to Event Grid (v1: `appid`; v2:
   * `azp`), valid for an hour from `nowS`, with `claims` over it (undefined removes a claim).
   */
  token(
    audience: string,
    claims: Record<string, unknown> = {},
    o: { v?: 1 | 2; kid?: string | null; nowS?: number; alg?: keyof typeof SIGNERS } = {},
  ): string {
    const now = o.nowS ?? Math.floor(Date.now() / 1000);
    const v2 = o.v === 2;
    const base = {
      aud: audience,
      iss: v2 ? `https://login.microsoftonline.com/${this.tenantId}/v2.0` : `https://sts.windows.net/${this.tenantId}/`,
      tid: this.tenantId,
      iat: now,
      nbf: now,
      exp: now + 3600,
      ...(v2 ? { azp: EVENT_GRID_CLIENT, ver: '2.0' } : { appid: EVENT_GRID_CLIENT, ver: '1.0' }),
      oid: '0e1f2a3b-0000-4000-8000-00000000eg01',
      sub: '0e1f2a3b-0000-4000-8000-00000000eg01',
      idtyp: 'app',
    };
    const payload = Object.fromEntries(Object.entries({ ...base, ...claims }).filter(([, v]) => v !== undefined));
    const kid = o.kid === null ? {} : { kid: o.kid ?? this.kids[0] };
    const alg = o.alg ?? 'RS256';
    const input = `${part({ alg, typ: 'JWT', ...kid })}.${part(payload)}`;
    return `${input}.${SIGNERS[alg](input, this.#keys.privateKey)}`;
  }

  /**
   * forged: a token of this tenant's shape (its claims, `claims` over them, issued at `nowS`), not
   * signed by it: `alg: none`, HS256 keyed with the public key's bytes (PEM, as a verifier that
   * takes the key set's key for an HMAC secret would), or HS256 keyed with `secret`.
   */
  forged(
    audience: string,
    how: 'none' | 'hs256-public-key' | 'hs256-secret',
    o: { claims?: Record<string, unknown>; secret?: string; nowS?: number } = {},
  ): string {
    const payload = this.token(audience, o.claims, { ...(o.nowS === undefined ? {} : { nowS: o.nowS }) }).split('.')[1]!;
    if (how === 'none') return `${part({ alg: 'none', typ: 'JWT' })}.${payload}.`;
    const input = `${part({ alg: 'HS256', typ: 'JWT', kid: this.kids[0] })}.${payload}`;
    const key = how === 'hs256-secret' ? (o.secret ?? 'secret') : this.#keys.publicKey.export({ format: 'pem', type: 'spki' });
    return `${input}.${createHmac('sha256', key).update(input).digest('base64url')}`;
  }
}

/** SIGNERS: the RSA signatures of JWS (RFC 7518 section 3), over a token's signing input. */
const SIGNERS = {
  RS256: (input: string, key: KeyObject) => sign('RSA-SHA256', Buffer.from(input), key).toString('base64url'),
  RS384: (input: string, key: KeyObject) => sign('RSA-SHA384', Buffer.from(input), key).toString('base64url'),
  RS512: (input: string, key: KeyObject) => sign('RSA-SHA512', Buffer.from(input), key).toString('base64url'),
  PS256: (input: string, key: KeyObject) =>
    sign('sha256', Buffer.from(input), { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }).toString('base64url'),
};
