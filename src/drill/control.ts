/**
 * The daemon's local control channel: HTTP on a Unix socket beside the state database (mode
 * 0600: only the daemon's own user and root can connect), or on Windows a named pipe named after
 * the state database. It is never on the network. It serves the drills:
 *
 *   POST /v1/drills            start one: {type, noticeSeconds, durationSeconds, source, sinks,
 *                              prepare, end}; 201 with the drill, 409 while one plays or a real
 *                              event is pending for this VM, 400 naming a bad field
 *   GET  /v1/drills/current    the drill and its report; 404 before the first
 *   POST /v1/drills/current/end  end the drill being played now
 */
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, rmSync, statSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { http } from '../lib/node-http.ts';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { ScheduledEvent } from '../imds/wire.ts';
import { sendJson } from '../lib/http-server.ts';
import { readBounded } from '../lib/http-body.ts';
import { DRILL_TYPES, DrillRefused, type Drills } from './drills.ts';
import type { DrillLog, DrillPreparation, DrillReport } from './report.ts';

/** A Unix socket's path is at most 107 bytes. */
const MAX_SOCKET_PATH = 100;

/**
 * controlPath: where the control channel of the daemon whose state is at `statePath` listens:
 * `<state>.sock` beside it (two daemons with their own state in one folder never meet). A path
 * too long for a socket gets one named after it in a private folder (controlFolder) that only the
 * daemon's user (`uid`, the owner of the state) may enter. On Windows a named pipe named after it.
 */
export function controlPath(statePath: string, platform: NodeJS.Platform = process.platform, uid: number = ownerOf(statePath)): string {
  const full = resolve(statePath);
  const id = createHash('sha256')
    .update(platform === 'win32' ? full.toLowerCase() : full)
    .digest('hex')
    .slice(0, 16);
  if (platform === 'win32') return `\\\\.\\pipe\\se-bridge-${id}`;
  const beside = `${full}.sock`;
  return Buffer.byteLength(beside) <= MAX_SOCKET_PATH ? beside : join(controlFolder(uid), `${id}.sock`);
}

/**
 * controlFolder: the private folder of a socket whose state path is too long: the service's
 * runtime folder (/run/se-bridge, the unit's RuntimeDirectory, mode 0700) when it exists, else
 * `se-bridge-<uid>` in the temporary folder. The daemon makes it 0700 and listens only when it is
 * its own, a real folder that no one else may enter; the client talks only to a socket of the
 * daemon's user. A name another local user took first is refused, never used.
 */
export function controlFolder(uid: number): string {
  return existsSync(RUNTIME_FOLDER) ? RUNTIME_FOLDER : join(tmpdir(), `se-bridge-${uid}`);
}

const RUNTIME_FOLDER = '/run/se-bridge';

/** ownerOf: the user who owns the state (the daemon's), or this process's user when there is none yet. */
export function ownerOf(statePath: string): number {
  try {
    return statSync(statePath).uid;
  } catch {
    return process.getuid?.() ?? 0;
  }
}

/** ensurePrivateFolder makes `dir` (0700) or checks that it is this user's own, real, private folder; it throws saying why not. */
function ensurePrivateFolder(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  const me = process.getuid?.();
  if (!st.isDirectory() || st.isSymbolicLink()) throw new Error(`${dir} is not a folder`);
  if (me !== undefined && st.uid !== me) throw new Error(`${dir} belongs to uid ${st.uid}, not to this daemon's user (uid ${me})`);
  if ((st.mode & 0o077) !== 0) throw new Error(`${dir} may be entered by others (mode ${(st.mode & 0o777).toString(8)}); it must be 0700`);
}

const MAX_BODY = 16 * 1024;

export const DrillBody = z.strictObject({
  type: z.enum(DRILL_TYPES).default('Reboot'),
  noticeSeconds: z
    .number()
    .min(0)
    .max(24 * 3600)
    .default(60),
  durationSeconds: z
    .number()
    .min(0)
    .max(24 * 3600)
    .default(30),
  source: z.enum(['Platform', 'User']).default('Platform'),
  sinks: z.array(z.string().min(1)).nullable().default(null),
  prepare: z.enum(['rehearse', 'real']).default('rehearse'),
  end: z.enum(['complete', 'cancel']).default('complete'),
});

export interface ControlOptions {
  readonly path: string;
  /** The state database the channel is named after (its socket beside it, or in a private folder). */
  readonly statePath: string;
  readonly drills: Drills;
  readonly log: DrillLog;
  /** This VM's name, and the events IMDS lists now. */
  readonly vmName: () => string;
  readonly listed: () => readonly ScheduledEvent[];
  /** The configured sinks' names. */
  readonly sinks: readonly string[];
  /** The least notice a drill with real preparations needs for each sink that says (SinkModule.realDrillNotice). */
  readonly realNotice?: readonly { readonly sink: string; readonly seconds: number; readonly why: string }[];
  readonly preparations: (eventId: string) => readonly DrillPreparation[];
  readonly logger: Logger;
}

export class ControlServer {
  readonly #o: ControlOptions;

