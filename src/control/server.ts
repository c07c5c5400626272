/**
 * The daemon's local control channel: HTTP on a Unix socket beside the state database (mode
 * 0600: only the daemon's own user and root can connect), or on Windows a named pipe named after
 * the state database. It is never on the network. What it serves is added by the features that
 * use it (drill/control.ts: the drills); the client is client.ts.
 */
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, rmSync, statSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { http } from '../lib/node-http.ts';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { sendJson } from '../lib/http-server.ts';
import { readBounded } from '../lib/http-body.ts';
import { messageOf } from '../lib/errors.ts';

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

/** A route's handler: the request and its response. */
export type ControlHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export interface ControlChannelOptions {
  readonly path: string;
  /** The state database the channel is named after (its socket beside it, or in a private folder). */
  readonly statePath: string;
  readonly logger: Logger;
}

/** ControlChannel: the server of the control channel; each feature that uses it adds its routes before start. */
export class ControlChannel {
  readonly #o: ControlChannelOptions;
  readonly #server: Server;
  readonly #routes = new Map<string, ControlHandler>();

  constructor(options: ControlChannelOptions) {
    this.#o = options;
    this.#server = http.createServer((req, res) => {
      this.#handle(req, res).catch((err: unknown) => sendJson(res, 500, { error: 'INTERNAL', message: messageOf(err) }));
    });
  }

  /** route serves `method url` with `handler`. */
  route(method: string, url: string, handler: ControlHandler): void {
    this.#routes.set(`${method} ${url}`, handler);
  }

  /** start listens; a channel that cannot listen is logged, and the daemon runs on without it. */
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
        { control: path, code: 'CONTROL_UNAVAILABLE', err: messageOf(err) },
        'no control channel: drills cannot be started',
      );
    }
  }

  async close(): Promise<void> {
    if (!this.#server.listening) return;
    this.#server.closeAllConnections();
    await new Promise<void>((ok) => this.#server.close(() => ok()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = req.url ?? '/';
    const handler = this.#routes.get(`${req.method} ${url}`);
    if (handler === undefined) return sendJson(res, 404, { error: 'NOT_FOUND', message: `no ${req.method} ${url} here` });
    await handler(req, res);
  }
}

/** readJson reads a request's JSON body of at most `limit` bytes; an answer already sent (413, 400) is null. */
export async function readJson(req: IncomingMessage, res: ServerResponse, limit: number): Promise<{ value: unknown } | null> {
  try {
    const body = await readBounded(req, limit, 'resume');
    if (body.overflow) {
      sendJson(res, 413, { error: 'BODY_TOO_LARGE', message: `bodies are limited to ${limit} bytes` });
      return null;
    }
    return { value: JSON.parse(body.bytes.toString('utf8')) };
  } catch {
    sendJson(res, 400, { error: 'MALFORMED', message: 'the body is not JSON' });
    return null;
  }
}
