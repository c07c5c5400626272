/**
 * Stand-ins for the services the recipes in examples/templates/ feed, written from each
 * service's public API documentation (none of them can be reached from the machines the tests
 * run on). One HTTP server on 127.0.0.1 answers each at the real path with the real success
 * status and body, and refuses, as the service does, what breaks the documented rules: required
 * fields, types, enumerations, lengths, unknown fields where the service refuses them, and for
 * Telegram the HTML it accepts. Every refusal is kept with its reason, so a test sees why.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Checker, discord, googleChat, isObj, mattermost, str } from './chat-service-rules.ts';
import { telegram } from './telegram-rules.ts';

export interface Received {
  readonly service: string;
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: unknown;
  /** Why the service refused it, or null when it accepted it. */
  readonly refused: string | null;
}

export class ServiceStandIns {
  readonly received: Received[] = [];
  /** Opsgenie alerts by alias, PagerDuty alerts by dedup_key: their state after what was accepted. */
  readonly opsgenie = new Map<string, { status: 'open' | 'closed'; count: number; notes: string[] }>();
  readonly pagerduty = new Map<string, 'triggered' | 'acknowledged' | 'resolved'>();
  static readonly GENIE_KEY = '0b7e5c1a-6f4d-4c2e-9a8b-3d2f1e0c9b8a';
  static readonly TELEGRAM_TOKEN = '123456789:AAHstandInTokenForTestsOnly0123456';
  readonly #server: Server;
  url = '';

  constructor() {
    this.#server = createServer((req, res) => void this.#handle(req, res));
  }

  async start(): Promise<this> {
    await new Promise<void>((r) => this.#server.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((r) => this.#server.close(() => r()));
  }

  refused(): Received[] {
    return this.received.filter((r) => r.refused !== null);
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? '/', 'http://stand-in');
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      body = undefined;
    }
    const p = url.pathname;
    const route: [string, (c: Checker) => [number, unknown]] | null = /^\/v1\/spaces\/[^/]+\/messages$/.test(p)
      ? ['google-chat', (c) => googleChat(c, body, url)]
      : /^\/api\/webhooks\/\d+\/[\w-]+$/.test(p)
        ? ['discord', (c) => discord(c, body)]
        : /^\/hooks\/[a-z0-9]{26}$/.test(p)
          ? ['mattermost', (c) => mattermost(c, body)]
          : p.startsWith('/v2/alerts')
            ? ['opsgenie', (c) => this.#opsgenie(c, req, url, body)]
            : p === '/v2/enqueue'
              ? ['pagerduty', (c) => this.#pagerduty(c, body)]
              : p === `/bot${ServiceStandIns.TELEGRAM_TOKEN}/sendMessage`
                ? ['telegram', (c) => telegram(c, body)]
                : null;
    if (route === null || req.method !== 'POST') {
      this.received.push({ service: 'unknown', method: req.method ?? '', path: p, headers: req.headers, body, refused: 'no such route' });
      res.writeHead(404).end();
      return;
    }
    const c = new Checker();
    if (body === undefined) c.problems.push('the body is not JSON');
    const [status, answer] = c.problems.length > 0 ? [400, { error: c.problems.join('; ') }] : route[1](c);
    this.received.push({
      service: route[0],
      method: req.method,
      path: `${p}${url.search}`,
      headers: req.headers,
      body,
      refused: status >= 300 ? c.problems.join('; ') || `HTTP ${status}` : null,
    });
    const text = answer === null ? '' : typeof answer === 'string' ? answer : JSON.stringify(answer);
    res.writeHead(status, { 'content-type': typeof answer === 'string' ? 'text/plain' : 'application/json' }).end(text);
  }

  /** Opsgenie Alert API v2: create (POST /v2/alerts), add note and close (POST /v2/alerts/{id}/notes|close). */
  #opsgenie(c: Checker, req: IncomingMessage, url: URL, body: unknown): [number, unknown] {
    const reply = (took: number) =>
      [202, { result: 'Request will be processed', took, requestId: `req-${this.received.length}` }] as [number, unknown];
    if (req.headers.authorization !== `GenieKey ${ServiceStandIns.GENIE_KEY}`)
      return [401, { message: 'Could not authenticate', took: 0, requestId: 'x' }];
    if (!isObj(body)) return [422, { message: 'Request body is not processable' }];
    const m = /^\/v2\/alerts(?:\/([^/]+)\/(notes|close))?$/.exec(url.pathname);
    if (m === null) return [404, { message: 'Not found' }];
    if (m[1] === undefined) {
      c.keys(
        body,
        [
          'message',
          'alias',
          'description',
          'responders',
          'visibleTo',
          'actions',
          'tags',
          'details',
          'entity',
          'source',
          'priority',
          'user',
          'note',
        ],
        'alert',
      );
      c.need(str(body.message, 130, 1), 'message: required, at most 130 characters');
      c.optString(body, 'alias', 512, 'alert');
      c.optString(body, 'description', 15000, 'alert');
      c.optString(body, 'entity', 512, 'alert');
      c.optString(body, 'source', 100, 'alert');
      c.optString(body, 'note', 25000, 'alert');
      if ('priority' in body) c.need(['P1', 'P2', 'P3', 'P4', 'P5'].includes(body.priority as string), 'priority: one of P1 to P5');
      if ('tags' in body)
        c.need(
          Array.isArray(body.tags) && body.tags.length <= 20 && body.tags.every((t) => str(t, 50, 1)),
          'tags: at most 20 strings of at most 50 characters',
        );
      if ('details' in body)
        c.need(
          isObj(body.details) &&
            Object.values(body.details).every((v) => typeof v === 'string') &&
            JSON.stringify(body.details).length <= 8000,
          'details: a map of strings, at most 8000 characters',
        );
      if (c.problems.length > 0) return [422, { message: c.problems.join('; ') }];
      const alias = (body.alias as string | undefined) ?? `auto-${this.received.length}`;
      const a = this.opsgenie.get(alias);
      // an open alert with the same alias is de-duplicated: its count goes up
      if (a !== undefined && a.status === 'open') a.count += 1;
      else this.opsgenie.set(alias, { status: 'open', count: 1, notes: [] });
      return reply(0.1);
    }
    c.need(url.searchParams.get('identifierType') === 'alias', 'identifierType: these recipes name alerts by alias');
    // an encoded slash in a path segment is refused, as Java servlet containers refuse it by
    // default (and proxies decode it into another path): an alias used in the path has none
    if (/%2f/i.test(m[1])) return [400, { message: 'the identifier in the path holds an encoded /' }];
    const alias = decodeURIComponent(m[1]);
    const alert = this.opsgenie.get(alias);
    if (m[2] === 'notes') {
      c.keys(body, ['user', 'source', 'note'], 'note');
      c.need(str(body.note, 25000, 1), 'note: required, at most 25000 characters');
    } else {
      c.keys(body, ['user', 'source', 'note'], 'close');
      c.optString(body, 'note', 25000, 'close');
    }
    c.optString(body, 'source', 100, m[2]!);
    // Opsgenie answers 202 and fails later for an alert that does not exist: the stand-in says so now
    c.need(alert !== undefined, `no alert has the alias "${alias}"`);
    if (c.problems.length > 0) return [422, { message: c.problems.join('; ') }];
    if (m[2] === 'notes') alert!.notes.push(body.note as string);
    else alert!.status = 'closed';
    return reply(0.05);
  }

