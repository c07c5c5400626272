/**
 * webhook sink: CloudEvents over HTTP POST, in the binding's binary mode (data as the body,
 * attributes as percent-encoded `ce-*` headers), structured mode (`application/cloudevents+json`)
 * or batch mode (`application/cloudevents-batch+json`). Optional Standard Webhooks signatures
 * (several secrets sign together for rotation), static headers, bearer or basic auth or an Entra
 * ID token (managed identity), a custom CA. One pooled keep-alive client per origin, shared by every webhook sink that targets it.
 *
 * With a `template` (a JSONata expression, shared/template.ts) the body is whatever the template
 * makes of the CloudEvent, sent as `contentType` with no `ce-*` headers; `urlTemplate` and
 * `headerTemplates` shape the URL (on the origin of `url`) and headers per event. A template
 * that gives null skips the event (delivered, counted as skipped); one that fails on an event
 * rejects that event with JSONata's words. Signing, auth, proxy, TLS and the delivery policy
 * stay as they are.
 *
 * @see https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/bindings/http-protocol-binding.md
 */
import { accessSync, constants, readFileSync } from 'node:fs';
import { z } from 'zod';
import {
  allowInsecureHttp,
  BearerSource,
  type BridgeEvent,
  classifyHttpStatus,
  classifyNetworkError,
  credentialOf,
  EntraAuth,
  HTTP,
  HttpClient,
  httpUrl,
  oneByOne,
  type Outcome,
  percentEncode,
  ProxySetting,
  refusePlainHttpCredentials,
  reject,
  secret,
  secretKey,
  signatureHeaders,
  sinkBase,
  type SinkModule,
  VERSION,
  whsec,
} from '../../src/api.ts';
import { closeTemplates, renderRequest, renderRequests, templateProblems, templatesOf, type Templates } from './request-template.ts';
import { TEMPLATE_TIMEOUT_MS } from './template.ts';
import { authorized } from '../shared/entra.ts';

const MAX_RESPONSE_BYTES = 8 * 1024;
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
        "How long rendering one event's templates may take (a worker thread, stopped at this deadline; the event is then dead-lettered).",
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

// ----- shared clients ------------------------------------------------------------------------

const clients = new Map<string, { client: HttpClient; users: number }>();

function acquireClient(config: WebhookConfig): { key: string; client: HttpClient } {
  const origin = new URL(config.url).origin;
  const key = JSON.stringify([origin, config.tls.caFile ?? null, config.tls.insecureSkipVerify, config.proxy]);
  const existing = clients.get(key);
  if (existing) {
    existing.users += 1;
    return { key, client: existing.client };
  }
  const client = new HttpClient({
    proxy: config.proxy,
    maxSockets: 8,
    ...(config.tls.caFile ? { ca: readFileSync(config.tls.caFile, 'utf8') } : {}),
    ...(config.tls.insecureSkipVerify ? { rejectUnauthorized: false } : {}),
  });
  clients.set(key, { client, users: 1 });
  return { key, client };
}

async function releaseClient(key: string): Promise<void> {
  const c = clients.get(key);
  if (c === undefined) return;
  c.users -= 1;
  if (c.users > 0) return;
  clients.delete(key);
  c.client.close();
}

/** staticHeadersOf: the headers every request of the sink carries (with `redact`, secrets as their first word and a mask). */
function staticHeadersOf(config: WebhookConfig, redact = false): Record<string, string> {
  const hide = (v: string) => (redact ? `${/^\S+ /.exec(v)?.[0] ?? ''}****** (${v.length} characters, not shown)` : v);
  const headers: Record<string, string> = { 'user-agent': `se-bridge/${VERSION}` };
  for (const [k, v] of Object.entries(config.headers)) headers[k.toLowerCase()] = hide(v);
  if (config.auth && 'bearer' in config.auth) headers.authorization = hide(`Bearer ${config.auth.bearer}`);
  if (config.auth && 'basic' in config.auth)
    headers.authorization = hide(`Basic ${Buffer.from(`${config.auth.basic.username}:${config.auth.basic.password}`).toString('base64')}`);
  if (config.auth && 'kind' in config.auth) headers.authorization = `Bearer <an Entra ID token for ${config.auth.scope}, at sending>`;
  return headers;
}

// ----- the sink ------------------------------------------------------------------------------

