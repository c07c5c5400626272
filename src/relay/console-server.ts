/**
 * The console's listener (`console.listen`): the fleet in a browser. GET /console is the sign-in
 * form or the timeline; POST /console/sign-in and /console/sign-out open and end a session;
 * GET /console/live streams the timeline again whenever it changes (Server-Sent Events; read at
 * most every LIVE_MS, from the relay's shared read of the store); GET /console/event is one
 * event's detail. Its own stylesheet and script only (the Content Security Policy allows nothing
 * else), every POST from its own origin, every page behind a session or a trusted proxy's name.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { RoutedServer } from '../approval/routed-server.ts';
import { HttpError, readBody, utf8 } from '../approval/requests.ts';
import { sendJson } from '../lib/http-server.ts';
import { Cidrs } from '../lib/client-address.ts';
import { messageOf } from '../lib/errors.ts';
import { sleep } from '../lib/time.ts';
import { fleetEvents } from '../fleet/view/events.ts';
import type { FleetReader } from '../fleet/view/snapshot.ts';
import type { RelayConfig } from './config.ts';
import type { ConsoleConfig } from './console-config.ts';
import { CONSOLE_CSS, CONSOLE_JS } from './console-assets.ts';
import { appPage, eventPage, problemPage, saidPage, signInPage, timelineHtml, unreadHtml } from './console-render.ts';
import { approveFrom, pendingEvent } from './console-approve.ts';
import { RelayCommands } from './commands.ts';
import type { RelayBus } from './bus.ts';
import type { ArmApprovals } from './arm-approval.ts';
import { overTls, sameOrigin, Sessions, sessionKeyOf, type Person } from './console-session.ts';
import { RANGES, rangeOf, timelineOf, type Range } from './console-timeline.ts';

/** How often an open page's timeline is made again (it is sent only when it changed). */
export const LIVE_MS = 1000;
/** A comment on a quiet stream this often keeps proxies and the listener's idle timeout from closing it. */
const KEEPALIVE_MS = 15_000;
/** A stream whose client has read nothing of what was sent this long is ended (by default). */
const STUCK_MS = 60_000;

const ROUTES: Record<string, string[]> = {
  '/console': ['GET'],
  '/console/sign-in': ['POST'],
  '/console/sign-out': ['POST'],
  '/console/approve': ['POST'],
  '/console/live': ['GET'],
  '/console/event': ['GET'],
  '/console/app.css': ['GET'],
  '/console/app.js': ['GET'],
};

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

function html(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    ...{ 'content-type': 'text/html; charset=utf-8', 'content-security-policy': CSP, 'referrer-policy': 'same-origin' },
    ...{ 'x-frame-options': 'DENY', 'content-length': String(Buffer.byteLength(body)) },
    ...headers,
  });
  res.end(body);
}

export class ConsoleServer extends RoutedServer {
  readonly #reader: FleetReader;
  readonly #config: RelayConfig;
  readonly #sessions: Sessions;
  readonly #proxies: Cidrs;
  readonly #logger: Logger;
  readonly #closed = new AbortController();
  /** The last timeline made for each range: every open page of that range shares it. */
  readonly #made = new Map<string, { key: string; html: string }>();
  readonly #commands: RelayCommands;
  readonly #arm: ArmApprovals | null;
  readonly #stuckMs: number;

  constructor(o: {
    config: RelayConfig;
    console: ConsoleConfig;
    reader: FleetReader;
    bus: RelayBus | null;
    arm: ArmApprovals | null;
    logger: Logger;
    /** How long a stream may go unread before it is ended (STUCK_MS). */
    stuckMs?: number;
  }) {
    super({
      routes: ROUTES,
      unlimited: ['/console/app.css', '/console/app.js'],
      rate: o.config.rateLimit,
      maxConnections: o.config.maxConnections,
      maxConnectionsPerClient: o.config.maxConnectionsPerClient,
      trustedProxies: o.config.trustedProxies,
      logger: o.logger,
      failure: { code: 'RELAY_ERROR', message: 'relay console failed a request' },
    });
    this.#reader = o.reader;
    this.#config = o.config;
    this.#logger = o.logger;
    this.#proxies = new Cidrs(o.config.trustedProxies);
    this.#commands = new RelayCommands(o.config, o.bus, o.logger);
    this.#arm = o.arm;
    this.#stuckMs = o.stuckMs ?? STUCK_MS;
    this.#sessions = new Sessions(o.console, sessionKeyOf(o.console.sessionKey, o.config.fleetKey), this.#proxies);
  }

  override async close(): Promise<void> {
    this.#closed.abort();
    await super.close();
  }

