/**
 * The chat digest (`digest`): what is coming in the fleet in the next hours, group by group,
 * posted by the relay to its own Slack or Teams sinks at the start of every period and, where the
 * chat can (a Slack app's bot token), updated in place while the fleet changes within the period.
 */
import { z } from 'zod';
import { httpUrl } from '../lib/validators.ts';

export const DigestConfig = z.strictObject({
  sinks: z
    .array(z.string().min(1))
    .min(1)
    .max(10)
    .describe("The relay's own sinks (`sinks`, by name) the digest goes to: each a slack or a teams sink."),
  hours: z.number().int().min(1).max(168).default(8).describe('How far ahead it looks: the maintenances that begin within these hours.'),
  everyMinutes: z
    .number()
    .int()
    .min(15)
    .max(1440)
    .default(240)
    .describe(
      'A new message at the start of every period of this many minutes, counted from midnight UTC (240: at 00:00, 04:00, 08:00 … UTC).',
    ),
  checkSeconds: z
    .number()
    .int()
    .min(10)
    .max(3600)
    .default(60)
    .describe("How often the relay looks at the fleet for a change to update the period's message in place (Slack bot token only)."),
  consoleUrl: httpUrl
    .optional()
    .describe('The console\'s address as people reach it (behind the reverse proxy): the digest\'s "Open the timeline" button.'),
});
export type DigestConfig = z.infer<typeof DigestConfig>;
