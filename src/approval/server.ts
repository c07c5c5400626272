/**
 * ApprovalServer: the HTTP face of the approval service, on node:http (no framework: four
 * routes, strict limits, nothing to keep up to date). Routes:
 *   POST /v1/approvals            Standard Webhooks signed JSON {eventId, approver, reason}
 *   GET  /v1/approve?token=…      the approval page
 *   POST /v1/approve              the page's form (field `token`)
 *   POST /v1/slack/interactions   Slack block_actions, v0 signed
 * Limits: 64 KiB bodies (413), a per-client rate limit (429), a connection cap, header, request
 * and idle timeouts after which a slow client's socket is destroyed (lib/http-server.ts), JSON
 * errors {"error": {"code", "message"}} everywhere but the page.
 */
import { BridgeError, type Code } from '../lib/errors.ts';
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createGuardedServer, DEFAULT_SERVER_LIMITS, listen } from '../lib/http-server.ts';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { request as undiciRequest } from 'undici';
import { toChatMessage } from '../present/chat-model.ts';
import { escape as escapeSlack } from '../present/slack-blocks.ts';
import { toCloudEvent } from '../pipeline/cloudevent.ts';
import type { VmIdentity } from '../imds/identity.ts';
import type { EventsDocument } from '../imds/wire.ts';
import type { Store } from '../store/store.ts';
import { approvalPage, resultPage } from './page.ts';
import { ApprovalError, type ApprovalService } from './service.ts';
import { readToken, TOLERANCE_S, verifySlack, verifyStandardWebhook, type TokenClaims } from './signatures.ts';

export const MAX_BODY = 64 * 1024;
const REPLAY_TTL_MS = 2 * TOLERANCE_S * 1000;

export interface ApprovalServerOptions {
  service: ApprovalService;
  store: Store;
  /** Keys that verify POST /v1/approvals (the approval secret). */
  keys: readonly Buffer[];
  /** Key of approval link tokens. */
  tokenKey: Buffer;
  slackSigningSecret?: string;
  vm: () => VmIdentity;
  document: () => EventsDocument | null;
  logger: Logger;
  /** Requests per second per client, and the burst allowed. */
  rate?: { perSecond: number; burst: number };
  /** Open connections at most (default 256). */
  maxConnections?: number;
}

class HttpError extends BridgeError {
  readonly status: number;
  constructor(status: number, code: Code, message: string) {
    super(code, message);
    this.status = status;
  }
}

const ROUTES: Record<string, string[]> = {
  '/v1/approvals': ['POST'],
  '/v1/approve': ['GET', 'POST'],
  '/v1/slack/interactions': ['POST'],
};

export class ApprovalServer {
  readonly #o: ApprovalServerOptions;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  readonly #pending = new Set<Promise<unknown>>();

