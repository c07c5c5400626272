/**
 * The relay: one approval endpoint for a whole fleet. A stateless HTTP service (any number of
 * replicas behind a load balancer) that serves the approval server's routes, verifies each
 * request exactly as a bridge does, and turns it into a signed approval command on the VM's
 * Service Bus session. It answers with the VM's outcome when one arrives within
 * `replyWaitMs`, and 202 with the command id (the tracking id) otherwise.
 *
 * Its state lives in Service Bus: the command id is derived from the webhook-id or the link
 * token's nonce, so duplicate detection keeps one message however many replicas or retries
 * send it; single use of a token is enforced by the bridge that owns the event. Each replica
 * receives outcomes on its own session of the replies queue, and believes an outcome only
 * when it is signed with the link key of the VM it names.
 *
 * Routes: POST /v1/approvals (Standard Webhooks; body {vm, eventId, approver?, reason?}),
 * GET and POST /v1/approve (links), POST /v1/slack/interactions, /livez, /readyz, /metrics.
 */
import { createPublicKey, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ServiceBusClient, ServiceBusReceivedMessage, ServiceBusSender } from '@azure/service-bus';
import type { Logger } from 'pino';
import { z } from 'zod';
import { errorFields } from '../lib/errors.ts';
import { withDeadline } from '../lib/time.ts';
import { sendJson } from '../lib/http-server.ts';
import { secretKey, whsec } from '../lib/standard-webhooks.ts';
import { hostPort, secret } from '../lib/validators.ts';
import { Counter, Gauge, Histogram, processMetrics, Registry } from '../lib/prometheus.ts';
import { azureAuth, requireOneAuth, serviceBusClient } from '../sinks/shared/azure.ts';
import {
  COMMAND_SUBJECT,
  commandId,
  decodeKey,
  ed25519Private,
  ed25519Public,
  publicKeyOf,
  sessionFor,
  keyBytes,
  linkKeyFor,
  outcomeVerifies,
  privateKeyOf,
  SIGNATURE_PROPERTY,
  signCommand,
  type ApprovalCommand,
  type CommandOutcome,
} from './fleet.ts';
import { relayApprovalPage, resultPage } from './page.ts';
import { RoutedServer } from './routed-server.ts';
import { holdSession } from './session.ts';
import { HttpError, nonce, page, pageHeading, parseApprovalBody, readBody, utf8 } from './requests.ts';
import { peekClaims, readToken, verifyStandardWebhook, type TokenClaims } from './signatures.ts';
import { escape as escapeSlack } from '../present/slack-blocks.ts';
import { approvedUpdate, readSlackAction, respondSlack, SlackSettings, warning } from './slack.ts';

