/**
 * The console (`console`): the fleet in a browser, on a listener of its own, and who may use it:
 * keys of the relay's configuration, each with the name of the person or team it stands for,
 * recorded with what they do, and a role (`read` sees, `approve` acts too), or a reverse proxy
 * that signed the person in and names them in a header. The calendar feed (GET
 * /v1/fleet/calendar.ics) takes any of the keys, and the read keys.
 */
import { z } from 'zod';
import { hostPort, secret } from '../lib/validators.ts';
import { keyBytes } from '../fleet/keys.ts';

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
    listen: hostPort
      .default('127.0.0.1:8090')
      .describe(
        'Where /console listens: a listener of its own, which approval clients cannot crowd out (behind the reverse proxy that terminates TLS).',
      ),
    sessionHours: z.number().int().min(1).max(168).default(12).describe('How long a sign-in lasts before the key is asked again.'),
    sessionKey: secret(keyBytes)
      .optional()
      .describe(
        "The key that signs the console's session cookies: base64 of 32 bytes or more, the same on every replica. Default: derived from fleetKey; without either, a key of the process's own (a restart, or another replica, asks people to sign in again).",
      ),
    proxy: z
      .strictObject({
        userHeader: z
          .string()
          .regex(/^[A-Za-z0-9-]{1,64}$/, 'must be an HTTP header name')
          .describe('The header the reverse proxy names the signed-in person in (X-Forwarded-User, X-Auth-Request-User…).'),
        role: z.enum(CONSOLE_ROLES).default('read').describe('What a person the proxy names may do.'),
      })
      .optional()
      .describe(
        'People signed in by the reverse proxy in front of the console: their name taken from userHeader, only on a request from one of trustedProxies (from anyone else the header is ignored).',
      ),
  })
  .describe("People's view of the fleet: the console, the calendar feed (GET /v1/fleet/calendar.ics), and who may use them.");
export type ConsoleConfig = z.infer<typeof ConsoleConfig>;