  constructor(options: ApprovalServerOptions) {
    this.#o = options;
    this.#server = createGuardedServer(
      (req, res) => {
        this.#handle(req, res).catch((err: unknown) => {
          this.#o.logger.error({ code: 'APPROVAL_SERVER_ERROR', err: String((err as Error).message ?? err) }, 'approval server failed a request');
          if (!res.headersSent) json(res, 500, { error: { code: 'INTERNAL', message: 'internal error' } });
          else res.destroy();
        });
      },
      { ...DEFAULT_SERVER_LIMITS, maxConnections: options.maxConnections ?? DEFAULT_SERVER_LIMITS.maxConnections },
    );
    this.#server.on('connection', (s: Socket) => {
      this.#sockets.add(s);
      s.on('close', () => this.#sockets.delete(s));
    });
  }

  listen(host: string, port: number): Promise<string> {
    return listen(this.#server, host, port);
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.#pending]);
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  // ----- plumbing ----------------------------------------------------------------------------

  #allow(client: string): number {
    const { perSecond, burst } = this.#o.rate ?? { perSecond: 10, burst: 30 };
    const now = Date.now();
    const b = this.#buckets.get(client) ?? { tokens: burst, at: now };
    b.tokens = Math.min(burst, b.tokens + ((now - b.at) / 1000) * perSecond);
    b.at = now;
    this.#buckets.set(client, b);
    if (this.#buckets.size > 10_000) this.#buckets.clear();
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - b.tokens) / perSecond) * 1000);
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.setHeader('cache-control', 'no-store');
    res.setHeader('x-content-type-options', 'nosniff');
    const url = new URL(req.url ?? '/', 'http://approval.invalid');
    const methods = ROUTES[url.pathname];
    if (methods === undefined || (req.url ?? '').includes('..')) {
      req.resume();
      return json(res, 404, { error: { code: 'NOT_FOUND', message: 'no such route' } });
    }
    if (!methods.includes(req.method ?? '')) {
      req.resume();
      res.setHeader('allow', methods.join(', '));
      return json(res, 405, { error: { code: 'METHOD_NOT_ALLOWED', message: `use ${methods.join(' or ')}` } });
    }
    const wait = this.#allow(req.socket.remoteAddress ?? 'unknown');
    if (wait > 0) {
      req.resume();
      res.setHeader('retry-after', String(Math.ceil(wait / 1000)));
      return json(res, 429, { error: { code: 'RATE_LIMITED', message: 'too many requests' } });
    }
    const html = url.pathname === '/v1/approve' && /text\/html/.test(String(req.headers.accept ?? ''));
    try {
      const body = req.method === 'GET' ? Buffer.alloc(0) : await readBody(req);
      if (url.pathname === '/v1/approvals') return await this.#api(req, res, body);
      if (url.pathname === '/v1/slack/interactions') return await this.#slack(req, res, body);
      if (req.method === 'GET') return this.#page(res, url.searchParams.get('token') ?? '', html);
      return await this.#pagePost(req, res, body, html);
    } catch (err) {
      const e = err instanceof HttpError ? err : err instanceof ApprovalError ? new HttpError(err.status, err.code, err.message) : null;
      if (e === null) throw err;
      if (html) return page(res, e.status, resultPage(false, pageHeading(e.code), e.message, nonce()));
      return json(res, e.status, { error: { code: e.code, message: e.message } });
    }
  }

  // ----- POST /v1/approvals ------------------------------------------------------------------

  async #api(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    const v = verifyStandardWebhook(this.#o.keys, req.headers, body);
    if (!v.ok) throw new HttpError(401, v.code, v.message);
    const key = `webhook-id:${v.id}`;
    const previous = this.#o.store.recalled(key);
    if (previous !== undefined && previous !== null) {
      const { status, payload } = JSON.parse(previous) as { status: number; payload: unknown };
      res.setHeader('idempotent-replayed', 'true');
      return json(res, status, payload);
    }
    if (!/^application\/json\b/i.test(String(req.headers['content-type'] ?? ''))) {
      throw new HttpError(415, 'UNSUPPORTED_MEDIA_TYPE', 'content-type must be application/json');
    }
    const input = parseApprovalBody(body);
    let status: number;
    let payload: unknown;
    try {
      const r = await this.#o.service.approve(input.eventId, { by: input.approver, via: 'api', reason: input.reason });
      status = 200;
      payload = { eventId: r.eventId, status: r.status, approvedBy: r.by, via: r.via, at: r.at };
    } catch (err) {
      if (!(err instanceof ApprovalError)) throw err;
      if (err.status === 502) throw err; // transient: the same webhook-id may be sent again
      status = err.status;
      payload = { error: { code: err.code, message: err.message } };
    }
    this.#o.store.remember(key, JSON.stringify({ status, payload }), REPLAY_TTL_MS);
    return json(res, status, payload);
  }

  // ----- approval links ------------------------------------------------------------------------

  #claims(token: string): TokenClaims & { nonce: string } {
    const t = readToken(this.#o.tokenKey, token);
    if (!t.ok) {
      const status = t.code === 'TOKEN_EXPIRED' ? 410 : t.code === 'TOKEN_BAD_SIGNATURE' ? 401 : 400;
      throw new HttpError(status, t.code, t.message);
    }
    if (t.claims.v.toLowerCase() !== this.#o.vm().name.toLowerCase()) {
      throw new HttpError(403, 'TOKEN_OTHER_VM', `this link was issued by ${t.claims.v}, not by this VM`);
    }
    if (this.#o.store.recalled(`token:${t.nonce}`) !== undefined) throw new HttpError(410, 'TOKEN_USED', 'this approval link has already been used');
    return { ...t.claims, nonce: t.nonce };
  }

  #page(res: ServerResponse, token: string, _html: boolean): void {
    const claims = this.#claims(token);
    const done = this.#o.service.check(claims.e).alreadyApproved;
    const n = nonce();
    if (done !== null) return page(res, 200, resultPage(true, 'Already approved', `Approved by ${done.by} (${done.via}) at ${done.at}.`, n));
    const doc = this.#o.document()!;
    const event = doc.events.find((e) => e.eventId === claims.e)!;
    const ce = toCloudEvent({ kind: 'scheduled', event, incarnation: doc.incarnation }, { vm: this.#o.vm(), observedAt: new Date().toISOString() });
    return page(res, 200, approvalPage(toChatMessage(ce), token, n));
  }

  async #pagePost(req: IncomingMessage, res: ServerResponse, body: Buffer, html: boolean): Promise<void> {
    if (!/^application\/x-www-form-urlencoded\b/i.test(String(req.headers['content-type'] ?? ''))) {
      throw new HttpError(415, 'UNSUPPORTED_MEDIA_TYPE', 'content-type must be application/x-www-form-urlencoded');
    }
    const token = new URLSearchParams(utf8(body)).get('token') ?? '';
    const claims = this.#claims(token);
    const r = await this.#o.service.approve(claims.e, { by: 'approval link', via: 'link' });
    this.#o.store.remember(`token:${claims.nonce}`, null, Math.max(60_000, claims.x * 1000 - Date.now() + 60_000));
    if (html) {
      const text = r.status === 'approved' ? 'Azure has been told it may start the maintenance now.' : `It had already been approved by ${r.by} (${r.via}).`;
      return page(res, 200, resultPage(true, r.status === 'approved' ? 'Approved' : 'Already approved', text, nonce()));
    }
    return json(res, 200, { eventId: r.eventId, status: r.status });
  }

  // ----- Slack -----------------------------------------------------------------------------------

  async #slack(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    if (this.#o.slackSigningSecret === undefined) throw new HttpError(404, 'NOT_FOUND', 'Slack interactions are not configured');
    const v = verifySlack(this.#o.slackSigningSecret, req.headers, body);
    if (!v.ok) throw new HttpError(401, v.code, v.message);
    let payload: SlackPayload;
    try {
      payload = JSON.parse(new URLSearchParams(utf8(body)).get('payload') ?? '') as SlackPayload;
    } catch {
      throw new HttpError(400, 'MALFORMED', 'expected a form field "payload" holding JSON');
    }
    if (payload?.type !== 'block_actions') throw new HttpError(400, 'UNSUPPORTED_INTERACTION', 'only block_actions are handled');
    const action = (payload.actions ?? []).find((a) => a.action_id === 'se_bridge_approve');
    if (action === undefined || typeof action.value !== 'string') throw new HttpError(400, 'MALFORMED', 'no se_bridge_approve action with a token');
    const claims = this.#claims(action.value);
    // Answer Slack at once (it wants an answer within 3 s); the approval goes on behind.
    json(res, 200, {});
    const who = payload.user?.username ?? payload.user?.name ?? payload.user?.id ?? 'a Slack user';
    const task = this.#o.service
      .approve(claims.e, { by: `@${who}`, via: 'slack' })
      .then(async (r) => {
        this.#o.store.remember(`token:${claims.nonce}`, null, Math.max(60_000, claims.x * 1000 - Date.now() + 60_000));
        const line =
          r.status === 'approved'
            ? `:white_check_mark: Approved by <@${escapeSlack(payload.user?.id ?? who)}> — Azure may start the maintenance now.`
            : `:white_check_mark: Already approved by ${escapeSlack(r.by)} (${escapeSlack(r.via)}).`;
        const blocks = (payload.message?.blocks ?? []).filter((b) => b.type !== 'actions');
        blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: line }] });
        await this.#respond(payload.response_url, { replace_original: true, text: line, blocks });
      })
      .catch(async (err: unknown) => {
        const message = err instanceof ApprovalError ? err.message : 'the approval failed';
        await this.#respond(payload.response_url, { replace_original: false, response_type: 'ephemeral', text: `:warning: Could not approve: ${message}` });
      });
    this.#pending.add(task);
    void task.finally(() => this.#pending.delete(task));
  }

  async #respond(url: string | undefined, body: unknown): Promise<void> {
    if (url === undefined || !/^https?:\/\//.test(url)) return;
    try {
      const r = await undiciRequest(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) });
      await r.body.dump();
    } catch (err) {
      this.#o.logger.warn({ code: 'SLACK_RESPONSE_URL', err: String((err as Error).message) }, 'could not update the Slack message');
    }
  }
}