  protected async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const path = url.pathname;
    if (path === '/console/app.css' || path === '/console/app.js') {
      const css = path.endsWith('.css');
      res.writeHead(200, {
        'content-type': css ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8',
        'cache-control': 'no-cache',
      });
      return void res.end(css ? CONSOLE_CSS : CONSOLE_JS);
    }
    try {
      if (req.method === 'POST') return await this.#post(req, res, path);
      const person = this.#sessions.who(req);
      const range = rangeOf(url.searchParams.get('range') ?? '24h');
      if (range === null) throw new HttpError(400, 'BAD_FILTER', `range must be one of ${Object.keys(RANGES).join(', ')}`);
      if (path === '/console') return person === null ? html(res, 200, signInPage(null)) : await this.#app(res, person, range);
      if (person === null) throw new HttpError(401, 'UNAUTHORIZED', 'sign in at /console first');
      if (path === '/console/live') return await this.#live(req, res, range, person.role === 'approve');
      return await this.#event(res, url, person);
    } catch (err) {
      if (!(err instanceof HttpError)) throw err;
      // the live stream and the page's own script are answered in JSON
      if (path === '/console/live' || /application\/json/.test(String(req.headers.accept ?? '')))
        return sendJson(res, err.status, { error: { code: err.code, message: err.message } });
      return html(res, err.status, problemPage(err));
    }
  }

  async #post(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const secure = overTls(req, this.#proxies);
    // a form another site posts here carries its own Origin (and SameSite=Strict keeps the cookie away)
    if (!sameOrigin(req, secure)) throw new HttpError(403, 'CROSS_SITE', "a POST from another origin than the console's is refused");
    const body = new URLSearchParams(utf8(await readBody(req, 8192)));
    if (path === '/console/approve') {
      const person = this.#sessions.who(req);
      if (person === null) throw new HttpError(401, 'UNAUTHORIZED', 'sign in at /console first');
      const deps = { config: this.#config, reader: this.#reader, commands: this.#commands, arm: this.#arm };
      const said = await approveFrom(deps, person, body, this.clientOf(req));
      this.#logger.info(
        { name: person.name, by: person.by, vm: body.get('vm'), eventId: body.get('eventId'), heading: said.heading },
        'console: an approval',
      );
      if (/application\/json/.test(String(req.headers.accept ?? ''))) return sendJson(res, said.status, said);
      return html(res, said.status, saidPage(said));
    }
    if (path === '/console/sign-out')
      return html(res, 303, '', { location: '/console', 'set-cookie': this.#sessions.cookieHeader('', secure) });
    const session = this.#sessions.signIn(body.get('key') ?? '');
    if (session === null) {
      this.#logger.warn(
        { code: 'CONSOLE_SIGN_IN_REFUSED', client: this.clientOf(req) },
        'console: a sign-in with a key that is none of console.keys was refused',
      );
      return html(res, 401, signInPage("That key is not one of this console's keys."));
    }
    this.#logger.info({ name: session.person.name, role: session.person.role, client: this.clientOf(req) }, 'console: signed in');
    return html(res, 303, '', { location: '/console', 'set-cookie': this.#sessions.cookieHeader(session.cookie, secure) });
  }

  async #app(res: ServerResponse, person: Person, range: Range): Promise<void> {
    return html(res, 200, appPage(person, range, await this.#timeline(range, person.role === 'approve')));
  }

  /** timeline: the timeline's HTML for `range` now, made once per read of the store and step of the clock. */
  async #timeline(range: Range, canAct: boolean): Promise<string> {
    const s = await this.#reader.read();
    if (s.unread.length > 0) return unreadHtml(s.unread.map((u) => u.why).join('; '));
    // the bars move with the clock by a two-thousandth of the range at a time, not at every second
    const step = RANGES[range] / 2000;
    const now = Math.floor(Date.now() / step) * step;
    const key = `${s.readAt}|${now}`;
    const made = this.#made.get(`${range}|${canAct}`);
    if (made?.key === key) return made.html;
    const events = fleetEvents(s, { afterSeconds: this.#config.azure?.unwatchedAfterSeconds }, Date.now());
    const out = timelineHtml(timelineOf(s, events, now, range), canAct);
    this.#made.set(`${range}|${canAct}`, { key, html: out });
    return out;
  }

  /** live streams the timeline whenever it changes, until the page goes or the console closes. */
  async #live(req: IncomingMessage, res: ServerResponse, range: Range, canAct: boolean): Promise<void> {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
    res.write('retry: 2000\n\n');
    const gone = new AbortController();
    const stop = () => gone.abort();
    req.socket.once('close', stop);
    this.#closed.signal.addEventListener('abort', stop, { once: true });
    let [last, quietSince, stuckSince] = ['', Date.now(), null as number | null];
    try {
      // a session that ends (expired, its key taken out) ends the stream: the page asks again, and is refused
      while (!gone.signal.aborted && this.#sessions.who(req) !== null) {
        // a client that does not read what was sent is sent nothing more (each frame is the whole timeline:
        // the next one it reads is the latest); one that reads nothing for long is let go
        if (res.writableNeedDrain) {
          stuckSince ??= Date.now();
          // what it holds will never be read: the connection goes, and what was queued for it with it
          if (Date.now() - stuckSince >= this.#stuckMs) return void res.destroy();
          await sleep(LIVE_MS, gone.signal).catch(() => undefined);
          continue;
        }
        stuckSince = null;
        const now = await this.#timeline(range, canAct).catch((err: unknown) => unreadHtml(messageOf(err)));
        // the same timeline is the same string: the one made for every page of this range since the store was last read
        if (now !== last) {
          // every line ending an EventSource knows (CR, LF, CRLF) starts a data line: no text of a record ends a frame or starts a field
          res.write(
            `event: timeline\n${now
              .split(/\r\n|\r|\n/)
              .map((l) => `data: ${l}`)
              .join('\n')}\n\n`,
          );
          [last, quietSince] = [now, Date.now()];
        } else if (Date.now() - quietSince >= KEEPALIVE_MS) {
          res.write(': still here\n\n');
          quietSince = Date.now();
        }
        await sleep(LIVE_MS, gone.signal).catch(() => undefined);
      }
    } finally {
      req.socket.off('close', stop);
      this.#closed.signal.removeEventListener('abort', stop);
      res.end();
    }
  }

  async #event(res: ServerResponse, url: URL, person: Person): Promise<void> {
    const e = await pendingEvent(
      { config: this.#config, reader: this.#reader },
      url.searchParams.get('vm') ?? '',
      url.searchParams.get('id') ?? '',
    );
    return html(res, 200, eventPage(e, person.role === 'approve'));
  }
}
