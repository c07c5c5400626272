/** The configuration of the bridge's own HTTP endpoints: the approval server, and metrics and health. */
import { z } from 'zod';
import { addressOf, cidrList, hostPort } from '../lib/validators.ts';

/** The approval server's settings; `at` is `listen` decoded. */
export const ServerConfig = z
  .strictObject({
    listen: hostPort
      .default('127.0.0.1:8787')
      .describe('Approval API, Slack interactions and the approval page (started when approval.secret is set).'),
    rateLimit: z
      .strictObject({
        perSecond: z.number().min(0.1).max(10_000).default(10).describe('Requests per second a client may make, sustained.'),
        burst: z.number().int().min(1).max(100_000).default(30).describe('Requests a client may make at once before the rate applies.'),
      })
      .prefault({})
      .describe('Per-client rate limit: sustained requests per second, and the burst allowed (then 429).'),
    maxConnections: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(256)
      .describe(
        'Open connections at most; past it a client is answered 503 with Retry-After and closed (slow clients are cut off after 10 s of headers, 20 s per request, 30 s idle).',
      ),
    maxConnectionsPerClient: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(64)
      .describe(
        'Open connections from one client (an address; IPv6 per /64) at most; past it a 429 with Retry-After. Trusted proxies are exempt.',
      ),
    trustedProxies: cidrList
      .default([])
      .describe(
        'Reverse proxies in front of the server (addresses or CIDR ranges): behind them a client is the last untrusted hop of Forwarded or X-Forwarded-For, with a rate limit of its own.',
      ),
  })
  .transform((s) => ({ ...s, at: addressOf(s.listen) }));

/** The metrics and health endpoint's settings; `at` is `listen` decoded, or null when it is off. */
export const ObservabilityConfig = z
  .strictObject({
    listen: z
      .union([hostPort, z.literal('off')])
      .default('127.0.0.1:9464')
      .describe('/metrics, /livez, /readyz. "off" turns the endpoint off.'),
    readyFailureThreshold: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(3)
      .describe('/readyz answers 503 once this many IMDS reads failed in a row.'),
  })
  .transform((o) => ({ ...o, at: o.listen === 'off' ? null : addressOf(o.listen) }));