export const RelayConfig = z.strictObject({
  /** Where the relay listens (behind the load balancer or ingress that terminates TLS). */
  listen: hostPort.default('0.0.0.0:8080'),
  serviceBus: z
    .strictObject({
      ...azureAuth('a Service Bus'),
      /** The bridges' inbox queue (sessions, duplicate detection): the relay Sends. */
      queue: z.string().min(1).default('se-bridge-approvals'),
      /** The outcomes queue (sessions): the relay Listens on its own session. */
      replies: z.string().min(1).default('se-bridge-approval-replies'),
    })
    .superRefine(requireOneAuth),
  /** Ed25519 private key that signs commands (`se-bridge fleet keys`). */
  signingKey: secret(ed25519Private),
  /** The public key the bridges hold (their approval.inbox.relayPublicKey): checked against signingKey at start. */
  publicKey: ed25519Public.optional(),
  /** The fleet key every VM's link key is derived from (`se-bridge fleet keys`). */
  fleetKey: secret(keyBytes),
  /** Standard Webhooks secrets that sign POST /v1/approvals (several while rotating). */
  apiSecrets: z.array(secret(whsec)).default([]),
  /** A Slack app's signing secret: enables POST /v1/slack/interactions (the app's one Request URL). */
  slack: SlackSettings.optional(),
  /** How long a request waits for the VM's outcome before the answer is 202 with a tracking id. */
  replyWaitMs: z.number().int().min(0).max(25_000).default(5000),
  /** Longest life of an approval command (never past a link's own expiry). */
  commandTtlSeconds: z.number().int().min(60).max(86_400).default(900),
  /** How long sending one command to Service Bus may take before the answer is 503 (well below a client's patience). */
  sendTimeoutMs: z.number().int().min(100).max(15_000).default(8000),
  rateLimit: z.strictObject({ perSecond: z.number().min(0.1).max(10_000).default(50), burst: z.number().int().min(1).max(100_000).default(100) }).prefault({}),
  maxConnections: z.number().int().min(1).max(100_000).default(1024),
  /** Open connections from one address at most (behind a proxy every client shares its address: raise it). */
  maxConnectionsPerClient: z.number().int().min(1).max(100_000).default(128),
  /** /livez, /readyz and /metrics on a listener of their own, which approval clients cannot crowd out ("off": none). */
  observability: z.strictObject({ listen: z.union([hostPort, z.literal('off')]).default('0.0.0.0:9464') }).prefault({}),
  log: z.strictObject({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info') }).prefault({}),
}).superRefine((c, ctx) => {
  if (c.publicKey === undefined) return;
  const mine = privateKeyOf(c.signingKey);
  const theirs = publicKeyOf(c.publicKey);
  if (mine === null || theirs === null) return; // reported by the keys' own checks
  const derived = createPublicKey(mine).export({ type: 'spki', format: 'der' });
  if (!derived.equals(theirs.export({ type: 'spki', format: 'der' }))) {
    ctx.addIssue({ code: 'custom', path: ['publicKey'], message: 'is not the public key of signingKey: the bridges would refuse every command (se-bridge fleet public-key prints the right one)' });
  }
});
export type RelayConfig = z.infer<typeof RelayConfig>;

// ----- Service Bus: commands out, outcomes back --------------------------------------------

interface Waiter {
  readonly vm: string;
  resolve(outcome: CommandOutcome | null): void;
}

export class RelayBus {
  readonly #config: RelayConfig;
  readonly #logger: Logger;
  readonly #fleetKey: Buffer;
  readonly #signingKey;
  /** This replica's session on the replies queue. */
  readonly replySession = `relay-${randomUUID()}`;
  readonly #waiting = new Map<string, Set<Waiter>>();
  /** The final outcome of each command this replica has seen answered, the newest OUTCOMES_KEPT. */
  readonly #outcomes = new Map<string, CommandOutcome>();
  /** Commands this replica sent whose outcome has not come (yet), the newest OUTCOMES_KEPT. */
  readonly #sent = new Map<string, { vm: string; eventId: string }>();
  readonly #metrics: RelayMetrics;
  #client: ServiceBusClient | null = null;
  #sender: ServiceBusSender | null = null;
  #listening = false;
  #lastError: string | null = null;

  constructor(config: RelayConfig, logger: Logger, metrics: RelayMetrics) {
    this.#config = config;
    this.#logger = logger;
    this.#metrics = metrics;
    this.#fleetKey = decodeKey(config.fleetKey);
    this.#signingKey = privateKeyOf(config.signingKey)!;
  }

  get listening(): boolean {
    return this.#listening;
  }

  get lastError(): string | null {
    return this.#lastError;
  }

  linkKey(vm: string): Buffer {
    return linkKeyFor(this.#fleetKey, vm);
  }

  async open(): Promise<void> {
    const c = this.#config.serviceBus;
    this.#client = await serviceBusClient(c, { retryOptions: { maxRetries: 2, timeoutInMs: 10_000 }, userAgentOptions: { userAgentPrefix: 'se-bridge-relay' } });
    this.#sender = this.#client.createSender(c.queue);
  }

  /** listen keeps this replica's replies session accepted until `signal` aborts. */
  async listen(signal: AbortSignal): Promise<void> {
    await holdSession({
      client: this.#client!,
      queue: this.#config.serviceBus.replies,
      session: () => this.replySession,
      signal,
      maxConcurrentCalls: 8,
      process: async (receiver, m) => {
        this.#onReply(m);
        await receiver.completeMessage(m);
      },
      state: (event, _session, err) => {
        this.#setListening(event === 'accepted');
        if (event === 'accepted') return;
        this.#lastError = String((err as Error).message ?? err);
        if (event === 'lost') this.#logger.warn({ ...errorFields(err), code: 'RELAY_REPLIES_LOST' }, 'relay: the replies session was lost; accepting it again');
        else this.#logger.warn({ ...errorFields(err), code: 'RELAY_REPLIES_ACCEPT' }, 'relay: cannot accept the replies session; trying again');
      },
    });
    this.#setListening(false);
  }

  #setListening(v: boolean): void {
    this.#listening = v;
    this.#metrics.repliesConnected.set(v ? 1 : 0);
  }

  #onReply(m: ServiceBusReceivedMessage): void {
    const body = Buffer.isBuffer(m.body) ? m.body : m.body instanceof Uint8Array ? Buffer.from(m.body) : null;
    const vm = String(m.applicationProperties?.vm ?? '');
    if (body === null || vm === '' || !outcomeVerifies(this.linkKey(vm), body, m.applicationProperties?.[SIGNATURE_PROPERTY])) {
      this.#metrics.outcomes.inc({ outcome: 'unverified' });
      this.#logger.warn({ code: 'RELAY_OUTCOME_UNVERIFIED', correlationId: m.correlationId, vm }, 'relay: an outcome that does not verify was dropped');
      return;
    }
    let outcome: CommandOutcome;
    try {
      outcome = JSON.parse(body.toString('utf8')) as CommandOutcome;
    } catch {
      return;
    }
    if (outcome.vm !== vm) return;
    this.#metrics.outcomes.inc({ outcome: outcome.outcome });
    // an interim "failed" (the VM will try again) does not end the wait
    if (outcome.outcome === 'failed') return;
    const id = String(m.correlationId ?? '');
    if (this.#sent.get(id)?.vm === vm) {
      this.#sent.delete(id);
      keep(this.#outcomes, id, outcome);
    }
    for (const w of this.#waiting.get(id) ?? []) if (w.vm === vm) w.resolve(outcome);
  }

  /** tracked: what this replica knows of a command: its outcome, or that it was sent and is pending. */
  tracked(id: string): { outcome: CommandOutcome } | { pending: { vm: string; eventId: string } } | null {
    const outcome = this.#outcomes.get(id);
    if (outcome !== undefined) return { outcome };
    const pending = this.#sent.get(id);
    return pending === undefined ? null : { pending };
  }

  /**
   * send puts a signed command on the VM's session and waits up to `waitMs` for its outcome
   * (null when none came). The same command id twice is one message (duplicate detection).
   */
  async send(command: ApprovalCommand, waitMs: number): Promise<CommandOutcome | null> {
    // a repeat of a request already answered gets the first answer, and sends nothing
    const known = this.#outcomes.get(command.id);
    if (known !== undefined) return known;
    const { body, signature } = signCommand(this.#signingKey, command);
    let waiter!: Waiter;
    const outcome = new Promise<CommandOutcome | null>((resolve) => (waiter = { vm: command.vm, resolve }));
    const set = this.#waiting.get(command.id) ?? new Set<Waiter>();
    set.add(waiter);
    this.#waiting.set(command.id, set);
    const started = performance.now();
    keep(this.#sent, command.id, { vm: command.vm, eventId: command.eventId });
    // Service Bus may accept the connection and then say nothing: the send is bounded well
    // below a client's patience, so the client gets a 503 and its tracking id, never silence
    const limit = this.#config.sendTimeoutMs;
    const abort = new AbortController();
    try {
      const sending = this.#sender!.sendMessages(
        {
          body,
          contentType: 'application/json',
          subject: COMMAND_SUBJECT,
          messageId: command.id,
          sessionId: command.vm,
          replyToSessionId: this.replySession,
          replyTo: this.#config.serviceBus.replies,
          timeToLive: Math.max(1000, command.exp * 1000 - Date.now()),
          applicationProperties: { [SIGNATURE_PROPERTY]: signature },
        },
        { abortSignal: abort.signal },
      );
      await withDeadline(sending, limit, () => {
        abort.abort();
        return Object.assign(new Error(`Service Bus did not take the command within ${limit} ms`), { code: 'SEND_TIMEOUT' });
      });
      this.#metrics.commands.inc({ result: 'sent' });
      const timer = setTimeout(() => waiter.resolve(null), waitMs);
      const r = await outcome;
      clearTimeout(timer);
      if (r !== null) this.#metrics.replySeconds.observe({}, (performance.now() - started) / 1000);
      return r;
    } catch (err) {
      this.#metrics.commands.inc({ result: 'send-failed' });
      this.#lastError = String((err as Error).message ?? err);
      throw err;
    } finally {
      set.delete(waiter);
      if (set.size === 0) this.#waiting.delete(command.id);
    }
  }

  async close(): Promise<void> {
    for (const set of this.#waiting.values()) for (const w of set) w.resolve(null);
    await this.#sender?.close().catch(() => undefined);
    await this.#client?.close().catch(() => undefined);
    this.#setListening(false);
  }
}

/** How many answered (and pending) commands each replica remembers, for repeats and GET /v1/approvals/{trackingId}. */
const OUTCOMES_KEPT = 10_000;

/** keep sets `key` as the newest entry of a map that holds at most OUTCOMES_KEPT. */
function keep<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > OUTCOMES_KEPT) map.delete(map.keys().next().value!);
}

export class RelayMetrics {
  readonly registry = new Registry();
  readonly requests: Counter;
  readonly commands: Counter;
  readonly outcomes: Counter;
  readonly replySeconds: Histogram;
  readonly repliesConnected: Gauge;

  constructor() {
    const r = this.registry;
    processMetrics(r);
    this.requests = r.register(new Counter('sebridge_relay_requests_total', 'Requests by route and HTTP status.', ['route', 'status']));
    this.commands = r.register(new Counter('sebridge_relay_commands_total', 'Approval commands by result (sent, send-failed).', ['result']));
    this.outcomes = r.register(new Counter('sebridge_relay_outcomes_total', 'Outcomes received from VMs, by outcome (unverified: dropped).', ['outcome']));
    this.replySeconds = r.register(new Histogram('sebridge_relay_reply_seconds', 'From sending a command to its outcome.', [], [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]));
    this.repliesConnected = r.register(new Gauge('sebridge_relay_replies_connected', 'Whether this replica holds its replies session (1) or not (0).'));
  }
}

// ----- HTTP ------------------------------------------------------------------------------------

const ROUTES: Record<string, string[]> = {
  '/v1/approvals': ['POST'],
  '/v1/approvals/*': ['GET'],
  '/v1/approve': ['GET', 'POST'],
  '/v1/slack/interactions': ['POST'],
  '/livez': ['GET', 'HEAD'],
  '/readyz': ['GET', 'HEAD'],
  '/metrics': ['GET', 'HEAD'],
};

/** Slack has its answer at once; the message is updated when the VM's outcome arrives. */
const SLACK_WAIT_MS = 25_000;

/** The HTTP status of an outcome, for the API and the page. */
function statusOf(o: CommandOutcome): number {
  if (o.outcome === 'approved' || o.outcome === 'already-approved') return 200;
  if (o.code === 'UNKNOWN_EVENT') return 404;
  if (o.code === 'TOKEN_USED') return 410;
  return 409;
}

export interface RelayServerOptions {
  readonly config: RelayConfig;
  readonly bus: RelayBus;
  readonly metrics: RelayMetrics;
  readonly logger: Logger;
}

export class RelayServer extends RoutedServer {
  readonly #o: RelayServerOptions;
  readonly #apiKeys: Buffer[];

  constructor(options: RelayServerOptions) {
    super({
      routes: ROUTES,
      unlimited: ['/livez', '/readyz', '/metrics'],
      rate: options.config.rateLimit,
      maxConnections: options.config.maxConnections,
      maxConnectionsPerClient: options.config.maxConnectionsPerClient,
      logger: options.logger,
      failure: { code: 'RELAY_ERROR', message: 'relay failed a request' },
      onFinish: (route, status) => options.metrics.requests.inc({ route, status: String(status) }),
    });
    this.#o = options;
    this.#apiKeys = options.config.apiSecrets.map((s) => secretKey(s)!);
  }

  protected async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    if (url.pathname === '/livez') return sendJson(res, 200, { status: 'ok' });
    if (url.pathname === '/readyz') {
      const r = relayReadiness(this.#o.bus);
      return sendJson(res, r.ready ? 200 : 503, { status: r.ready ? 'ready' : 'not-ready', reason: r.reason });
    }
    if (url.pathname === '/metrics') {
      const text = await this.#o.metrics.registry.metrics();
      res.writeHead(200, { 'content-type': this.#o.metrics.registry.contentType });
      return void res.end(text);
    }
    const html = url.pathname === '/v1/approve' && /text\/html/.test(String(req.headers.accept ?? ''));
    try {
      const body = req.method === 'GET' ? Buffer.alloc(0) : await readBody(req);
      if (url.pathname === '/v1/approvals') return await this.#api(req, res, body);
      if (url.pathname.startsWith('/v1/approvals/')) return this.#tracking(req, res, decodeURIComponent(url.pathname.slice('/v1/approvals/'.length)));
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

  #command(vm: string, id: string, eventId: string, by: string, via: ApprovalCommand['via'], reason: string, token: TokenClaims | null): ApprovalCommand {
    const now = Math.floor(Date.now() / 1000);
    const exp = Math.min(now + this.#o.config.commandTtlSeconds, token?.x ?? Number.MAX_SAFE_INTEGER);
    return { v: 1, id, vm: sessionFor(vm), eventId, by, via, reason, nonce: token?.n ?? null, iat: now, exp };
  }

  async #send(command: ApprovalCommand, waitMs: number): Promise<CommandOutcome | null> {
    try {
      return await this.#o.bus.send(command, waitMs);
    } catch (err) {
      this.#o.logger.warn({ ...errorFields(err), code: 'RELAY_SEND_FAILED', vm: command.vm, commandId: command.id }, 'relay: could not send the approval command');
      throw new HttpError(503, 'SERVICE_BUS_UNAVAILABLE', 'the approval could not be passed on; try again (the same request is applied once)', { trackingId: command.id, vm: command.vm });
    }
  }

  /** apiAnswer: the answer of POST /v1/approvals to a command whose outcome came, or not yet. */
  #apiAnswer(res: ServerResponse, id: string, vm: string, eventId: string, outcome: CommandOutcome | null): void {
    if (outcome === null) return sendJson(res, 202, { status: 'accepted', trackingId: id, vm, eventId });
    if (statusOf(outcome) !== 200) return sendJson(res, statusOf(outcome), { error: { code: outcome.code ?? outcome.outcome.toUpperCase(), message: outcome.message }, trackingId: id, vm });
    return sendJson(res, 200, { eventId, vm, status: outcome.outcome, approvedBy: outcome.by, via: outcome.via, at: outcome.at, trackingId: id });
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
    const t = /^[0-9a-f]{32}$/.test(id) ? this.#o.bus.tracked(id) : null;
    if (t === null) throw new HttpError(404, 'UNKNOWN_TRACKING_ID', 'this relay replica has no record of that tracking id; repeat the request (it is applied once)');
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
    const id = commandId(sessionFor(input.vm), { webhookId: v.id });
    const command = this.#command(input.vm, id, input.eventId, input.approver, 'api', input.reason, null);
    const outcome = await this.#send(command, this.#o.config.replyWaitMs);
    return this.#apiAnswer(res, id, command.vm, input.eventId, outcome);
  }

  // ----- links -------------------------------------------------------------------------------

  /** claims verifies a link token with the key of the VM it names. */
  #claims(token: string): TokenClaims {
    const vm = peekClaims(token)?.v;
    if (typeof vm !== 'string' || vm.length === 0 || vm.length > 1024) throw new HttpError(400, 'TOKEN_MALFORMED', 'the approval token is not well-formed');
    const t = readToken(this.#o.bus.linkKey(vm), token);
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
    const outcome = await this.#send(this.#command(c.v, id, c.e, 'approval link', 'link', '', c), this.#o.config.replyWaitMs);
    if (outcome === null) {
      if (html) return page(res, 202, resultPage(true, 'Sent to the VM', `The approval is on its way to ${c.v}; it has not answered yet. Tracking id: ${id}.`, nonce()));
      return sendJson(res, 202, { status: 'accepted', trackingId: id, vm: c.v, eventId: c.e });
    }
    const status = statusOf(outcome);
    if (html) {
      if (status !== 200) return page(res, status, resultPage(false, pageHeading(outcome.code ?? ''), outcome.message, nonce()));
      const text = outcome.outcome === 'approved' ? 'Azure has been told it may start the maintenance now.' : `It had already been approved by ${outcome.by} (${outcome.via}).`;
      return page(res, 200, resultPage(true, outcome.outcome === 'approved' ? 'Approved' : 'Already approved', text, nonce()));
    }
    if (status !== 200) return sendJson(res, status, { error: { code: outcome.code ?? outcome.outcome.toUpperCase(), message: outcome.message }, trackingId: id });
    return sendJson(res, 200, { eventId: c.e, vm: c.v, status: outcome.outcome, trackingId: id });
  }

  // ----- Slack -------------------------------------------------------------------------------

  #slack(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
    const a = readSlackAction(this.#o.config.slack, req, body);
    const c = this.#claims(a.token);
    sendJson(res, 200, {});
    const id = commandId(c.v, { nonce: c.n });
    const log = this.#o.logger;
    const task = this.#send(this.#command(c.v, id, c.e, a.who, 'slack', '', c), SLACK_WAIT_MS).then(
      (o) => {
        if (o !== null && statusOf(o) === 200) return respondSlack(log, a, approvedUpdate(a, { status: o.outcome, by: o.by ?? '', via: o.via ?? '' }));
        const text = o === null ? `:hourglass: Sent to ${escapeSlack(c.v)}; it has not answered yet (tracking id ${id}).` : `:warning: Could not approve: ${escapeSlack(o.message)}`;
        return respondSlack(log, a, warning(text));
      },
      () => respondSlack(log, a, warning(':warning: Could not pass the approval on; try again.')),
    );
    this.track(task);
  }
}

/** relayReadiness: ready while this replica holds its replies session. */
export function relayReadiness(bus: RelayBus): { ready: boolean; reason: string } {
  const ready = bus.listening;
  return { ready, reason: ready ? 'the replies session is held' : `no replies session: ${bus.lastError ?? 'connecting'}` };
}

export interface RunningRelay {
  readonly url: string;
  readonly bus: RelayBus;
  readonly metrics: RelayMetrics;
  close(): Promise<void>;
}

/** startRelay connects to Service Bus, starts holding its replies session and listens. */
export async function startRelay(config: RelayConfig, logger: Logger, listenAt: { host: string; port: number }): Promise<RunningRelay> {
  const metrics = new RelayMetrics();
  const bus = new RelayBus(config, logger, metrics);
  await bus.open();
  const abort = new AbortController();
  const listening = bus.listen(abort.signal);
  const server = new RelayServer({ config, bus, metrics, logger });
  let url: string;
  try {
    url = await server.listen(listenAt.host, listenAt.port);
  } catch (err) {
    abort.abort();
    await bus.close();
    await listening;
    throw err;
  }
  logger.info({ url, queue: config.serviceBus.queue, replies: config.serviceBus.replies, replySession: bus.replySession }, 'relay listening');
  return {
    url,
    bus,
    metrics,
    async close() {
      await server.close();
      abort.abort();
      await bus.close();
      await listening;
    },
  };
}

/** relaySecrets: what the relay's logs must never show. */
export function relaySecrets(c: RelayConfig): string[] {
  return [c.serviceBus.connectionString, c.signingKey, c.fleetKey, ...c.apiSecrets, c.slack?.signingSecret].filter((s): s is string => typeof s === 'string' && s.length >= 6);
}