export const webhookSink: SinkModule<WebhookConfig> = {
  type: 'webhook',
  configSchema,
  // binary and structured modes still POST one event per request; taking up to 10 at a time
  // lets the dispatcher record their outcomes in one store transaction
  maxBatchSize: 10,
  async create(config, context) {
    const { logger } = context;
    const templates: Templates | null = await templatesOf(config);
    const skipped =
      templates === null
        ? null
        : context.metrics?.counter('sebridge_template_skipped_total', 'Events a webhook template skipped (it gave null), by sink.', [
            'sink',
          ]);
    const keys = (config.secret === undefined ? [] : Array.isArray(config.secret) ? config.secret : [config.secret]).map((s) =>
      secretKey(s)!,
    );
    const { key, client } = acquireClient(config);
    if (config.tls.insecureSkipVerify) {
      logger.warn({ code: 'TLS_VERIFICATION_OFF' }, 'TLS certificate verification is turned off for this sink (tls.insecureSkipVerify)');
    }
    const staticHeaders = staticHeadersOf(config);
    let disabled: string | null = null;
    const bearer = config.auth && 'kind' in config.auth ? new BearerSource(credentialOf(config.auth), config.auth.scope) : null;

    async function post(
      id: string,
      headers: Record<string, string>,
      body: string,
      signal: AbortSignal,
      url: string = config.url,
    ): Promise<Outcome> {
      // webhook-id is a header: kept ASCII (percent-encoded like every ce-* header) and signed as sent
      const all = { ...staticHeaders, ...headers, ...(keys.length > 0 ? signatureHeaders(keys, percentEncode(id), body) : {}) };
      try {
        const answer = await authorized(bearer, signal, (authorization) =>
          client.request(url, {
            method: 'POST',
            headers: { ...all, ...authorization },
            body,
            signal,
            maxBodyBytes: MAX_RESPONSE_BYTES,
            onOverflow: 'destroy',
          }),
        );
        if ('outcome' in answer) return answer.outcome;
        const res = answer.res;
        const outcome = classifyHttpStatus(res.status, res.headers['retry-after'], answer.detail);
        if (res.status === 410) {
          disabled = outcome.status === 'reject' ? outcome.reason : 'HTTP 410';
          logger.error(
            { code: 'SINK_DISABLED', status: 410 },
            'the endpoint answered 410 Gone: this sink is disabled until the bridge restarts; its events are dead-lettered',
          );
        } else if (res.status >= 300 && res.status < 400) {
          logger.error(
            { code: 'WEBHOOK_REDIRECT', status: res.status, location: res.headers.location },
            'the endpoint redirects; redirects are not followed, fix the URL',
          );
        }
        return outcome;
      } catch (err) {
        return classifyNetworkError(err);
      }
    }

    const approvalUrl = (e: BridgeEvent) => context.approval?.link(e) ?? null;
    const skip = (o: Outcome) => {
      if (o.status === 'delivered') skipped?.inc({ sink: config.name });
      return o;
    };
    /** sendRendered sends what the templates make of the events: one request each, or in batch mode one array. */
    async function sendRendered(t: Templates, events: readonly BridgeEvent[], signal: AbortSignal): Promise<Outcome[]> {
      // every event's request is rendered in one trip to the template worker
      const made = await renderRequests(t, config, events, approvalUrl);
      if (config.mode === 'batch') {
        // the array of what the template made of each event; one it skips or fails on is left out
        const bodies = made.flatMap((m) => ('body' in m && m.body !== null ? [m.body] : []));
        const sent =
          bodies.length === 0
            ? null
            : await post(
                `batch-${events[0]!.id}-${bodies.length}`,
                { 'content-type': config.contentType },
                `[${bodies.join(',')}]`,
                signal,
              );
        return made.map((m) => ('outcome' in m ? skip(m.outcome) : sent!));
      }
      return oneByOne(events, async (event, i) => {
        if (disabled !== null) return reject(`sink disabled: ${disabled}`);
        const m = made[i]!;
        if ('outcome' in m) return skip(m.outcome);
        // without a body template, the body and headers are the CloudEvents binding's
        const binding = m.body === null ? HTTP[config.mode === 'structured' ? 'structured' : 'binary'](event) : null;
        const headers = binding === null ? { 'content-type': config.contentType, ...m.headers } : { ...binding.headers, ...m.headers };
        return post(event.id, headers, binding === null ? m.body! : binding.body, signal, m.url);
      });
    }

    return {
      maxBatchSize: config.mode === 'batch' ? config.batchSize : 10,
      async send(events, { signal }) {
        if (disabled !== null) return events.map(() => reject(`sink disabled: ${disabled}`));
        if (templates !== null) return sendRendered(templates, events, signal);
        if (config.mode === 'batch') {
          const body = JSON.stringify(events);
          const id = events.length === 1 ? events[0]!.id : `batch-${events[0]!.id}-${events.length}`;
          const outcome = await post(id, { 'content-type': 'application/cloudevents-batch+json; charset=utf-8' }, body, signal);
          return events.map(() => outcome);
        }
        const mode = config.mode;
        return oneByOne(events, async (event) => {
          if (disabled !== null) return reject(`sink disabled: ${disabled}`);
          const m = HTTP[mode](event);
          return post(event.id, m.headers, m.body, signal);
        });
      },
      async close() {
        closeTemplates(templates);
        await releaseClient(key);
      },
    };
  },
  problems: templateProblems,
  async preview(config, approvalUrl) {
    const templates = await templatesOf(config);
    if (templates === null) return null;
    // exactly what would be sent: the static headers (secrets masked) and the signature's, then the templates'
    const fixed = {
      ...staticHeadersOf(config, true),
      ...(config.secret === undefined
        ? {}
        : { 'webhook-id': '<the CloudEvent id>', 'webhook-timestamp': '<at sending>', 'webhook-signature': 'v1,<at sending>' }),
    };
    return async (event) => {
      const r = await renderRequest(templates, config, event, approvalUrl);
      if ('outcome' in r) return r;
      if (r.body !== null)
        return { method: 'POST', url: r.url, headers: { ...fixed, ...r.headers }, body: r.body, contentType: config.contentType };
      return {
        method: 'POST',
        url: r.url,
        headers: { ...fixed, ...r.headers, '(body and ce-* headers)': `the CloudEvent, ${config.mode} mode` },
        body: null,
        contentType: config.contentType,
      };
    };
  },
};
