/** The configuration of the bridge's own HTTP endpoints: the approval server, and metrics and health. */
import { z } from 'zod';
import { serverSettings } from '../lib/server-settings.ts';
import { addressOf, hostPort } from '../lib/validators.ts';

/** The approval server's settings; `at` is `listen` decoded. */
export const ServerConfig = z
  .strictObject({
    listen: hostPort
      .default('127.0.0.1:8787')
      .describe('Approval API, Slack interactions and the approval page (started when approval.secret is set).'),
    ...serverSettings({ what: 'the server', perSecond: 10, burst: 30, maxConnections: 256, maxConnectionsPerClient: 64, most: 10_000 }),
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
