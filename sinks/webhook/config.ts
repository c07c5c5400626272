/** The webhook sink's configuration (its keys, checked by `validate` and at start-up). */
import { accessSync, constants } from 'node:fs';
import { z } from 'zod';
import { httpUrl, secret, sinkBase } from '../../src/api.ts';
import { allowInsecureHttp, EntraAuth, ProxySetting, refusePlainHttpCredentials, whsec } from '../../src/kit.ts';
import { TEMPLATE_TIMEOUT_MS } from './templates.ts';

const RESERVED_HEADER = /^(ce-|webhook-)|^(content-type|content-length|host|transfer-encoding|connection)$/i;

const readableFile = z.string().refine((p) => {
  try {
    accessSync(p, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}, 'must name a readable file');

export const configSchema = z
  .strictObject({
    type: z.literal('webhook'),
    ...sinkBase,
    url: httpUrl.describe('Where to POST (http or https).'),
    mode: z
      .enum(['binary', 'structured', 'batch'])
      .default('binary')
      .describe('binary: data in the body, attributes in ce-* headers; structured: one JSON CloudEvent; batch: a JSON array.'),
    batchSize: z.number().int().min(1).max(1000).default(100).describe('Events per request in batch mode.'),
    secret: secret(z.union([whsec, z.array(whsec).min(1)]))
      .optional()
      .describe('Standard Webhooks secret(s); several sign together, for rotation.'),
    headers: z
      .record(
        z
          .string()
          .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'must be an HTTP header name')
          .refine((h) => !RESERVED_HEADER.test(h), 'is set by the sink itself'),
        secret(z.string()),
      )
      .default({})
      .describe('Extra static request headers.'),
    auth: z
      .union([
        z.strictObject({ bearer: secret(z.string().min(1)).describe('Authorization: Bearer with this token.') }),
        z.strictObject({
          basic: z.strictObject({
            username: z.string().min(1).describe("Basic authentication's user."),
            password: secret(z.string()).describe("Basic authentication's password."),
          }),
        }),
        /** An Entra ID token for `scope` (an Azure Function or Logic App with built-in auth, API Management, …). */
        EntraAuth,
      ])
      .optional()
      .describe('How the request authenticates: { bearer }, { basic: { username, password } }, or an Entra ID token ({ kind, scope }).'),
    tls: z
      .strictObject({
        caFile: readableFile.optional().describe("PEM file of the CA(s) to trust for this endpoint, in addition to the system's."),
        insecureSkipVerify: z.boolean().default(false).describe('Turns certificate verification off. Logged as a warning at every start.'),
      })
      .prefault({}),
    proxy: ProxySetting,
    /** Lets auth go over plain http to a host that is not loopback. */
    allowInsecureHttp,
    template: z.string().min(1).optional().describe('A JSONata expression that makes the body from the CloudEvent; null skips the event.'),
    urlTemplate: z
      .string()
      .min(1)
      .optional()
      .describe('A JSONata expression that makes the URL (on the origin of `url`) from the CloudEvent.'),
    headerTemplates: z
      .record(
        z
          .string()
          .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'must be an HTTP header name')
          .refine((h) => !RESERVED_HEADER.test(h), 'is set by the sink itself'),
        z.string().min(1),
      )
      .optional()
      .describe('Per header, a JSONata expression that makes its value from the CloudEvent (null: no header).'),
    templateTimeoutMs: z
      .number()
      .int()
      .min(10)
      .max(10_000)
      .default(TEMPLATE_TIMEOUT_MS)
      .describe(
        "The CPU time rendering one event's templates may take (in a worker thread, stopped past it and the event dead-lettered; not given that time within 50 times as long (5 s at least), on a busy machine, the event is tried again).",
      ),
    /** The body's media type with a template. */
    contentType: z
      .string()
      .regex(/^[\w.+-]+\/[\w.+-]+(\s*;\s*[\w.+-]+=[^;\s]+)*$/, 'must be a media type, e.g. application/json')
      .default('application/json')
      .describe('The Content-Type of a templated body.'),
  })
  .superRefine((c, ctx) => {
    refusePlainHttpCredentials(c, c.url, 'url', c.auth !== undefined, ctx);
    if (c.mode === 'batch') {
      // one request carries many events: there is no one event to make its URL or headers from
      if (c.urlTemplate !== undefined)
        ctx.addIssue({ code: 'custom', path: ['urlTemplate'], message: 'is made per event, so it does not go with mode: batch' });
      if (c.headerTemplates !== undefined)
        ctx.addIssue({ code: 'custom', path: ['headerTemplates'], message: 'are made per event, so they do not go with mode: batch' });
    }
  });
export type WebhookConfig = z.infer<typeof configSchema>;
