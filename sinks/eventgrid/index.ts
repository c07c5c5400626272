/**
 * eventgrid sink: CloudEvents to Azure Event Grid over its HTTP publish API, as
 * `application/cloudevents-batch+json` arrays:
 * - a namespace topic: POST {endpoint}/topics/{namespaceTopic}:publish?api-version=2024-06-01;
 * - a basic (custom) topic with the CloudEvents 1.0 input schema: POST {endpoint}/api/events?api-version=2018-01-01.
 *
 * Plain HTTP rather than @azure/eventgrid: that package publishes to basic topics only (namespace
 * topics are another package), brings its own pipeline and retries, which the dispatcher
 * would have to turn off, and would add Azure SDK weight to a bridge that needs one POST. This
 * way the sink shares the HTTP client (keep-alive, proxy), the outcome table and the Entra ID
 * token source of the other HTTP sinks.
 *
 * Auth: an access key (`aeg-sas-key` for a basic topic, `Authorization: SharedAccessKey` for a
 * namespace topic) or an Entra ID credential (role: EventGrid Data Sender; scope
 * https://eventgrid.azure.net/.default). Batches stay within Event Grid's limits: at most
 * 1 MiB per request, each event at most 1 MiB (a larger one is rejected with its size).
 *
 * Outcomes (Event Grid's error table): 200 delivered; 400 (the batch was refused as invalid) and
 * 413 (too large) are resent one event at a time, so only the offending event is rejected; 401
 * (a key or token refused, a role not yet applied) and 403 (quota, IP filter, private endpoint)
 * are retried; 404 and 410 (no such topic) rejected; 408, 429 and 5xx retried with Retry-After.
 */
import { z } from 'zod';
import { httpUrl, type Outcome, reject, retry, secret, sinkBase, type SinkModule, VERSION } from '../../src/api.ts';
import {
  allowInsecureHttp,
  BearerSource,
  classifyHttpStatus,
  classifyNetworkError,
  CredentialConfig,
  HttpClient,
  ProxySetting,
  refusePlainHttpCredentials,
} from '../../src/kit.ts';
import { authorized } from '../shared/entra.ts';

/** Event Grid's limits: 1 MB per publish request and per event. */
export const MAX_REQUEST_BYTES = 1024 * 1024;
export const NAMESPACE_API_VERSION = '2024-06-01';
export const BASIC_API_VERSION = '2018-01-01';
export const EVENTGRID_SCOPE = 'https://eventgrid.azure.net/.default';
const CONTENT_TYPE = 'application/cloudevents-batch+json; charset=utf-8';

export const configSchema = z
  .strictObject({
    type: z.literal('eventgrid'),
    ...sinkBase,
    endpoint: httpUrl.describe(
      "The topic's or namespace's endpoint: https://NAME.REGION-1.eventgrid.azure.net (a basic topic's may end in /api/events).",
    ),
    namespaceTopic: z
      .string()
      .regex(/^[A-Za-z0-9-]{3,50}$/, 'must be 3 to 50 letters, digits or hyphens')
      .optional()
      .describe("For a namespace topic: its name. Without it, the endpoint is a basic topic's (CloudEvents 1.0 input schema)."),
    accessKey: secret(z.string().min(1)).optional().describe('An access key of the topic or namespace.'),
    credential: CredentialConfig.optional().describe('Or an Entra ID credential (role EventGrid Data Sender).'),
    proxy: ProxySetting,
    /** Lets the key or token go over plain http to a host that is not loopback. */
    allowInsecureHttp,
  })
  .superRefine((c, ctx) => {
    refusePlainHttpCredentials(c, c.endpoint, 'endpoint', true, ctx);
    if ((c.accessKey === undefined) === (c.credential === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['accessKey'],
        message: 'set either accessKey or credential (an Entra ID identity with the EventGrid Data Sender role)',
      });
    }
  });
export type EventGridConfig = z.infer<typeof configSchema>;

/** publishUrl: where a batch is POSTed. */
export function publishUrl(c: Pick<EventGridConfig, 'endpoint' | 'namespaceTopic'>): string {
  const base = c.endpoint.replace(/\/+$/, '');
  if (c.namespaceTopic !== undefined)
    return `${base}/topics/${encodeURIComponent(c.namespaceTopic)}:publish?api-version=${NAMESPACE_API_VERSION}`;
  return `${base.endsWith('/api/events') ? base : `${base}/api/events`}?api-version=${BASIC_API_VERSION}`;
}