interface SlackPayload {
  type?: string;
  user?: { id?: string; username?: string; name?: string };
  actions?: { action_id?: string; value?: unknown }[];
  response_url?: string;
  message?: { blocks?: Record<string, unknown>[] };
}

function parseApprovalBody(body: Buffer): { eventId: string; approver: string; reason: string } {
  let v: unknown;
  try {
    v = JSON.parse(utf8(body));
  } catch {
    throw new HttpError(400, 'MALFORMED', 'the body is not JSON');
  }
  const o = v as Record<string, unknown> | null;
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new HttpError(400, 'MALFORMED', 'the body must be a JSON object');
  const bad = Object.keys(o).filter((k) => !['eventId', 'approver', 'reason'].includes(k));
  if (bad.length > 0) throw new HttpError(400, 'MALFORMED', `unknown field ${bad[0]}`);
  if (typeof o.eventId !== 'string' || !/^[A-Za-z0-9-]{1,100}$/.test(o.eventId)) throw new HttpError(400, 'MALFORMED', 'eventId must be an EventId');
  if (o.approver !== undefined && (typeof o.approver !== 'string' || o.approver.length === 0 || o.approver.length > 200)) {
    throw new HttpError(400, 'MALFORMED', 'approver must be a string of 1 to 200 characters');
  }
  if (o.reason !== undefined && (typeof o.reason !== 'string' || o.reason.length > 2000)) throw new HttpError(400, 'MALFORMED', 'reason must be a string of at most 2000 characters');
  return { eventId: o.eventId, approver: (o.approver as string | undefined) ?? 'api', reason: (o.reason as string | undefined) ?? '' };
}

