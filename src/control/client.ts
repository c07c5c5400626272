/** The client side of the daemon's control channel (control.ts): one JSON request over its socket or pipe. */
import { lstatSync } from 'node:fs';
import { BridgeError } from '../lib/errors.ts';
import { http } from '../lib/node-http.ts';
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

/** controlCall sends one request to the control channel of the daemon whose state is at `statePath`, and reads its JSON answer. */
export function controlCall(
  statePath: string,
  method: string,
  url: string,
  body?: unknown,
  timeoutMs = 10_000,
): Promise<{ status: number; body: unknown }> {
  const owner = ownerOf(statePath);
  const path = controlPath(statePath, process.platform, owner);
  if (process.platform !== 'win32') checkOwner(path, owner);
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        socketPath: path,
        method,
        path: url,
        headers: text === undefined ? {} : { 'content-type': 'application/json' },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
          } catch (err) {
            reject(err);
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`the daemon did not answer within ${timeoutMs / 1000} s`)));
    req.on('error', reject);
    req.end(text);
  });
}
