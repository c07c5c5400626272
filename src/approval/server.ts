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
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { sendJson } from '../lib/http-server.ts';
import { toCloudEvent } from '../pipeline/cloudevent.ts';
import { toChatMessage } from '../present/chat-model.ts';
import type { ReplayCache } from '../store/replay.ts';
import { approvalPage, resultPage } from './page.ts';
import { RoutedServer } from './routed-server.ts';
import { HttpError, nonce, page, pageHeading, parseApprovalBody, readBody, utf8 } from './requests.ts';
import { ApprovalError, type ApprovalService } from './service.ts';
import { readToken, TOLERANCE_S, verifyStandardWebhook, type TokenClaims } from './signatures.ts';
import { slackInteraction, type SlackSettings } from './slack.ts';
import type { BridgeView } from '../imds/view.ts';

export { MAX_BODY } from './requests.ts';
const REPLAY_TTL_MS = 2 * TOLERANCE_S * 1000;

export interface ApprovalServerOptions {
  service: ApprovalService;
  /** The requests already answered (webhook-ids) and the tokens already spent. */
  replay: ReplayCache;
  /** Keys that verify POST /v1/approvals (the approval secret). */
  keys: readonly Buffer[];
  /** Key of approval link tokens. */
  tokenKey: Buffer;
  slack?: SlackSettings;
  /** The read model: who this VM is, the latest IMDS document. */
  view: BridgeView;
  logger: Logger;
  /** Requests per second per client, and the burst allowed (server.rateLimit). */
  rate: { perSecond: number; burst: number };
  /** Open connections at most (server.maxConnections). */
  maxConnections: number;
  /** Open connections from one address at most (server.maxConnectionsPerClient). */
  maxConnectionsPerClient: number;
  /** A fleet budget is configured: the page offers to approve past it. */
  fleet?: boolean;
  /** Reverse proxies in front of it (server.trustedProxies). */
  trustedProxies?: readonly string[];
}

const ROUTES: Record<string, string[]> = {
  '/v1/approvals': ['POST'],
  '/v1/approve': ['GET', 'POST'],
  '/v1/slack/interactions': ['POST'],
};

export class ApprovalServer extends RoutedServer {
  readonly #o: ApprovalServerOptions;

  constructor(options: ApprovalServerOptions) {
    super({
      routes: ROUTES,
      rate: options.rate,
      maxConnections: options.maxConnections,
      maxConnectionsPerClient: options.maxConnectionsPerClient,
      trustedProxies: options.trustedProxies ?? [],
      logger: options.logger,
      failure: { code: 'APPROVAL_SERVER_ERROR', message: 'approval server failed a request' },
    });
    this.#o = options;
  }

