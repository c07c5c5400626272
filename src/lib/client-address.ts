/**
 * Who a client is, for connection caps and rate limits: its address (an IPv4-mapped IPv6
 * address as the IPv4 one), an IPv6 client counted per /64 (one host holds a whole /64), and,
 * behind trusted reverse proxies, the last untrusted hop of `Forwarded` (RFC 7239) or
 * `X-Forwarded-For`.
 */
import { BlockList, isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';

/** normalizeAddress: `::ffff:10.0.0.1` is `10.0.0.1`; an IPv6 address in lower case. */
export function normalizeAddress(address: string): string {
  const a = address.toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  return mapped !== null ? mapped[1]! : a;
}

/** clientKey: the key a client's connections and requests are counted under (IPv6 per /64). */
export function clientKey(address: string | undefined): string {
  if (address === undefined) return 'unknown';
  const a = normalizeAddress(address);
  if (isIP(a) !== 6) return a;
  return `${expand(a).slice(0, 4).join(':')}::/64`;
}

/** expand gives the eight 16-bit groups of an IPv6 address (an embedded IPv4 tail counts as two). */
function expand(a: string): string[] {
  let text = a.split('%')[0]!;
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4 !== null) {
    const [b1, b2, b3, b4] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((b1 << 8) | b2).toString(16)}:${((b3 << 8) | b4).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? (text.split('::') as [string, string]) : [text, null];
  const h = head === '' ? [] : head.split(':');
  const t = tail === null || tail === '' ? [] : tail.split(':');
  const fill = tail === null ? [] : Array<string>(8 - h.length - t.length).fill('0');
  return [...h, ...fill, ...t].map((g) => g.replace(/^0+(?=.)/, ''));
}

/** CIDR_PATTERN: an IPv4 or IPv6 address, with an optional prefix length. */
export function parseCidr(text: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | null {
  const [address, prefixText, ...rest] = text.trim().split('/');
  if (rest.length > 0 || address === undefined) return null;
  const a = normalizeAddress(address);
  const v = isIP(a);
  if (v === 0) return null;
  const max = v === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? max : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max) return null;
  return { address: a, prefix, family: v === 4 ? 'ipv4' : 'ipv6' };
}

/** Cidrs: a set of address ranges (`168.63.129.16`, `10.0.0.0/8`, `fd00::/8`). */
export class Cidrs {
  readonly #list = new BlockList();
  readonly size: number;

  constructor(ranges: readonly string[]) {
    for (const r of ranges) {
      const c = parseCidr(r);
      if (c === null) throw new TypeError(`not an address or CIDR range: ${r}`);
      this.#list.addSubnet(c.address, c.prefix, c.family);
    }
    this.size = ranges.length;
  }

  has(address: string | undefined): boolean {
    if (address === undefined) return false;
    const a = normalizeAddress(address);
    const v = isIP(a);
    return v !== 0 && this.#list.check(a, v === 4 ? 'ipv4' : 'ipv6');
  }
}

/** forwardedHops: the client addresses a request's proxies recorded, nearest last (`Forwarded` first, else `X-Forwarded-For`). */
function forwardedHops(req: IncomingMessage): string[] {
  const forwarded = req.headers.forwarded;
  if (typeof forwarded === 'string' && forwarded !== '') {
    const hops: string[] = [];
    for (const element of forwarded.split(',')) {
      const pair = element.split(';').find((p) => p.trim().toLowerCase().startsWith('for='));
      if (pair === undefined) continue;
      // for="[2001:db8::1]:4711", for=192.0.2.60, for="192.0.2.60:80"
      let v = pair.trim().slice(4).replace(/^"|"$/g, '');
      const bracket = /^\[([^\]]+)\]/.exec(v);
      if (bracket !== null) v = bracket[1]!;
      else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(v)) v = v.slice(0, v.lastIndexOf(':'));
      hops.push(v);
    }
    return hops;
  }
  const xff = req.headers['x-forwarded-for'];
  const text = Array.isArray(xff) ? xff.join(',') : (xff ?? '');
  return text
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '');
}

/**
 * clientAddress: who sent a request. From a trusted proxy, the nearest hop it recorded that is
 * not itself a trusted proxy (a client cannot forge what its own proxy appends); else the socket.
 */
export function clientAddress(req: IncomingMessage, trusted: Cidrs | null): string {
  const socket = req.socket.remoteAddress;
  if (trusted === null || trusted.size === 0 || !trusted.has(socket)) return normalizeAddress(socket ?? 'unknown');
  const hops = forwardedHops(req);
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!;
    if (isIP(normalizeAddress(hop)) === 0) return normalizeAddress(socket ?? 'unknown');
    if (!trusted.has(hop)) return normalizeAddress(hop);
  }
  return normalizeAddress(hops[0] ?? socket ?? 'unknown');
}
