/**
 * Stand-ins for Azure's side of the fleet feed, written from their REST references (no Azure
 * service runs here):
 * - EventGridDelivery plays an Event Grid event subscription pushing to a webhook: the
 *   subscription validation handshake (a `Microsoft.EventGrid.SubscriptionValidationEvent`
 *   whose `validationCode` must come back as `validationResponse`), the CloudEvents
 *   abuse-protection handshake (OPTIONS with WebHook-Request-Origin), and deliveries
 *   (`aeg-event-type: Notification`) retried on 408, 429 and 5xx on Event Grid's schedule
 *   (10 s, 30 s, 1 min, …; scaled for tests), never on 400, 401, 403 or 413.
 *   https://learn.microsoft.com/azure/event-grid/webhook-event-delivery
 *   https://learn.microsoft.com/azure/event-grid/delivery-and-retry
 * - ArmStandIn plays Resource Manager over HTTPS, behind a bearer token for its own origin (401
 *   otherwise, an ARM error body): Resource Graph's `POST /providers/Microsoft.ResourceGraph/resources`
 *   (api-version 2022-10-01) for `maintenanceresources`, paged with `$skipToken`; and
 *   Microsoft.Maintenance's `POST {resource}/providers/Microsoft.Maintenance/scheduledevents/{id}/acknowledge`
 *   and its list form, `POST {resource}/providers/Microsoft.Maintenance/scheduledevents` with
 *   `{"value": [EventIds]}` (api-version 2025-11-01, the stable one; {resource} a VM or a scale set,
 *   as the route's one `{resourceType}/{resourceName}`): 200 `{"value": "Successfully Approved"}`
 *   for events it lists, 404 ResourceNotFound otherwise; or, when a test says so, a refusal
 *   Resource Manager gives (400, 401, 403, 409, 429 with Retry-After, 5xx) or no answer at all.
 *   https://learn.microsoft.com/rest/api/azureresourcegraph/resourcegraph/resources/resources
 * - scheduledEventOf and eventGridEvent (src/simulator/azure-events.ts, shared with `demo --fleet`):
 *   one scheduled event in the shape both carry, and its Event Grid notification.
 */
import { randomUUID } from 'node:crypto';
import { readJwt } from '../src/simulator/identity.ts';
import { HttpPeer } from './http-peer.ts';
import { SUBSCRIPTION } from '../src/simulator/azure-events.ts';

export { eventGridEvent, scheduledEventOf, SUBSCRIPTION } from '../src/simulator/azure-events.ts';

/** vmId: a VM's resource id in the test subscription. */
export const vmId = (name: string, group = 'rg-fleet') =>
  `/subscriptions/${SUBSCRIPTION}/resourceGroups/${group}/providers/Microsoft.Compute/virtualMachines/${name}`;

/** The retry schedule of Event Grid, in ms, before it is scaled. */
const SCHEDULE_MS = [10_000, 30_000, 60_000, 300_000, 600_000];

export class EventGridDelivery {
  readonly #endpoint: string;
  readonly #headers: Record<string, string>;
  readonly #scale: number;

  /** endpoint: the webhook as the subscription names it (with its `code`, when keyed); scale: of the retry schedule. */
  constructor(endpoint: string, headers: Record<string, string> = {}, scale = 0.001) {
    this.#endpoint = endpoint;
    this.#headers = headers;
    this.#scale = scale;
  }

  /** validate: the subscription validation handshake; the code echoed, or the status when refused. */
  async validate(topic = `/subscriptions/${SUBSCRIPTION}`): Promise<{ status: number; echoed: boolean }> {
    const code = randomUUID();
    const res = await this.#post(
      [
        {
          id: randomUUID(),
          topic,
          subject: '',
          eventType: 'Microsoft.EventGrid.SubscriptionValidationEvent',
          eventTime: new Date().toISOString(),
          data: { validationCode: code, validationUrl: 'https://rp-eastus.eventgrid.azure.net:553/validate?id=x' },
          dataVersion: '2',
          metadataVersion: '1',
        },
      ],
      'SubscriptionValidation',
    );
    const body = res.status === 200 ? ((await res.json()) as { validationResponse?: string }) : {};
    return { status: res.status, echoed: body.validationResponse === code };
  }

  /** abuseProtection: the CloudEvents handshake; the origin allowed, or null. */
  async abuseProtection(): Promise<{ status: number; allowed: string | null }> {
    const res = await fetch(this.#endpoint, {
      method: 'OPTIONS',
      headers: { 'webhook-request-origin': 'eventgrid.azure.net', ...this.#headers },
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, allowed: res.headers.get('webhook-allowed-origin') };
  }

  /** deliver: one delivery, retried on Event Grid's schedule while the answer is retryable (at most its five steps). */
  async deliver(events: readonly unknown[]): Promise<{ status: number; body: Record<string, any>; attempts: number }> {
    let attempts = 0;
    for (const pause of [...SCHEDULE_MS, -1]) {
      attempts++;
      const res = await this.#post(events, 'Notification');
      const body = (await res.json().catch(() => ({}))) as Record<string, any>;
      const retryable = res.status === 408 || res.status === 429 || res.status >= 500;
      if (!retryable || pause < 0) return { status: res.status, body, attempts };
      await new Promise((r) => setTimeout(r, pause * this.#scale));
    }
    throw new Error('unreachable');
  }

  #post(events: readonly unknown[], kind: string): Promise<Response> {
    return fetch(this.#endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'aeg-event-type': kind, ...this.#headers },
      body: JSON.stringify(events),
      signal: AbortSignal.timeout(10_000),
    });
  }
}