  /** PagerDuty Events API v2: POST /v2/enqueue. */
  #pagerduty(c: Checker, body: unknown): [number, unknown] {
    const invalid = () => [400, { status: 'invalid event', message: 'Event object is invalid', errors: c.problems }] as [number, unknown];
    if (!isObj(body)) return [400, { status: 'invalid event', message: 'Event object is invalid', errors: ['not an object'] }];
    c.keys(body, ['routing_key', 'event_action', 'dedup_key', 'payload', 'images', 'links', 'client', 'client_url'], 'event');
    c.need(
      typeof body.routing_key === 'string' && /^[A-Za-z0-9]{32}$/.test(body.routing_key),
      'routing_key: a 32-character integration key',
    );
    const action = body.event_action as string;
    c.need(['trigger', 'acknowledge', 'resolve'].includes(action), "event_action: one of 'trigger', 'acknowledge', 'resolve'");
    if ('dedup_key' in body) c.need(str(body.dedup_key, 255, 1), 'dedup_key: at most 255 characters');
    if (action !== 'trigger') c.need('dedup_key' in body, 'dedup_key: required to acknowledge or resolve');
    if (action === 'trigger') {
      const p = body.payload;
      if (!isObj(p)) c.problems.push('payload: required to trigger');
      else {
        c.keys(p, ['summary', 'source', 'severity', 'timestamp', 'component', 'group', 'class', 'custom_details'], 'payload');
        c.need(str(p.summary, 1024, 1), 'payload.summary: required, at most 1024 characters');
        c.need(str(p.source, 255, 1), 'payload.source: required');
        c.need(
          ['critical', 'error', 'warning', 'info'].includes(p.severity as string),
          'payload.severity: one of critical, error, warning, info',
        );
        if ('timestamp' in p)
          c.need(typeof p.timestamp === 'string' && !Number.isNaN(Date.parse(p.timestamp)), 'payload.timestamp: ISO 8601');
        for (const k of ['component', 'group', 'class']) if (k in p) c.need(typeof p[k] === 'string', `payload.${k}: a string`);
        if ('custom_details' in p) c.need(isObj(p.custom_details), 'payload.custom_details: an object');
      }
    }
    if ('links' in body)
      c.need(
        Array.isArray(body.links) && body.links.every((l) => isObj(l) && typeof l.href === 'string' && /^https?:\/\//.test(l.href)),
        'links: objects with an http(s) href',
      );
    if (c.problems.length > 0) return invalid();
    const key = (body.dedup_key as string | undefined) ?? `auto-${this.received.length}`;
    const state = action === 'trigger' ? 'triggered' : action === 'acknowledge' ? 'acknowledged' : 'resolved';
    // acknowledging or resolving an alert that is not open changes nothing (PagerDuty drops it)
    if (action === 'trigger' || this.pagerduty.has(key)) this.pagerduty.set(key, state);
    return [202, { status: 'success', message: 'Event processed', dedup_key: key }];
  }
}
