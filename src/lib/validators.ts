/** The validators every part of the configuration shares: URLs, HOST:PORT and the secret marker. */
import { z } from 'zod';
import { parseCidr } from './client-address.ts';

/** httpUrl: an absolute http(s) URL, the one rule every URL in the configuration follows. */
export const httpUrl = z.string().refine((v) => {
  try {
    const u = new URL(v);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}, 'must be an absolute https or http URL');

/**
 * secret marks a configuration value as a credential, once, where it is defined: it shows as
 * `writeOnly: true` in the configuration's JSON Schema, and every value so marked is scrubbed
 * from logs and stored failure reasons (config/schema.ts secretsOf).
 */
export function secret<T extends z.ZodType>(schema: T): T {
  return schema.meta({ writeOnly: true });
}

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** parseHostPort reads `HOST:PORT` (`[::1]:8787` for IPv6; port 0 picks a free one), or null. */
export function parseHostPort(text: string): HostPort | null {
  const m = /^(?:\[([0-9a-fA-F:]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(text);
  if (m === null || Number(m[3]) > 65535) return null;
  return { host: m[1] ?? m[2]!, port: Number(m[3]) };
}

/**
 * addressOf decodes a listen address the schema has already checked (hostPort), once, where the
 * configuration is parsed: the code that listens takes the result and never parses it again.
 */
export function addressOf(text: string): HostPort {
  const at = parseHostPort(text);
  if (at === null) throw new Error(`${text} is not HOST:PORT (the schema lets no such value through)`);
  return at;
}

/** hostPort: a listen address as written, checked by parseHostPort. */
export const hostPort = z.string().refine((v) => parseHostPort(v) !== null, 'must be HOST:PORT, e.g. 127.0.0.1:8787');

/** cidrList: addresses or CIDR ranges (`168.63.129.16`, `10.0.0.0/8`, `fd00::/8`). */
export const cidrList = z
  .array(z.string().refine((v) => parseCidr(v) !== null, 'must be an IPv4 or IPv6 address or CIDR range, e.g. 10.0.0.0/8'))
  .max(256);
