/**
 * Who is using the console: a person signed in with a console key (a session cookie, signed
 * with the session key, HttpOnly, SameSite=Strict, with an expiry), or named by the reverse proxy
 * in front of it (`console.proxy.userHeader`, believed only on a request from trustedProxies).
 * A session names the key it was opened with by a digest, so a key taken out of the
 * configuration ends its sessions at once. Every POST must come from the console's own origin.
 */
import { createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { z } from 'zod';
import type { Cidrs } from '../lib/client-address.ts';
import type { ConsoleConfig } from './console-config.ts';

export const COOKIE = 'se_console';

export interface Person {
  readonly name: string;
  readonly role: 'read' | 'approve';
  /** How they signed in: a console key, or the reverse proxy. */
  readonly by: 'key' | 'proxy';
}

const Claims = z.strictObject({ n: z.string().min(1).max(80), k: z.string().length(16), e: z.number().int() });

const keyDigest = (key: string): string => createHash('sha256').update(key).digest('hex').slice(0, 16);
const b64 = (b: Buffer | string): string => Buffer.from(b).toString('base64url');

/** sessionKeyOf: the configured session key, else one derived from the fleet key, else one of this process's own. */
export function sessionKeyOf(sessionKey: string | undefined, fleetKey: string | undefined): Buffer {
  if (sessionKey !== undefined) return Buffer.from(sessionKey.trim(), 'base64');
  if (fleetKey === undefined) return randomBytes(32);
  return Buffer.from(hkdfSync('sha256', Buffer.from(fleetKey.trim(), 'base64'), Buffer.alloc(0), 'se-bridge console sessions', 32));
}

/** A printable name a proxy may send: what a console key's name may be, at most 80 characters. */
const PROXY_NAME = /^[\p{L}\p{N}][\p{L}\p{N} ._@'-]{0,79}$/u;

export class Sessions {
  readonly #config: ConsoleConfig;
  readonly #key: Buffer;
  readonly #proxies: Cidrs;
  readonly #now: () => number;

  constructor(config: ConsoleConfig, key: Buffer, proxies: Cidrs, now: () => number = Date.now) {
    [this.#config, this.#key, this.#proxies, this.#now] = [config, key, proxies, now];
  }

  /** signIn: the cookie of a session for the console key `given`, or null when it is none of them. */
  signIn(given: string): { person: Person; cookie: string } | null {
    const g = createHash('sha256').update(given).digest();
    const entry = this.#config.keys.find((k) => timingSafeEqual(g, createHash('sha256').update(k.key).digest()));
    if (entry === undefined) return null;
    const payload = b64(JSON.stringify({ n: entry.name, k: keyDigest(entry.key), e: this.#now() + this.#config.sessionHours * 3_600_000 }));
    return { person: { name: entry.name, role: entry.role, by: 'key' }, cookie: `${payload}.${this.#mac(payload)}` };
  }

  /** cookieHeader: Set-Cookie for `value` (empty: signed out), Secure when the request came over TLS. */
  cookieHeader(value: string, secure: boolean): string {
    const age = value === '' ? 0 : this.#config.sessionHours * 3600;
    return `${COOKIE}=${value}; Path=/console; Max-Age=${age}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
  }

  /** who: the person making `req`, or null: the proxy's header from a trusted proxy, else a valid, unexpired session of a key still configured. */
  who(req: IncomingMessage): Person | null {
    const proxy = this.#config.proxy;
    const peer = req.socket.remoteAddress ?? '';
    if (proxy !== undefined && isIP(peer) !== 0 && this.#proxies.has(peer)) {
      const name = req.headers[proxy.userHeader.toLowerCase()];
      if (typeof name === 'string' && PROXY_NAME.test(name.trim())) return { name: name.trim(), role: proxy.role, by: 'proxy' };
    }
    const cookie = cookiesOf(req.headers.cookie)[COOKIE];
    if (cookie === undefined) return null;
    const [payload, mac] = cookie.split('.');
    if (payload === undefined || mac === undefined || !this.#macOk(payload, mac)) return null;
    let claims: z.infer<typeof Claims>;
    try {
      claims = Claims.parse(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
    } catch {
      return null;
    }
    if (claims.e <= this.#now()) return null;
    const entry = this.#config.keys.find((k) => k.name === claims.n && keyDigest(k.key) === claims.k);
    return entry === undefined ? null : { name: entry.name, role: entry.role, by: 'key' };
  }

  #mac(payload: string): string {
    return b64(createHmac('sha256', this.#key).update(payload).digest());
  }

  #macOk(payload: string, mac: string): boolean {
    const [a, b] = [Buffer.from(this.#mac(payload)), Buffer.from(mac)];
    return a.length === b.length && timingSafeEqual(a, b);
  }
}

/** cookiesOf: a Cookie header's pairs. */
export function cookiesOf(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0) out[part.slice(0, at).trim()] = part.slice(at + 1).trim();
  }
  return out;
}

/** overTls: the request came over TLS: to this listener, or to a trusted proxy that says so (X-Forwarded-Proto). */
export function overTls(req: IncomingMessage, proxies: Cidrs): boolean {
  if ((req.socket as { encrypted?: boolean }).encrypted === true) return true;
  const peer = req.socket.remoteAddress ?? '';
  return (
    isIP(peer) !== 0 &&
    proxies.has(peer) &&
    String(req.headers['x-forwarded-proto'] ?? '')
      .split(',')[0]!
      .trim() === 'https'
  );
}

/**
 * sameOrigin: a POST the console's own page sent. Browsers send Origin with every POST; one from
 * another site, or none, is refused (with SameSite=Strict, two walls against cross-site forgery).
 */
export function sameOrigin(req: IncomingMessage, secure: boolean): boolean {
  const [origin, host] = [req.headers.origin, req.headers.host];
  if (typeof origin !== 'string' || typeof host !== 'string') return false;
  try {
    const o = new URL(origin);
    return o.host === host && o.protocol === (secure ? 'https:' : 'http:');
  } catch {
    return false;
  }
}
