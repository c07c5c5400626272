/** The client side of the daemon's control channel (control.ts): one JSON request over its socket or pipe, through undici. */
import { lstatSync } from 'node:fs';
import { BridgeError } from '../lib/errors.ts';
import { HttpClient, type HttpRequest } from '../lib/http-client.ts';
import { controlPath, ownerOf } from './server.ts';

/** ControlImpostor: the socket is not the daemon's (another user's): nothing is sent to it. */
export class ControlImpostor extends BridgeError<'CONTROL_IMPOSTOR'> {
  constructor(message: string) {
    super('CONTROL_IMPOSTOR', message);
  }
}

/**
 * checkOwner: the socket at `path` belongs to the daemon's user (`uid`, the owner of its state)
 * or to root; anything else was put there by someone else, and is never talked to.
 */
export function checkOwner(path: string, uid: number): void {
  let st;
  try {
    st = lstatSync(path);
  } catch {
    return; // nothing there: connecting says so
  }
  if (!st.isSocket()) throw new ControlImpostor(`${path} is not a socket: not the daemon's control channel`);
  if (st.uid !== uid && st.uid !== 0)
    throw new ControlImpostor(
      `${path} belongs to uid ${st.uid}, not to the daemon's user (uid ${uid}, who owns its state): not talking to it`,
    );
}

/** The most of an answer read: a drill's report is a few KiB. */
const MAX_ANSWER_BYTES = 1024 * 1024;

/** controlCall sends one request to the control channel of the daemon whose state is at `statePath`, and reads its JSON answer. */
export async function controlCall(
  statePath: string,
  method: HttpRequest['method'],
  url: string,
  body?: unknown,
  timeoutMs = 10_000,
): Promise<{ status: number; body: unknown }> {
  const owner = ownerOf(statePath);
  const path = controlPath(statePath, process.platform, owner);
  if (process.platform !== 'win32') checkOwner(path, owner);
  const text = body === undefined ? undefined : JSON.stringify(body);
  const client = new HttpClient({ proxy: 'none', socketPath: path, maxSockets: 1 });
  const deadline = AbortSignal.timeout(timeoutMs);
  try {
    const res = await client.request(`http://localhost${url}`, {
      method,
      headers: text === undefined ? {} : { 'content-type': 'application/json' },
      ...(text === undefined ? {} : { body: text }),
      signal: deadline,
      maxBodyBytes: MAX_ANSWER_BYTES,
      onOverflow: 'destroy',
    });
    return { status: res.status, body: JSON.parse(res.bytes.toString('utf8')) as unknown };
  } catch (err) {
    if (deadline.aborted) throw new Error(`the daemon did not answer within ${timeoutMs / 1000} s`, { cause: err });
    // what the connection said (ENOENT, ECONNREFUSED, EACCES) is what the caller tells the user
    throw err;
  } finally {
    client.close();
  }
}
