/**
 * EventGridPeer: a local stand-in for Azure Event Grid's publish API, on 127.0.0.1 port 0
 * (HTTP, or HTTPS with a given certificate), that checks what Event Grid checks:
 * - the route: a basic topic's `POST /api/events?api-version=2018-01-01`, a namespace topic's
 *   `POST /topics/{topic}:publish?api-version=2023-11-01|2024-06-01`; an unknown topic is 404;
 * - auth: a basic topic's `aeg-sas-key`, a namespace's `Authorization: SharedAccessKey`, or an
 *   Entra ID bearer token for https://eventgrid.azure.net, unexpired (401 otherwise);
 * - `content-type: application/cloudevents-batch+json`, a body of at most 1 MB (413), a
 *   non-empty JSON array of events of at most 1 MB each;
 * - every event against the CloudEvents 1.0 spec: specversion "1.0", non-empty id, source and
 *   type, an RFC 3339 time, lower-case alphanumeric attribute names of at most 20 characters
 *   (the official `cloudevents` SDK's validation, plus the required attributes it lets pass).
 * A refused request accepts none of its events. Faults answer the next requests with a status.
 */
import { CloudEvent } from 'cloudevents';
import { readJwt } from '../src/simulator/identity.ts';
import { HttpPeer, type Answer, type Recorded } from './http-peer.ts';

export const PEER_KEY = 'ZXZlbnRncmlkLXRlc3Qta2V5';
const MAX_BYTES = 1024 * 1024;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const NAMESPACE_VERSIONS = new Set(['2023-11-01', '2024-06-01']);

export interface Publish {
  topic: string;
  auth: 'key' | 'bearer' | 'none';
  status: number;
  events: number;
  error?: string;
}

export type Fault = { status: number; count: number; retryAfter?: string; message?: string } | { hang: true; count: number };

export class EventGridPeer {
  /** Events accepted, per topic (`basic` for the basic topic). */
  readonly accepted = new Map<string, Record<string, unknown>[]>();
  readonly publishes: Publish[] = [];
  readonly faults: Fault[] = [];
  /** Namespace topics that exist. */
  readonly topics = new Set(['maintenance']);
  /** Refuse events whose `subject` is this (to make one event of a batch invalid for Event Grid). */
  refuseSubject: string | null = null;
  readonly #http: HttpPeer;

  constructor(tls?: { key: string; cert: string }) {
    this.#http = new HttpPeer(tls);
    this.#http.answer = (req) => this.#answer(req);
  }

  listen(): Promise<string> {
    return this.#http.listen();
  }

  get url(): string {
    return this.#http.url;
  }

  /** events: every accepted event of a topic, in order. */
  events(topic = 'basic'): Record<string, unknown>[] {
    return this.accepted.get(topic) ?? [];
  }

  close(): Promise<void> {
    return this.#http.close();
  }

