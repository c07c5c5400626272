/**
 * Who may read the fleet as people do (`console`): keys of the relay's configuration, each with
 * the name of the person or team it stands for, recorded with what they do, and a role: `read`
 * sees, `approve` acts too. The calendar feed (GET /v1/fleet/calendar.ics) takes any of them,
 * and the read keys.
 */
import { z } from 'zod';
import { secret } from '../lib/validators.ts';

export const CONSOLE_ROLES = ['read', 'approve'] as const;

const ConsoleKey = z.strictObject({
  name: z
    .string()
    .min(1)
    .max(80)
    .regex(/^[\p{L}\p{N}][\p{L}\p{N} ._@'-]*$/u, "letters, digits, spaces and . _ @ ' - only, starting with a letter or digit")
    .describe('Who holds the key: the name recorded with each action taken with it (a person, or a team).'),
  key: secret(z.string().min(16, 'must be at least 16 characters')).describe('The secret itself (`openssl rand -base64 32`).'),
  role: z.enum(CONSOLE_ROLES).describe('read: sees the fleet; approve: also acts on it.'),
});

export const ConsoleConfig = z
  .strictObject({
    keys: z
      .array(ConsoleKey)
      .max(200)
      .default([])
      .superRefine((keys, ctx) => {
        keys.forEach((k, i) => {
          if (keys.findIndex((o) => o.key === k.key) !== i)
            ctx.addIssue({ code: 'custom', path: [i, 'key'], message: 'is the key of another entry: each key names one holder' });
          if (keys.findIndex((o) => o.name === k.name) !== i)
            ctx.addIssue({ code: 'custom', path: [i, 'name'], message: 'is the name of another entry: one entry per holder' });
        });
      })
      .describe('The keys of the console and of the calendar feed, each with its holder and role.'),
  })
  .describe("People's view of the fleet: the calendar feed (GET /v1/fleet/calendar.ics) and who may read it.");
export type ConsoleConfig = z.infer<typeof ConsoleConfig>;