/** utf8 decodes strictly: a body that is not UTF-8 is malformed. */
function utf8(body: Buffer): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw new HttpError(400, 'MALFORMED', 'the body is not UTF-8');
  }
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_BODY) {
    req.resume();
    throw new HttpError(413, 'BODY_TOO_LARGE', `bodies are limited to ${MAX_BODY} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > MAX_BODY) {
      req.resume();
      throw new HttpError(413, 'BODY_TOO_LARGE', `bodies are limited to ${MAX_BODY} bytes`);
    }
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}

function nonce(): string {
  return randomBytes(12).toString('base64');
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function page(res: ServerResponse, status: number, html: string): void {
  const n = /nonce="([^"]+)"/.exec(html)?.[1] ?? '';
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': `default-src 'none'; style-src 'nonce-${n}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'content-length': Buffer.byteLength(html),
  });
  res.end(html);
}

function pageHeading(code: string): string {
  switch (code) {
    case 'TOKEN_EXPIRED':
    case 'TOKEN_USED':
      return 'This link can no longer be used';
    case 'NOT_APPROVABLE':
      return 'This event can no longer be approved';
    case 'UNKNOWN_EVENT':
      return 'Unknown event';
    case 'IMDS_REFUSED':
      return 'Azure did not accept the approval';
    default:
      return 'This link is not valid';
  }
}
