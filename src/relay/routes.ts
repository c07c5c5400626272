/**
 * The relay's HTTP routes: the approval API, the signed links and their page, Slack's
 * interactions, /livez, /readyz and /metrics. Each request is verified exactly as a bridge
 * verifies it, then becomes a signed approval command.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { sendJson } from '../lib/http-server.ts';
import { commandId, sessionFor, type CommandOutcome } from '../fleet/keys.ts';
import { relayApprovalPage, resultPage } from '../approval/page.ts';
import { RoutedServer } from '../approval/routed-server.ts';
import { HttpError, nonce, page, pageHeading, parseApprovalBody, readBody, utf8 } from '../approval/requests.ts';
import { peekClaims, readToken, verifyStandardWebhook, type TokenClaims } from '../approval/signatures.ts';
import { escape as escapeSlack } from '../present/slack-blocks.ts';
import { approvedUpdate, readSlackAction, respondSlack, warning } from '../approval/slack.ts';
import { relayReadiness, type RelayBus } from './bus.ts';
import type { RelayMetrics } from './metrics.ts';
import type { RelayConfig } from './config.ts';
import type { FleetRoutes } from './fleet-routes.ts';
import { brake, BrakeAnswers } from './pause-routes.ts';
import { RelayCommands, statusOf } from './commands.ts';

// ----- HTTP ------------------------------------------------------------------------------------

const ROUTES: Record<string, string[]> = {
  '/v1/approvals': ['POST'],
  '/v1/approvals/*': ['GET'],
  '/v1/approve': ['GET', 'POST'],
  '/v1/slack/interactions': ['POST'],
  '/v1/fleet': ['GET'],
  '/v1/fleet/events': ['GET'],
  '/v1/fleet/calendar.ics': ['GET'],
  '/v1/fleet/pause': ['POST'],
  '/v1/fleet/resume': ['POST'],
  '/v1/azure/eventgrid': ['POST', 'OPTIONS'],
  '/livez': ['GET', 'HEAD'],
  '/readyz': ['GET', 'HEAD'],
  '/metrics': ['GET', 'HEAD'],
};

/** Slack has its answer at once; the message is updated when the VM's outcome arrives. */
const SLACK_WAIT_MS = 25_000;

export interface RelayServerOptions {
  readonly config: RelayConfig;
  /** Service Bus: null when the relay serves the fleet view alone (every approval to a member is then a 404 naming it). */
  readonly bus: RelayBus | null;
  readonly metrics: RelayMetrics;
  readonly logger: Logger;
  /** The fleet read API and Azure's feed (404 each when not configured). */
  readonly fleet: FleetRoutes;
}

export class RelayServer extends RoutedServer {
  readonly #o: RelayServerOptions;
  readonly #apiKeys: Buffer[];
  readonly #cmd: RelayCommands;
  /** The answers to signed pauses and resumes, so a copy sent again changes nothing. */
  readonly #brakes = new BrakeAnswers();

  constructor(options: RelayServerOptions) {
    super({
      routes: ROUTES,
      unlimited: ['/livez', '/readyz', '/metrics'],
      rate: options.config.rateLimit,
      maxConnections: options.config.maxConnections,
      maxConnectionsPerClient: options.config.maxConnectionsPerClient,
      trustedProxies: options.config.trustedProxies,
      logger: options.logger,
      failure: { code: 'RELAY_ERROR', message: 'relay failed a request' },
      onFinish: (route, status) => options.metrics.requests.inc({ route, status: String(status) }),
    });
    this.#o = options;
    this.#apiKeys = options.config.apiKeys;
    this.#cmd = new RelayCommands(options.config, options.bus, options.logger);
  }

