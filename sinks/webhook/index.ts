/**
 * webhook sink: CloudEvents over HTTP POST, in the binding's binary mode (data as the body,
 * attributes as percent-encoded `ce-*` headers), structured mode (`application/cloudevents+json`)
 * or batch mode (`application/cloudevents-batch+json`). Optional Standard Webhooks signatures
 * (several secrets sign together for rotation), static headers, bearer or basic auth or an Entra
 * ID token (managed identity), a custom CA. Its parts: the configuration (config.ts), one pooled
 * keep-alive client per origin shared by every webhook sink that targets it (client-pool.ts),
 * the templates (templates.ts) and one send path (send.ts).
 *
 * With a `template` (a JSONata expression) the body is whatever the template makes of the
 * CloudEvent, sent as `contentType` with no `ce-*` headers; `urlTemplate` and `headerTemplates`
 * shape the URL (on the origin of `url`) and headers per event. A template that gives null skips
 * the event (delivered, counted as skipped); one that fails on an event rejects that event with
 * JSONata's words. Signing, auth, proxy, TLS and the delivery policy stay as they are.
 *
 * @see https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/bindings/http-protocol-binding.md
 */
import type { SinkModule } from '../../src/api.ts';
import { acquireClient, releaseClient } from './client-pool.ts';
import { WEBHOOK_CODES } from './codes.ts';
import { configSchema, type WebhookConfig } from './config.ts';
import { staticHeadersOf, WebhookSender } from './send.ts';
import { closeTemplates, renderRequest, templateProblems, templatesOf } from './templates.ts';

export { configSchema, type WebhookConfig } from './config.ts';

export const webhookSink: SinkModule<WebhookConfig, typeof configSchema> = {
  type: 'webhook',
  configSchema,
  codes: WEBHOOK_CODES,
  // binary and structured modes still POST one event per request; taking up to 10 at a time
  // lets the dispatcher record their outcomes in one store transaction
  maxBatchSize: 10,
  async create(config, context) {
    const templates = await templatesOf(config);
    const { key, client } = acquireClient(config);
    if (config.tls.insecureSkipVerify) {
      context.logger.warn(
        { code: 'TLS_VERIFICATION_OFF' },
        'TLS certificate verification is turned off for this sink (tls.insecureSkipVerify)',
      );
    }
    const sender = new WebhookSender(config, context, client, templates);
    return {
      maxBatchSize: config.mode === 'batch' ? config.batchSize : 10,
      send: (events, { signal }) => sender.send(events, signal),
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
