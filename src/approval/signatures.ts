/**
 * Request authentication for the approval server: Standard Webhooks signatures on the API,
 * Slack's v0 signatures on interactions, and the HMAC-signed single-use tokens of approval
 * links. Every comparison is constant-time; timestamps must be within 5 minutes.
 *
 * @see https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md
 * @see https://api.slack.com/authentication/verifying-requests-from-slack
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { sign } from '../lib/standard-webhooks.ts';

export const TOLERANCE_S = 5 * 60;

export type VerifyResult =
  { ok: true; id: string } | { ok: false; code: 'MISSING_SIGNATURE' | 'STALE_TIMESTAMP' | 'BAD_SIGNATURE'; message: string };

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** verifyStandardWebhook checks webhook-id, webhook-timestamp and webhook-signature against any of `keys`. */
export function verifyStandardWebhook(
  keys: readonly Buffer[],
  headers: Record<string, string | string[] | undefined>,
  body: Buffer,
  nowS: number = Math.floor(Date.now() / 1000),
): VerifyResult {
  const id = header(headers, 'webhook-id');
  const ts = header(headers, 'webhook-timestamp');
  const sig = header(headers, 'webhook-signature');
  if (!id || !ts || !sig)
    return { ok: false, code: 'MISSING_SIGNATURE', message: 'webhook-id, webhook-timestamp and webhook-signature are required' };
  if (!/^\d{1,12}$/.test(ts) || Math.abs(nowS - Number(ts)) > TOLERANCE_S) {
    return { ok: false, code: 'STALE_TIMESTAMP', message: 'webhook-timestamp is missing, malformed or more than 5 minutes away' };
  }
  const offered = sig.split(' ').filter((s) => s.startsWith('v1,'));
  for (const key of keys) {
    const expected = sign(key, id, ts, body);
    if (offered.some((o) => safeEqual(o, expected))) return { ok: true, id };
  }
  return { ok: false, code: 'BAD_SIGNATURE', message: 'no webhook-signature matches' };
}

/** verifySlack checks X-Slack-Signature (v0=HMAC-SHA256 over "v0:timestamp:body"). */
export function verifySlack(
  signingSecret: string,
  headers: Record<string, string | string[] | undefined>,
  body: Buffer,
  nowS: number = Math.floor(Date.now() / 1000),
): VerifyResult {
  const ts = header(headers, 'x-slack-request-timestamp');
  const sig = header(headers, 'x-slack-signature');
  if (!ts || !sig) return { ok: false, code: 'MISSING_SIGNATURE', message: 'X-Slack-Signature and X-Slack-Request-Timestamp are required' };
  if (!/^\d{1,12}$/.test(ts) || Math.abs(nowS - Number(ts)) > TOLERANCE_S) {
    return { ok: false, code: 'STALE_TIMESTAMP', message: 'X-Slack-Request-Timestamp is more than 5 minutes away' };
  }
  const mac = createHmac('sha256', signingSecret);
  mac.update(`v0:${ts}:`);
  mac.update(body);
  return safeEqual(sig, `v0=${mac.digest('hex')}`)
    ? { ok: true, id: `${ts}:${sig}` }
    : { ok: false, code: 'BAD_SIGNATURE', message: 'X-Slack-Signature does not match' };
}

/** slackSignature computes a v0 signature (for tests and tools). */
export function slackSignature(signingSecret: string, ts: string, body: string): string {
  return `v0=${createHmac('sha256', signingSecret).update(`v0:${ts}:${body}`).digest('hex')}`;
}

// ----- approval link tokens ------------------------------------------------------------------

export interface TokenClaims {
  /** EventId */
  e: string;
  /** VM name the link was issued by */
  v: string;
  /** expiry, epoch seconds (no later than NotBefore) */
  x: number;
  /** nonce: makes each token single-use on its own */
  n: string;
}

export type TokenResult =
  | { ok: true; claims: TokenClaims; nonce: string }
  | { ok: false; code: 'TOKEN_MALFORMED' | 'TOKEN_BAD_SIGNATURE' | 'TOKEN_EXPIRED'; message: string };

const TOKEN_CONTEXT = 'se-bridge approval link v1\n';

function tokenMac(key: Buffer, payload: string): string {
  return createHmac('sha256', key).update(TOKEN_CONTEXT).update(payload).digest('base64url');
}

/** issueToken makes a URL-safe token: base64url(claims JSON) "." base64url(HMAC). */
export function issueToken(key: Buffer, claims: Omit<TokenClaims, 'n'>): string {
  const payload = Buffer.from(JSON.stringify({ ...claims, n: randomBytes(9).toString('base64url') })).toString('base64url');
  return `${payload}.${tokenMac(key, payload)}`;
}

export function readToken(key: Buffer, token: string, nowS: number = Math.floor(Date.now() / 1000)): TokenResult {
  const m = /^([A-Za-z0-9_-]{10,2048})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m) return { ok: false, code: 'TOKEN_MALFORMED', message: 'the approval token is not well-formed' };
  if (!safeEqual(m[2]!, tokenMac(key, m[1]!)))
    return { ok: false, code: 'TOKEN_BAD_SIGNATURE', message: 'the approval token is not valid' };
  let claims: TokenClaims;
  try {
    claims = JSON.parse(Buffer.from(m[1]!, 'base64url').toString('utf8')) as TokenClaims;
  } catch {
    return { ok: false, code: 'TOKEN_MALFORMED', message: 'the approval token is not well-formed' };
  }
  if (typeof claims.e !== 'string' || typeof claims.v !== 'string' || typeof claims.x !== 'number' || typeof claims.n !== 'string') {
    return { ok: false, code: 'TOKEN_MALFORMED', message: 'the approval token is not well-formed' };
  }
  if (nowS >= claims.x) return { ok: false, code: 'TOKEN_EXPIRED', message: 'the approval link has expired' };
  return { ok: true, claims, nonce: claims.n };
}

/** peekClaims reads a token's claims without checking them: only to choose the key that will. */
export function peekClaims(token: string): Partial<TokenClaims> | null {
  const m = /^([A-Za-z0-9_-]{10,2048})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m) return null;
  try {
    const v = JSON.parse(Buffer.from(m[1]!, 'base64url').toString('utf8')) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}
