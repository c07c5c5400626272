/**
 * The settings every public HTTP server of the project shares (the bridge's approval server and
 * the relay): a per-client rate limit, connection caps, and the reverse proxies to trust. Each
 * server gives its own defaults; the keys, limits and words are the same.
 */
import { z } from 'zod';
import { cidrList } from './validators.ts';

export interface ServerDefaults {
  /** What the server is, in the descriptions: `the server`, `the relay`. */
  readonly what: string;
  readonly perSecond: number;
  readonly burst: number;
  readonly maxConnections: number;
  readonly maxConnectionsPerClient: number;
  /** The largest connection caps accepted. */
  readonly most: number;
}

export const serverSettings = (d: ServerDefaults) => ({
  rateLimit: z
    .strictObject({
      perSecond: z.number().min(0.1).max(10_000).default(d.perSecond).describe('Requests per second a client may make, sustained.'),
      burst: z.number().int().min(1).max(100_000).default(d.burst).describe('Requests a client may make at once before the rate applies.'),
    })
    .prefault({})
    .describe('Per-client rate limit: sustained requests per second, and the burst allowed (then 429).'),
  maxConnections: z
    .number()
    .int()
    .min(1)
    .max(d.most)
    .default(d.maxConnections)
    .describe(
      'Open connections at most; past it a client is answered 503 with Retry-After and closed (slow clients are cut off after 10 s of headers, 20 s per request, 30 s idle).',
    ),
  maxConnectionsPerClient: z
    .number()
    .int()
    .min(1)
    .max(d.most)
    .default(d.maxConnectionsPerClient)
    .describe(
      'Open connections from one client (an address; IPv6 per /64) at most; past it a 429 with Retry-After. Trusted proxies are exempt.',
    ),
  trustedProxies: cidrList
    .default([])
    .describe(
      `Reverse proxies in front of ${d.what} (addresses or CIDR ranges): behind them a client is the last untrusted hop of Forwarded or X-Forwarded-For, with a rate limit of its own.`,
    ),
});
