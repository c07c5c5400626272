/**
 * The webhook sink's one send path. Every event is first rendered to its request (templates.ts):
 * with templates, what they make of it; without, the plain request (the sink's URL, the
 * CloudEvents binding's body and `ce-*` headers). Then each request is POSTed, or in batch mode
 * all of them in one array, signed (Standard Webhooks) and authenticated as configured. A 410
 * turns the sink off until the bridge restarts; a redirect is never followed.
 */
import { type BridgeEvent, oneByOne, type Outcome, reject, type SinkContext, VERSION } from '../../src/api.ts';
import {
  BearerSource,
  classifyHttpStatus,
  classifyNetworkError,
  credentialOf,
  HTTP,
  type HttpClient,
  percentEncode,
  secretKey,
  signatureHeaders,
} from '../../src/kit.ts';
import { authorized } from '../shared/entra.ts';
import type { WebhookConfig } from './config.ts';
import { renderRequests, type Rendered, type Templates } from './templates.ts';

const MAX_RESPONSE_BYTES = 8 * 1024;
const BATCH_TYPE = 'application/cloudevents-batch+json; charset=utf-8';

/** staticHeadersOf: the headers every request of the sink carries (with `redact`, secrets as their first word and a mask). */
export function staticHeadersOf(config: WebhookConfig, redact = false): Record<string, string> {
  const hide = (v: string) => (redact ? `${/^\S+ /.exec(v)?.[0] ?? ''}****** (${v.length} characters, not shown)` : v);
  const headers: Record<string, string> = { 'user-agent': `se-bridge/${VERSION}` };
  for (const [k, v] of Object.entries(config.headers)) headers[k.toLowerCase()] = hide(v);
  if (config.auth && 'bearer' in config.auth) headers.authorization = hide(`Bearer ${config.auth.bearer}`);
  if (config.auth && 'basic' in config.auth)
    headers.authorization = hide(`Basic ${Buffer.from(`${config.auth.basic.username}:${config.auth.basic.password}`).toString('base64')}`);
  if (config.auth && 'kind' in config.auth) headers.authorization = `Bearer <an Entra ID token for ${config.auth.scope}, at sending>`;
  return headers;
}

export class WebhookSender {
  readonly #c: WebhookConfig;
  readonly #ctx: SinkContext;
  readonly #client: HttpClient;
  readonly #templates: Templates | null;
  readonly #keys: Buffer[];
  readonly #headers: Record<string, string>;
  readonly #bearer: BearerSource | null;
  readonly #skipped;
  /** Why the sink is off (it answered 410), or null. */
  #disabled: string | null = null;

  constructor(config: WebhookConfig, context: SinkContext, client: HttpClient, templates: Templates | null) {
    this.#c = config;
    this.#ctx = context;
    this.#client = client;
    this.#templates = templates;
    this.#keys = (config.secret === undefined ? [] : Array.isArray(config.secret) ? config.secret : [config.secret]).flatMap((s) => {
      const key = secretKey(s);
      return key === null ? [] : [key];
    });
    this.#headers = staticHeadersOf(config);
    this.#bearer = config.auth && 'kind' in config.auth ? new BearerSource(credentialOf(config.auth), config.auth.scope) : null;
    this.#skipped =
      templates === null
        ? null
        : context.metrics?.counter('sebridge_template_skipped_total', 'Events a webhook template skipped (it gave null), by sink.', [
            'sink',
          ]);
  }

  /** send renders the events' requests, then sends them: one request each, or in batch mode one array. */
  async send(events: readonly BridgeEvent[], signal: AbortSignal): Promise<Outcome[]> {
    if (this.#disabled !== null) return events.map(() => reject(`sink disabled: ${this.#disabled}`));
    const made = await renderRequests(this.#templates, this.#c, events, (e) => this.#ctx.approval?.link(e) ?? null);
    if (this.#c.mode === 'batch') return this.#sendBatch(events, made, signal);
    const mode = this.#c.mode;
    return oneByOne(events, async (event, i) => {
      if (this.#disabled !== null) return reject(`sink disabled: ${this.#disabled}`);
      const m = made[i]!;
      if ('outcome' in m) return this.#skip(m.outcome);
      // a body of null is the CloudEvents binding's, with its ce-* headers
      const binding = m.body === null ? HTTP[mode](event) : null;
      const headers = binding === null ? { 'content-type': this.#c.contentType, ...m.headers } : { ...binding.headers, ...m.headers };
      return this.#post(event.id, headers, binding === null ? m.body! : binding.body, signal, m.url);
    });
  }

  /** sendBatch sends the array of every event's body; one a template skips or fails on is left out. */
  async #sendBatch(events: readonly BridgeEvent[], made: readonly Rendered[], signal: AbortSignal): Promise<Outcome[]> {
    const plain = this.#templates === null;
    const bodies = made.flatMap((m, i) => ('outcome' in m ? [] : [m.body ?? JSON.stringify(events[i])]));
    const id = plain && bodies.length === 1 ? events[0]!.id : `batch-${events[0]!.id}-${bodies.length}`;
    const sent =
      bodies.length === 0
        ? null
        : await this.#post(id, { 'content-type': plain ? BATCH_TYPE : this.#c.contentType }, `[${bodies.join(',')}]`, signal, this.#c.url);
    return made.map((m) => ('outcome' in m ? this.#skip(m.outcome) : sent!));
  }

  #skip(o: Outcome): Outcome {
    if (o.status === 'delivered') this.#skipped?.inc({ sink: this.#c.name });
    return o;
  }

  async #post(id: string, headers: Record<string, string>, body: string, signal: AbortSignal, url: string): Promise<Outcome> {
    // webhook-id is a header: kept ASCII (percent-encoded like every ce-* header) and signed as sent
    const signature = this.#keys.length > 0 ? signatureHeaders(this.#keys, percentEncode(id), body) : {};
    const all = { ...this.#headers, ...headers, ...signature };
    const { logger } = this.#ctx;
    try {
      const answer = await authorized(this.#bearer, signal, (authorization) =>
        this.#client.request(url, {
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
        this.#disabled = outcome.status === 'reject' ? outcome.reason : 'HTTP 410';
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
}