  /** tooShort: why a real drill with this notice would hurry a preparation, or null when the notice covers them all. */
  #tooShort(noticeSeconds: number, sinks: readonly string[] | null): string | null {
    const needed = (this.#o.realNotice ?? []).filter((n) => sinks === null || sinks.includes(n.sink));
    const most = needed.reduce<(typeof needed)[number] | null>((a, n) => (a === null || n.seconds > a.seconds ? n : a), null);
    if (most === null || noticeSeconds >= most.seconds) return null;
    return `--prepare real needs --notice ${most.seconds}s at least for sink ${most.sink}: ${most.why}; with ${noticeSeconds} s it would be hurried (rehearse instead, or give more notice)`;
  }
  readonly #server: Server;

  constructor(options: ControlOptions) {
    this.#o = options;
    options.drills.onChange((d) => {
      if (d.ended !== null) options.logger.info({ eventId: d.eventId, ended: d.ended, code: 'DRILL_ENDED' }, 'drill ended');
    });
    this.#server = http.createServer((req, res) => {
      this.#handle(req, res).catch((err: unknown) => sendJson(res, 500, { error: 'INTERNAL', message: (err as Error).message }));
    });
  }

  /** start listens; a channel that cannot listen is logged, and the daemon runs on without drills. */
  async start(): Promise<void> {
    const path = this.#o.path;
    try {
      if (process.platform !== 'win32') {
        // a socket that is not beside the state lives in a private folder, or nowhere
        if (!path.endsWith(`${resolve(this.#o.statePath)}.sock`)) ensurePrivateFolder(dirname(path));
        // the single-instance lock is held: a socket left here is a dead daemon's
        rmSync(path, { force: true });
      }
      await new Promise<void>((ok, fail) => {
        this.#server.once('error', fail);
        this.#server.listen(path, () => ok());
      });
      if (process.platform !== 'win32') chmodSync(path, 0o600);
      this.#o.logger.info({ control: path }, 'control channel listening (drills)');
    } catch (err) {
      this.#o.logger.warn(
        { control: path, code: 'CONTROL_UNAVAILABLE', err: (err as Error).message },
        'no control channel: drills cannot be started',
      );
    }
  }

  async close(): Promise<void> {
    if (!this.#server.listening) return;
    this.#server.closeAllConnections();
    await new Promise<void>((ok) => this.#server.close(() => ok()));
  }

  report(): DrillReport | null {
    const d = this.#o.drills.current();
    return d === null ? null : this.#o.log.report(d, this.#o.preparations(d.eventId));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = req.url ?? '/';
    if (req.method === 'GET' && url === '/v1/drills/current') {
      const report = this.report();
      return report === null
        ? sendJson(res, 404, { error: 'NO_DRILL', message: 'no drill was played since the daemon started' })
        : sendJson(res, 200, report);
    }
    if (req.method === 'POST' && url === '/v1/drills/current/end') {
      const d = this.#o.drills.endNow();
      return d === null ? sendJson(res, 404, { error: 'NO_DRILL', message: 'no drill is being played' }) : sendJson(res, 200, { drill: d });
    }
    if (req.method === 'POST' && url === '/v1/drills') return this.#start(req, res);
    sendJson(res, 404, { error: 'NOT_FOUND', message: `no ${req.method} ${url} here` });
  }

  async #start(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw: unknown;
    try {
      const body = await readBounded(req, MAX_BODY, 'resume');
      if (body.overflow) return sendJson(res, 413, { error: 'BODY_TOO_LARGE', message: `bodies are limited to ${MAX_BODY} bytes` });
      raw = JSON.parse(body.bytes.toString('utf8'));
    } catch {
      return sendJson(res, 400, { error: 'MALFORMED', message: 'the body is not JSON' });
    }
    const parsed = DrillBody.safeParse(raw);
    if (!parsed.success) {
      const i = parsed.error.issues[0]!;
      return sendJson(res, 400, { error: 'MALFORMED', message: `${i.path.join('.') || '(body)'}: ${i.message}` });
    }
    const b = parsed.data;
    const unknown = (b.sinks ?? []).filter((s) => !this.#o.sinks.includes(s));
    if (unknown.length > 0)
      return sendJson(res, 400, {
        error: 'UNKNOWN_SINK',
        message: `no sink is named ${unknown.join(', ')}; the sinks are ${this.#o.sinks.join(', ')}`,
      });
    // real preparations must be able to finish before the drill's NotBefore: refused up front, not hurried
    const short = b.prepare === 'real' ? this.#tooShort(b.noticeSeconds, b.sinks) : null;
    if (short !== null) return sendJson(res, 409, { error: 'DRILL_REFUSED', message: short });
    try {
      const request = {
        type: b.type,
        noticeMs: Math.round(b.noticeSeconds * 1000),
        durationMs: Math.round(b.durationSeconds * 1000),
        source: b.source,
        sinks: b.sinks,
        prepare: b.prepare,
        end: b.end,
      };
      const vmName = this.#o.vmName();
      const listed = this.#o.listed();
      // begin the log first: the drill's first change is logged from its first read
      const drill = this.#o.drills.start(request, vmName, listed, (eventId) => this.#o.log.begin(eventId));
      this.#o.logger.info({ eventId: drill.eventId, ...request, code: 'DRILL_STARTED' }, 'drill started');
      sendJson(res, 201, { drill });
    } catch (err) {
      if (err instanceof DrillRefused) return sendJson(res, err.status, { error: 'DRILL_REFUSED', message: err.message });
      throw err;
    }
  }
}
