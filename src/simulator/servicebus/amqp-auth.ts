/**
 * How the Service Bus and Event Hubs stand-in judges a `$cbs` put-token: a SharedAccessSignature
 * must carry the HMAC of the connection string's key over its resource and expiry; in `jwt` mode
 * only an Entra ID token for the configured audience, unexpired, from an allowed principal, is
 * accepted, with the service's own refusal texts.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readJwt } from '../identity.ts';
import type { Message } from './amqp-messages.ts';

export const SAS_KEY_NAME = 'RootManageSharedAccessKey';
export const SAS_KEY = 'c2VjcmV0LWtleS1mb3ItdGVzdHM=';

/** One $cbs put-token, as the peer judged it. */
export interface PutToken {
  /** The `name` of the request: the entity's URL (sb://host/entity). */
  audience: string;
  /** `jwt` or `servicebus.windows.net:sastoken`. */
  type: string;
  status: number;
  /** Why it was refused. */
  refused?: string;
  /** A JWT's claims (aud, oid, appid, exp, jti…). */
  claims?: Record<string, unknown>;
  /** When the token expires (ms). */
  expiresAt?: number;
}

/**
 * What put-token accepts: SAS tokens signed with the connection string's key, or Entra ID tokens
 * for `audience`. `principals`: the only object ids accepted at all (a role on the namespace).
 * `rights`: per entity, who may Send to it and Listen on it (Data Sender / Data Receiver roles),
 * checked when a link attaches, as the service does.
 */
export type PeerAuth =
  | { kind: 'sas' }
  | {
      kind: 'jwt';
      audience: string;
      principals?: readonly string[];
      rights?: Readonly<Record<string, { send?: readonly string[]; listen?: readonly string[] }>>;
    };

/** judgeToken checks a put-token's token at `now`: what it proves, or why it is refused. */
export function judgeToken(
  auth: PeerAuth,
  type: string,
  audience: string,
  token: string,
  now: number,
): Omit<PutToken, 'audience' | 'type' | 'status'> {
  if (auth.kind === 'jwt') {
    if (type !== 'jwt') return { refused: `Unauthorized: expected an Entra ID token (jwt), got ${type || 'no type'}` };
    const claims = readJwt(token);
    if (claims === null) return { refused: 'Unauthorized: InvalidToken: not a JWT' };
    const exp = typeof claims.exp === 'number' ? claims.exp * 1000 : 0;
    const base = { claims, expiresAt: exp };
    if (claims.aud !== auth.audience)
      return { ...base, refused: `Unauthorized: InvalidAudience: the token is for '${String(claims.aud)}', not '${auth.audience}'` };
    if (exp <= now) return { ...base, refused: `Unauthorized: ExpiredToken: expired at ${new Date(exp).toISOString()}` };
    if (auth.principals !== undefined && !auth.principals.includes(String(claims.oid))) {
      return {
        ...base,
        refused: `Unauthorized access. 'Send' claim(s) are required to perform this operation (principal ${String(claims.oid)} has no role on the entity)`,
      };
    }
    return base;
  }
  if (type !== 'servicebus.windows.net:sastoken')
    return { refused: `Unauthorized: expected a shared access signature, got ${type || 'no type'}` };
  const fields = new Map(
    token
      .replace(/^SharedAccessSignature /, '')
      .split('&')
      .map((kv) => kv.split('=', 2) as [string, string]),
  );
  const sr = fields.get('sr') ?? '';
  const se = Number(fields.get('se'));
  const sig = Buffer.from(decodeURIComponent(fields.get('sig') ?? ''), 'base64');
  const expected = createHmac('sha256', SAS_KEY)
    .update(`${sr}\n${fields.get('se') ?? ''}`)
    .digest();
  if (fields.get('skn') !== SAS_KEY_NAME || sig.length !== expected.length || !timingSafeEqual(sig, expected))
    return { refused: 'Unauthorized: InvalidSignature: the token is not signed with the key of the connection string' };
  if (decodeURIComponent(sr) !== audience)
    return { refused: `Unauthorized: the token is for '${decodeURIComponent(sr)}', not '${audience}'` };
  if (!(se * 1000 > now)) return { refused: 'Unauthorized: ExpiredToken' };
  return { expiresAt: se * 1000 };
}

/** entityOf is the entity a put-token's audience names: sb://host/entity → entity. */
export function entityOf(audience: string): string {
  const m = /^[a-z]+:\/\/[^/]+\/(.*)$/i.exec(audience);
  return m?.[1] ?? audience;
}

/** What each connection's put-tokens proved, per entity: until when, and for which principal. */
export class TokenLedger {
  readonly #byConnection = new Map<object, Map<string, { expiresAt: number; principal: string }>>();

  /** putToken judges a `$cbs` put-token request and records what it proves; `statusCode` other than 202 refuses every token with it. */
  putToken(msg: Message, connection: object, o: { auth: PeerAuth; statusCode: number; now: number }): { token: PutToken; answer: Message } {
    const props = (msg.application_properties ?? {}) as Record<string, string>;
    const audience = props.name ?? '';
    const type = props.type ?? '';
    const body = typeof msg.body === 'string' ? msg.body : '';
    const judged = o.statusCode !== 202 ? { refused: 'Unauthorized: InvalidSignature' } : judgeToken(o.auth, type, audience, body, o.now);
    const status = judged.refused === undefined ? 202 : o.statusCode !== 202 ? o.statusCode : 401;
    if (status === 202 && judged.expiresAt !== undefined) {
      const map = this.#byConnection.get(connection) ?? new Map<string, { expiresAt: number; principal: string }>();
      map.set(entityOf(audience), { expiresAt: judged.expiresAt, principal: String(judged.claims?.oid ?? '') });
      this.#byConnection.set(connection, map);
    }
    const answer = {
      application_properties: { 'status-code': status, 'status-description': status === 202 ? 'Accepted' : judged.refused },
    };
    return { token: { audience, type, status, ...judged }, answer };
  }

  /** lacksRight: the principal whose token for `entity` lacks `right` (`auth: jwt` with rights), or null when the link may attach. */
  lacksRight(auth: PeerAuth, connection: object, entity: string, right: 'Send' | 'Listen'): string | null {
    const rights = auth.kind === 'jwt' ? auth.rights?.[entity] : undefined;
    if (rights === undefined) return null;
    const principal = this.#byConnection.get(connection)?.get(entity)?.principal ?? '';
    return (right === 'Send' ? rights.send : rights.listen)?.includes(principal) ? null : principal;
  }

  expiresAt(connection: object, entity: string): number | undefined {
    return this.#byConnection.get(connection)?.get(entity)?.expiresAt;
  }

  forget(connection: object): void {
    this.#byConnection.delete(connection);
  }
}