  protected async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const html = url.pathname === '/v1/approve' && /text\/html/.test(String(req.headers.accept ?? ''));
    try {
      const body = req.method === 'GET' ? Buffer.alloc(0) : await readBody(req);
      if (url.pathname === '/v1/approvals') return await this.#api(req, res, body);
      if (url.pathname === '/v1/slack/interactions') return this.#slack(req, res, body);
      if (req.method === 'GET') return this.#page(res, url.searchParams.get('token') ?? '', html);
      return await this.#pagePost(req, res, body, html);
    } catch (err) {
      if (err instanceof ApprovalError) {
        if (html) return page(res, err.status, resultPage(false, pageHeading(err.code), err.message, nonce()));
        return sendJson(res, err.status, err.body(url.searchParams.get('eventId') ?? ''));
      }
      if (!(err instanceof HttpError)) throw err;
      if (html) return page(res, err.status, resultPage(false, pageHeading(err.code), err.message, nonce()));
      return sendJson(res, err.status, { error: { code: err.code, message: err.message } });
    }
  }

  // ----- POST /v1/approvals ------------------------------------------------------------------

  async #api(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    const v = verifyStandardWebhook(this.#o.keys, req.headers, body);
    if (!v.ok) throw new HttpError(401, v.code, v.message);
    const previous = this.#o.replay.answer(v.id);
    if (previous !== undefined) {
      const { status, payload } = JSON.parse(previous) as { status: number; payload: unknown };
      res.setHeader('idempotent-replayed', 'true');
      return sendJson(res, status, payload);
    }
    if (!/^application\/json\b/i.test(String(req.headers['content-type'] ?? ''))) {
      throw new HttpError(415, 'UNSUPPORTED_MEDIA_TYPE', 'content-type must be application/json');
    }
    const input = parseApprovalBody(body);
    let status: number;
    let payload: unknown;
    try {
      const r = await this.#o.service.approve(input.eventId, { by: input.approver, via: 'api', reason: input.reason, force: input.force });
      status = 200;
      payload = {
        eventId: r.eventId,
        status: r.status,
        approvedBy: r.by,
        via: r.via,
        at: r.at,
        ...(r.forced ? { forced: true, past: r.past ?? [] } : {}),
        ...(r.warning ? { warning: r.warning } : {}),
      };
    } catch (err) {
      if (!(err instanceof ApprovalError)) throw err;
      // transient (IMDS refused; held by the fleet budget): the same webhook-id may be sent again and decided anew
      if (err.status === 502 || err.held) return sendJson(res, err.status, err.body(input.eventId));
      status = err.status;
      payload = err.body(input.eventId);
    }
    this.#o.replay.rememberAnswer(v.id, JSON.stringify({ status, payload }), REPLAY_TTL_MS);
    return sendJson(res, status, payload);
  }

  // ----- approval links ------------------------------------------------------------------------

  #claims(token: string): TokenClaims & { nonce: string } {
    const t = readToken(this.#o.tokenKey, token);
    if (!t.ok) {
      const status = t.code === 'TOKEN_EXPIRED' ? 410 : t.code === 'TOKEN_BAD_SIGNATURE' ? 401 : 400;
      throw new HttpError(status, t.code, t.message);
    }
    if (t.claims.v.toLowerCase() !== this.#o.view.vm.name.toLowerCase()) {
      throw new HttpError(403, 'TOKEN_OTHER_VM', `this link was issued by ${t.claims.v}, not by this VM`);
    }
    if (this.#o.replay.tokenSpent(t.nonce)) throw new HttpError(410, 'TOKEN_USED', 'this approval link has already been used');
    return { ...t.claims, nonce: t.nonce };
  }

  #page(res: ServerResponse, token: string, _html: boolean): void {
    const claims = this.#claims(token);
    const done = this.#o.service.check(claims.e).alreadyApproved;
    const n = nonce();
    if (done !== null)
      return page(res, 200, resultPage(true, 'Already approved', `Approved by ${done.by} (${done.via}) at ${done.at}.`, n));
    const doc = this.#o.view.document!;
    const event = doc.events.find((e) => e.eventId === claims.e)!;
    const ce = toCloudEvent(
      { kind: 'scheduled', event, incarnation: doc.incarnation },
      { vm: this.#o.view.vm, observedAt: new Date().toISOString() },
    );
    return page(res, 200, approvalPage(toChatMessage(ce), token, n, this.#o.fleet === true));
  }

  async #pagePost(req: IncomingMessage, res: ServerResponse, body: Buffer, html: boolean): Promise<void> {
    if (!/^application\/x-www-form-urlencoded\b/i.test(String(req.headers['content-type'] ?? ''))) {
      throw new HttpError(415, 'UNSUPPORTED_MEDIA_TYPE', 'content-type must be application/x-www-form-urlencoded');
    }
    const form = new URLSearchParams(utf8(body));
    const token = form.get('token') ?? '';
    const claims = this.#claims(token);
    const force = form.get('force') === 'on';
    const reason = (form.get('reason') ?? '').slice(0, 2000).trim();
    if (force && reason === '') throw new HttpError(400, 'MALFORMED', 'approving past the fleet budget needs a reason, on the record');
    const r = await this.#o.service.approve(claims.e, { by: 'approval link', via: 'link', ...(force ? { force, reason } : {}) });
    this.#used(claims);
    if (html) {
      const text =
        r.status === 'approved'
          ? 'Azure has been told it may start the maintenance now.'
          : `It had already been approved by ${r.by} (${r.via}).`;
      return page(res, 200, resultPage(true, r.status === 'approved' ? 'Approved' : 'Already approved', text, nonce()));
    }
    return sendJson(res, 200, { eventId: r.eventId, status: r.status });
  }

  /** used marks a token spent until a minute past its expiry. */
  #used(claims: TokenClaims & { nonce: string }): void {
    this.#o.replay.spendToken(claims.nonce, Math.max(60_000, claims.x * 1000 - Date.now() + 60_000));
  }

  #slack(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
    const task = slackInteraction(
      {
        slack: this.#o.slack,
        service: this.#o.service,
        logger: this.#o.logger,
        claims: (t) => this.#claims(t),
        used: (c) => this.#used(c),
      },
      req,
      res,
      body,
    );
    this.track(task);
  }
}