  #answer(req: Recorded): Answer {
    const size = Buffer.byteLength(req.body);
    const url = new URL(req.url, 'http://peer.invalid');
    const namespace = /^\/topics\/([^/:]+):publish$/.exec(url.pathname);
    const topic = namespace ? decodeURIComponent(namespace[1]!) : url.pathname === '/api/events' ? 'basic' : null;
    const authorization = String(req.headers.authorization ?? '');
    const auth =
      req.headers['aeg-sas-key'] !== undefined || authorization.startsWith('SharedAccessKey ')
        ? 'key'
        : authorization.startsWith('Bearer ')
          ? 'bearer'
          : 'none';
    const answer = (status: number, code: string, message: string, headers: Record<string, string> = {}, events = 0): Answer => {
      this.publishes.push({
        topic: topic ?? url.pathname,
        auth,
        status,
        events,
        ...(status >= 300 ? { error: `${code}: ${message}` } : {}),
      });
      return {
        status,
        headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
        body: status === 200 ? '{}' : JSON.stringify({ error: { code, message } }),
      };
    };
    const fault = this.faults[0];
    if (fault !== undefined) {
      fault.count -= 1;
      if (fault.count <= 0) this.faults.shift();
      if ('hang' in fault) return { hang: true };
      return answer(
        fault.status,
        'Fault',
        fault.message ?? `simulated ${fault.status}`,
        fault.retryAfter !== undefined ? { 'retry-after': fault.retryAfter } : {},
      );
    }
    if (req.method !== 'POST') return answer(405, 'MethodNotAllowed', 'only POST publishes');
    if (topic === null || (topic !== 'basic' && !this.topics.has(topic)))
      return answer(404, 'NotFound', `the topic ${url.pathname} does not exist`);
    const version = url.searchParams.get('api-version') ?? '';
    if (topic === 'basic' ? version !== '2018-01-01' : !NAMESPACE_VERSIONS.has(version))
      return answer(400, 'BadRequest', `api-version '${version}' is not supported`);
    const authError = this.#checkAuth(req, topic);
    if (authError !== null) return answer(401, 'Unauthorized', authError);
    if (!/^application\/cloudevents-batch\+json(\s*;\s*charset=utf-8)?$/i.test(String(req.headers['content-type'] ?? ''))) {
      return answer(
        400,
        'BadRequest',
        `content-type must be application/cloudevents-batch+json, not ${String(req.headers['content-type'])}`,
      );
    }
    if (size > MAX_BYTES) return answer(413, 'RequestEntityTooLarge', `the request is ${size} bytes; at most ${MAX_BYTES} are accepted`);
    let events: unknown;
    try {
      events = JSON.parse(req.body);
    } catch {
      return answer(400, 'BadRequest', 'the body is not JSON');
    }
    if (!Array.isArray(events) || events.length === 0)
      return answer(400, 'BadRequest', 'the body must be a non-empty array of CloudEvents');
    for (const [i, e] of events.entries()) {
      const problem = cloudEventProblem(e);
      if (problem !== null) return answer(400, 'BadRequest', `event ${i}: ${problem}`);
      if (this.refuseSubject !== null && (e as Record<string, unknown>).subject === this.refuseSubject)
        return answer(400, 'BadRequest', `event ${i}: refused by the topic`);
    }
    const list = this.accepted.get(topic) ?? [];
    list.push(...(events as Record<string, unknown>[]));
    this.accepted.set(topic, list);
    return answer(200, 'OK', '', {}, events.length);
  }

  #checkAuth(req: Recorded, topic: string): string | null {
    const authorization = String(req.headers.authorization ?? '');
    if (authorization.startsWith('Bearer ')) {
      const claims = readJwt(authorization.slice(7));
      if (claims === null) return 'the bearer token is not a JWT';
      if (claims.aud !== 'https://eventgrid.azure.net')
        return `the token's audience ${String(claims.aud)} is not https://eventgrid.azure.net`;
      if (Number(claims.exp) * 1000 <= Date.now()) return 'the token has expired';
      return null;
    }
    const key = topic === 'basic' ? req.headers['aeg-sas-key'] : /^SharedAccessKey (.*)$/.exec(authorization)?.[1];
    if (key === undefined)
      return topic === 'basic' ? 'no aeg-sas-key header or bearer token' : 'no Authorization: SharedAccessKey header or bearer token';
    return key === PEER_KEY ? null : 'the access key is not valid for this topic';
  }
}

/** cloudEventProblem: what makes `e` not a CloudEvent 1.0 that Event Grid accepts, or null. */
export function cloudEventProblem(e: unknown): string | null {
  if (e === null || typeof e !== 'object' || Array.isArray(e)) return 'not a JSON object';
  const o = e as Record<string, unknown>;
  if (o.specversion !== '1.0') return `specversion must be "1.0", not ${JSON.stringify(o.specversion)}`;
  for (const k of ['id', 'source', 'type'] as const) if (typeof o[k] !== 'string' || o[k] === '') return `${k} must be a non-empty string`;
  if (o.time !== undefined && (typeof o.time !== 'string' || !RFC3339.test(o.time))) return 'time must be an RFC 3339 timestamp';
  if (Buffer.byteLength(JSON.stringify(e)) > MAX_BYTES) return 'the event is larger than 1 MB';
  try {
    new CloudEvent(o, true);
  } catch (err) {
    return `not a valid CloudEvent: ${String((err as Error).message).split('\n')[0]}`;
  }
  return null;
}