  protected async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    if (url.pathname === '/livez') return sendJson(res, 200, { status: 'ok' });
    if (url.pathname === '/readyz') {
      const r = relayReadiness(this.#o.bus, this.#o.fleet.reader);
      return sendJson(res, r.ready ? 200 : 503, { status: r.ready ? 'ready' : 'not-ready', reason: r.reason, ...r.details });
    }
    if (url.pathname === '/metrics') {
      const text = await this.#o.metrics.registry.metrics();
      res.writeHead(200, { 'content-type': this.#o.metrics.registry.contentType });
      return void res.end(text);
    }
    const html = url.pathname === '/v1/approve' && /text\/html/.test(String(req.headers.accept ?? ''));
    try {
      const fleet = this.#o.fleet;
      if (req.method === 'GET' && url.pathname.startsWith('/v1/fleet')) return await fleet.read(req, res, url);
      if (url.pathname === '/v1/azure/eventgrid')
        return await (req.method === 'OPTIONS' ? fleet.handshake(req, res, url) : fleet.eventGrid(req, res, url));
      const body = req.method === 'GET' ? Buffer.alloc(0) : await readBody(req);
      if (url.pathname === '/v1/approvals') return await this.#api(req, res, body);
      if (url.pathname === '/v1/fleet/pause' || url.pathname === '/v1/fleet/resume')
        return await brake({ ...this.#o, apiKeys: this.#apiKeys, answers: this.#brakes }, req, res, url, body);
      if (url.pathname.startsWith('/v1/approvals/'))
        return this.#tracking(req, res, decodeURIComponent(url.pathname.slice('/v1/approvals/'.length)));
      if (url.pathname === '/v1/slack/interactions') return this.#slack(req, res, body);
      if (req.method === 'GET') return this.#page(res, url.searchParams.get('token') ?? '');
      return await this.#pagePost(req, res, body, html);
    } catch (err) {
      const e = err instanceof HttpError ? err : null;
      if (e === null) throw err;
      const tracking = typeof e.extra.trackingId === 'string' ? ` Tracking id: ${e.extra.trackingId}.` : '';
      if (html) return page(res, e.status, resultPage(false, pageHeading(e.code), `${e.message}${tracking}`, nonce()));
      return sendJson(res, e.status, { error: { code: e.code, message: e.message }, ...e.extra });
    }
  }

  /** apiAnswer: the answer of POST /v1/approvals to a command whose outcome came, or not yet. */
  #apiAnswer(res: ServerResponse, id: string, vm: string, eventId: string, outcome: CommandOutcome | null): void {
    if (outcome === null) return sendJson(res, 202, { status: 'accepted', trackingId: id, vm, eventId });
    if (statusOf(outcome) !== 200)
      return sendJson(res, statusOf(outcome), {
        // held by the VM's fleet budget or calendar: said as the VM's own approval server says it
        ...(outcome.code === 'HELD' || outcome.code === 'FLEET_STORE_UNAVAILABLE' || outcome.code === 'BLACKOUT'
          ? { eventId, status: 'held' }
          : {}),
        error: { code: outcome.code ?? outcome.outcome.toUpperCase(), message: outcome.message },
        trackingId: id,
        vm,
      });
    return sendJson(res, 200, {
      eventId,
      vm,
      status: outcome.outcome,
      approvedBy: outcome.by,
      via: outcome.via,
      at: outcome.at,
      trackingId: id,
    });
  }

  // ----- GET /v1/approvals/{trackingId} --------------------------------------------------------

  /**
   * tracking answers what this replica knows of a command, signed like POST /v1/approvals (an
   * empty body): the answer the request got or would get now, 202 while the VM has not answered,
   * 404 when this replica never sent it (another replica may have: ask again, or repeat the POST).
   */
  #tracking(req: IncomingMessage, res: ServerResponse, id: string): void {
    if (this.#apiKeys.length === 0) throw new HttpError(404, 'NOT_FOUND', 'the approval API is not configured (apiSecrets)');
    const v = verifyStandardWebhook(this.#apiKeys, req.headers, Buffer.alloc(0));
    if (!v.ok) throw new HttpError(401, v.code, v.message);
    const t = /^[0-9a-f]{32}$/.test(id) ? this.#cmd.bus().tracked(id) : null;
    if (t === null)
      throw new HttpError(
        404,
        'UNKNOWN_TRACKING_ID',
        'this relay replica has no record of that tracking id; repeat the request (it is applied once)',
      );
    if ('pending' in t) return sendJson(res, 202, { status: 'pending', trackingId: id, vm: t.pending.vm, eventId: t.pending.eventId });
    return this.#apiAnswer(res, id, t.outcome.vm, t.outcome.eventId ?? '', t.outcome);
  }

  // ----- POST /v1/approvals ------------------------------------------------------------------

  async #api(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    if (this.#apiKeys.length === 0) throw new HttpError(404, 'NOT_FOUND', 'the approval API is not configured (apiSecrets)');
    const v = verifyStandardWebhook(this.#apiKeys, req.headers, body);
    if (!v.ok) throw new HttpError(401, v.code, v.message);
    if (!/^application\/json\b/i.test(String(req.headers['content-type'] ?? ''))) {
      throw new HttpError(415, 'UNSUPPORTED_MEDIA_TYPE', 'content-type must be application/json');
    }
    const input = parseApprovalBody(body, true);
    if (input.via === 'arm') return this.#o.fleet.approveArm(res, { ...input, client: this.clientOf(req) });
    this.#cmd.bus();
    const id = commandId(sessionFor(input.vm), { webhookId: v.id });
    const command = this.#cmd.command({ vm: input.vm, id, eventId: input.eventId, by: input.approver, via: 'api', reason: input.reason });
    const outcome = await this.#cmd.send(command, this.#o.config.replyWaitMs);
    return this.#apiAnswer(res, id, command.vm, input.eventId, outcome);
  }

  // ----- links -------------------------------------------------------------------------------

  /** claims verifies a link token with the key of the VM it names. */
  #claims(token: string): TokenClaims {
    const bus = this.#cmd.bus();
    const vm = peekClaims(token)?.v;
    if (typeof vm !== 'string' || vm.length === 0 || vm.length > 1024)
      throw new HttpError(400, 'TOKEN_MALFORMED', 'the approval token is not well-formed');
    const t = readToken(bus.linkKey(vm), token);
    if (!t.ok) throw new HttpError(t.code === 'TOKEN_EXPIRED' ? 410 : t.code === 'TOKEN_BAD_SIGNATURE' ? 401 : 400, t.code, t.message);
    return t.claims;
  }

  #page(res: ServerResponse, token: string): void {
    const c = this.#claims(token);
    return page(res, 200, relayApprovalPage({ eventId: c.e, vm: c.v, expires: new Date(c.x * 1000).toISOString() }, token, nonce()));
  }

  async #pagePost(req: IncomingMessage, res: ServerResponse, body: Buffer, html: boolean): Promise<void> {
    if (!/^application\/x-www-form-urlencoded\b/i.test(String(req.headers['content-type'] ?? ''))) {
      throw new HttpError(415, 'UNSUPPORTED_MEDIA_TYPE', 'content-type must be application/x-www-form-urlencoded');
    }
    const token = new URLSearchParams(utf8(body)).get('token') ?? '';
    const c = this.#claims(token);
    const id = commandId(c.v, { nonce: c.n });
    const outcome = await this.#cmd.send(
      this.#cmd.command({ vm: c.v, id, eventId: c.e, by: 'approval link', via: 'link', reason: '', token: c }),
      this.#o.config.replyWaitMs,
    );
    if (outcome === null) {
      if (html)
        return page(
          res,
          202,
          resultPage(true, 'Sent to the VM', `The approval is on its way to ${c.v}; it has not answered yet. Tracking id: ${id}.`, nonce()),
        );
      return sendJson(res, 202, { status: 'accepted', trackingId: id, vm: c.v, eventId: c.e });
    }
    const status = statusOf(outcome);
    if (html) {
      if (status !== 200) return page(res, status, resultPage(false, pageHeading(outcome.code ?? ''), outcome.message, nonce()));
      const text =
        outcome.outcome === 'approved'
          ? 'Azure has been told it may start the maintenance now.'
          : `It had already been approved by ${outcome.by} (${outcome.via}).`;
      return page(res, 200, resultPage(true, outcome.outcome === 'approved' ? 'Approved' : 'Already approved', text, nonce()));
    }
    if (status !== 200)
      return sendJson(res, status, {
        error: { code: outcome.code ?? outcome.outcome.toUpperCase(), message: outcome.message },
        trackingId: id,
      });
    return sendJson(res, 200, { eventId: c.e, vm: c.v, status: outcome.outcome, trackingId: id });
  }

  // ----- Slack -------------------------------------------------------------------------------

  #slack(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
    const a = readSlackAction(this.#o.config.slack, req, body);
    const c = this.#claims(a.token);
    sendJson(res, 200, {});
    const id = commandId(c.v, { nonce: c.n });
    const log = this.#o.logger;
    const task = this.#cmd
      .send(this.#cmd.command({ vm: c.v, id, eventId: c.e, by: a.who, via: 'slack', reason: '', token: c }), SLACK_WAIT_MS)
      .then(
        (o) => {
          if (o !== null && statusOf(o) === 200)
            return respondSlack(log, a, approvedUpdate(a, { status: o.outcome, by: o.by ?? '', via: o.via ?? '' }));
          const text =
            o === null
              ? `:hourglass: Sent to ${escapeSlack(c.v)}; it has not answered yet (tracking id ${id}).`
              : `:warning: Could not approve: ${escapeSlack(o.message)}`;
          return respondSlack(log, a, warning(text));
        },
        () => respondSlack(log, a, warning(':warning: Could not pass the approval on; try again.')),
      );
    this.track(task);
  }
}
