/** The client side of the daemon's control channel (control.ts): one JSON request over its socket or pipe. */
import { http } from '../lib/node-http.ts';

/** controlCall sends one request to a daemon's control channel and reads its JSON answer. */
export function controlCall(
  path: string,
  method: string,
  url: string,
  body?: unknown,
  timeoutMs = 10_000,
): Promise<{ status: number; body: unknown }> {
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