/**
 * What Resource Manager answers an acknowledgement instead of taking it: a status with its error
 * body (`{"error": {"code", "message"}}`) and Retry-After as it sends it (seconds; any text, to
 * play a malformed one), a body that is not Resource Manager's (a gateway's page), or nothing at all.
 */
export type ArmRefusal =
  { status: 400 | 401 | 403 | 404 | 409 | 429 | 500 | 502 | 503 | 504; retryAfter?: number | string; text?: string } | 'hang';

const ACK_API = '2025-11-01';
const ARM_CODES: Record<number, string> = {
  400: 'BadRequest',
  401: 'InvalidAuthenticationToken',
  403: 'AuthorizationFailed',
  404: 'ResourceNotFound',
  409: 'Conflict',
  429: 'TooManyRequests',
  500: 'InternalServerError',
  502: 'BadGateway',
  503: 'ServiceUnavailable',
  504: 'GatewayTimeout',
};

/** ArmStandIn: Resource Graph's query API and the scheduled events acknowledgement, over HTTPS; `pageSize` rows a page. */
export class ArmStandIn {
  readonly peer: HttpPeer;
  /** Resource Graph's rows (Azure's records of the scheduled events). */
  rows: { id: string; properties: Record<string, unknown> }[] = [];
  /** The audiences of the tokens of each query, and the subscriptions and page it named. */
  readonly asked: { aud: unknown; subscriptions: unknown; skipToken: unknown }[] = [];
  /** Every acknowledgement taken: the resource (lower case) and EventId (one entry per event of a list). */
  readonly acknowledged: { resourceId: string; eventId: string; at: number }[] = [];
  /** The next acknowledgements' answers, first first, instead of taking them. */
  readonly refusals: ArmRefusal[] = [];

  constructor(tls: { key: string; cert: string }, pageSize = 2) {
    this.peer = new HttpPeer(tls);
    this.peer.answer = (req) => {
      const json = (status: number, body: unknown) => ({
        status,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const claims = readJwt(/^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1] ?? '');
      if (claims === null || claims.aud !== this.peer.url)
        return json(401, { error: { code: 'AuthenticationFailed', message: 'the access token is missing or for another audience' } });
      const ack =
        /^(\/subscriptions\/[^?]+?)\/providers\/Microsoft\.Maintenance\/scheduledevents(?:\/([^/?]+)\/acknowledge)?\?api-version=([^&]+)$/i.exec(
          req.url,
        );
      if (req.method === 'POST' && ack !== null) {
        if (ack[3] !== ACK_API)
          return json(400, { error: { code: 'InvalidApiVersionParameter', message: `api-version ${ack[3]} is not supported` } });
        const refusal = this.refusals.shift();
        if (refusal === 'hang') return { hang: true };
        if (refusal !== undefined) {
          const error = { error: { code: ARM_CODES[refusal.status], message: `refused with ${refusal.status}` } };
          const answer = refusal.text === undefined ? json(refusal.status, error) : { status: refusal.status, body: refusal.text };
          return {
            ...answer,
            headers: {
              'content-type': refusal.text === undefined ? 'application/json' : 'text/html',
              ...(refusal.retryAfter === undefined ? {} : { 'retry-after': String(refusal.retryAfter) }),
            },
          };
        }
        const resourceId = decodeURIComponent(ack[1]!).toLowerCase();
        const ids = ack[2] !== undefined ? [decodeURIComponent(ack[2])] : ((JSON.parse(req.body) as { value?: string[] }).value ?? []);
        const listed = (id: string) =>
          this.rows.some((r) => r.id.toLowerCase() === `${resourceId}/providers/microsoft.maintenance/scheduledevents/${id.toLowerCase()}`);
        const missing = ids.find((id) => !listed(id));
        if (ids.length === 0 || missing !== undefined)
          return json(404, { error: { code: 'ResourceNotFound', message: `scheduled event ${missing ?? '(none)'} was not found` } });
        for (const eventId of ids) this.acknowledged.push({ resourceId, eventId, at: Date.now() });
        return json(200, { value: 'Successfully Approved' });
      }
      if (req.method !== 'POST' || !req.url.startsWith('/providers/Microsoft.ResourceGraph/resources?api-version=2022-10-01'))
        return json(404, { error: { code: 'NotFound', message: `no route ${req.method} ${req.url}` } });
      const q = JSON.parse(req.body) as { subscriptions?: unknown; query?: unknown; options?: { $skipToken?: unknown } };
      if (typeof q.query !== 'string' || !q.query.startsWith('maintenanceresources'))
        return json(400, { error: { code: 'BadRequest', message: 'the query is not of maintenanceresources' } });
      this.asked.push({ aud: claims.aud, subscriptions: q.subscriptions, skipToken: q.options?.$skipToken });
      // a query of one event (`where name =~ '<EventId>'`) lists its rows alone, as Resource Graph's filter would
      const one = /where name =~ '([0-9a-f-]{36})'/i.exec(q.query)?.[1]?.toLowerCase();
      const rows = one === undefined ? this.rows : this.rows.filter((r) => r.id.toLowerCase().endsWith(`/scheduledevents/${one}`));
      const from = Number(q.options?.$skipToken ?? 0);
      const data = rows.slice(from, from + pageSize);
      const more = from + pageSize < rows.length;
      return json(200, {
        totalRecords: rows.length,
        count: data.length,
        data,
        facets: [],
        resultTruncated: 'false',
        ...(more ? { $skipToken: String(from + pageSize) } : {}),
      });
    };
  }
}