/** packBatches groups serialized events into arrays of at most `limit` bytes, in order. */
export function packBatches(sizes: readonly number[], limit = MAX_REQUEST_BYTES): number[][] {
  const batches: number[][] = [];
  let current: number[] = [];
  let bytes = 2; // [ and ]
  sizes.forEach((size, i) => {
    const add = size + (current.length > 0 ? 1 : 0);
    if (current.length > 0 && bytes + add > limit) {
      batches.push(current);
      current = [];
      bytes = 2;
    }
    current.push(i);
    bytes += size + (current.length > 1 ? 1 : 0);
  });
  if (current.length > 0) batches.push(current);
  return batches;
}

export const eventGridSink: SinkModule<EventGridConfig, typeof configSchema> = {
  type: 'eventgrid',
  configSchema,
  maxBatchSize: 100,
  create(config) {
    const client = new HttpClient({ proxy: config.proxy, maxSockets: 4 });
    const url = publishUrl(config);
    const keyHeader: Record<string, string> =
      config.accessKey === undefined
        ? {}
        : config.namespaceTopic !== undefined
          ? { authorization: `SharedAccessKey ${config.accessKey}` }
          : { 'aeg-sas-key': config.accessKey };
    const bearer = config.credential !== undefined ? new BearerSource(config.credential, EVENTGRID_SCOPE) : null;

    /** publish POSTs one batch; `split` when Event Grid refused it as invalid or too large. */
    async function publish(bodies: readonly string[], signal: AbortSignal): Promise<{ outcome: Outcome; split: boolean }> {
      const outcome = await post(bodies, signal);
      return { outcome, split: outcome.status === 'reject' && /^HTTP (400|413)\b/.test(outcome.reason) };
    }

    async function post(bodies: readonly string[], signal: AbortSignal): Promise<Outcome> {
      const body = `[${bodies.join(',')}]`;
      try {
        const answer = await authorized(bearer, signal, (authorization) =>
          client.request(url, {
            method: 'POST',
            signal,
            headers: { 'content-type': CONTENT_TYPE, 'user-agent': `se-bridge/${VERSION}`, ...keyHeader, ...authorization },
            body,
            maxBodyBytes: 8 * 1024,
            onOverflow: 'drain',
          }),
        );
        if ('outcome' in answer) return answer.outcome;
        const { res, detail } = answer;
        if (res.status === 401) return retry(`HTTP 401: the access key or token was refused${detail ? `: ${detail}` : ''}`);
        if (res.status === 403)
          return retry(`HTTP 403: publishing was refused (quota, IP filter or private endpoint)${detail ? `: ${detail}` : ''}`);
        if (res.status === 404 || res.status === 410)
          return reject(`HTTP ${res.status}: the topic does not exist${detail ? `: ${detail}` : ''}`);
        return classifyHttpStatus(res.status, res.headers['retry-after'], detail);
      } catch (err) {
        return classifyNetworkError(err);
      }
    }

    return {
      async send(events, { signal }) {
        const bodies = events.map((e) => JSON.stringify(e));
        const outcomes: Outcome[] = new Array<Outcome>(events.length);
        const sendable: number[] = [];
        bodies.forEach((b, i) => {
          const bytes = Buffer.byteLength(b);
          if (bytes + 2 > MAX_REQUEST_BYTES)
            outcomes[i] = reject(`the event is ${bytes} bytes; Event Grid accepts at most ${MAX_REQUEST_BYTES - 2} per event`);
          else sendable.push(i);
        });
        const batches = packBatches(sendable.map((i) => Buffer.byteLength(bodies[i]!)));
        for (const [b, batch] of batches.entries()) {
          const members = batch.map((k) => sendable[k]!);
          const { outcome, split } = await publish(
            members.map((i) => bodies[i]!),
            signal,
          );
          // a refused batch: find the event that spoils it, one request per event
          if (split && members.length > 1) {
            for (const i of members) outcomes[i] = (await publish([bodies[i]!], signal)).outcome;
            continue;
          }
          for (const i of members) outcomes[i] = outcome;
          if (outcome.status === 'retry') {
            // the rest waits for the next attempt, in order
            const waiting = retry(`not sent: an earlier batch of this attempt failed (${outcome.reason})`, outcome.retryAfterMs);
            for (const rest of batches.slice(b + 1)) for (const k of rest) outcomes[sendable[k]!] = waiting;
            break;
          }
        }
        return outcomes.map((o) => o ?? reject('internal: no outcome'));
      },
      async close() {
        client.close();
      },
    };
  },
};
