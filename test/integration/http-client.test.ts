/**
 * The HTTP client every outbound request goes through (src/lib/http-client.ts, on undici), over
 * the wire against peers on 127.0.0.1 and a Unix socket: undici's deadlines cut a slow header and
 * a stalled body without any signal; an endless body is cut at the limit; a redirect is answered,
 * never followed, so a credential never travels to where it points; CR, LF, NUL and a bad header
 * name are refused before anything is sent; HTTP_PROXY and NO_PROXY are honoured with `env`, and
 * ignored with `none`; a socket path takes every request whatever the URL's host.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient, type HttpRequest } from '../../src/lib/http-client.ts';
import { ForwardProxy } from '../../testkit/forward-proxy.ts';

/** What the peer was asked, by path, and how many bytes it wrote of an endless body before the client let go. */
const asked: { path: string; authorization: string | undefined }[] = [];
let endlessWritten = 0;
let endlessClosed = 0;

function handle(req: IncomingMessage, res: ServerResponse): void {
  asked.push({ path: req.url ?? '', authorization: req.headers.authorization });
  req.resume();
  const chunk = Buffer.alloc(16 * 1024, 'x');
  switch (req.url) {
    case '/slow-head':
      return; // never answers
    case '/stalled-body':
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('the start, then nothing');
      return;
    case '/endless': {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const more = (): void => {
        while (!res.destroyed && res.write(chunk)) endlessWritten += chunk.length;
        if (!res.destroyed) res.once('drain', more);
      };
      res.once('close', () => endlessClosed++);
      return more();
    }
    case '/redirect':
      res.writeHead(302, { location: '/stolen' });
      return void res.end();
    default:
      res.writeHead(200, { 'content-type': 'text/plain' });
      return void res.end(`answered ${req.url}`);
  }
}

const servers: Server[] = [];
async function listen(at: number | string): Promise<Server> {
  const server = createServer(handle);
  servers.push(server);
  await new Promise<void>((resolve) => (typeof at === 'number' ? server.listen(at, '127.0.0.1', resolve) : server.listen(at, resolve)));
  return server;
}

let base = '';
const clients: HttpClient[] = [];
const client = (o: ConstructorParameters<typeof HttpClient>[0]): HttpClient => {
  const c = new HttpClient(o);
  clients.push(c);
  return c;
};
const get = (c: HttpClient, path: string, o: Partial<HttpRequest> = {}) =>
  c.request(`${base}${path}`, { method: 'GET', maxBodyBytes: 4096, onOverflow: 'destroy', signal: AbortSignal.timeout(20_000), ...o });
const failure = (p: Promise<unknown>): Promise<{ code?: string; name?: string }> =>
  p.then(
    () => ({ code: 'it did not fail' }),
    (err: unknown) => err as { code?: string },
  );

beforeAll(async () => {
  const server = await listen(0);
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
  asked.length = 0;
});
afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

describe('the HTTP client on undici', () => {
  it("cuts a slow header and a stalled body by undici's own deadlines, with no signal of the caller's", async () => {
    const c = client({ proxy: 'none', timeoutMs: 300 });
    const request = { method: 'GET', maxBodyBytes: 4096, onOverflow: 'destroy' } as const;
    expect((await failure(c.request(`${base}/slow-head`, request))).code).toBe('UND_ERR_HEADERS_TIMEOUT');
    expect((await failure(c.request(`${base}/stalled-body`, request))).code).toBe('UND_ERR_BODY_TIMEOUT');
    // the caller's signal is a deadline too, said as an abort whatever its reason
    const slow = client({ proxy: 'none' });
    expect(await failure(get(slow, '/slow-head', { signal: AbortSignal.timeout(200) }))).toMatchObject({
      name: 'AbortError',
      code: 'ABORT_ERR',
    });
  });

  it('cuts an endless body at the limit: the kept bytes at most the limit, the connection let go', async () => {
    const kept = await get(client({ proxy: 'none' }), '/endless', { maxBodyBytes: 64 * 1024, onOverflow: 'destroy' });
    expect(kept.status).toBe(200);
    expect(kept.overflow).toBe(true);
    expect(kept.bytes.length).toBe(64 * 1024);
    // drained rather than dropped: read on only as far as undici's limit, then cut there
    const drained = await get(client({ proxy: 'none', maxResponseBytes: 1024 * 1024 }), '/endless', {
      maxBodyBytes: 1024,
      onOverflow: 'drain',
    });
    expect(drained).toMatchObject({ status: 200, overflow: true });
    expect(drained.bytes.length).toBe(1024);
    for (let i = 0; i < 200 && endlessClosed < 2; i++) await new Promise((r) => setTimeout(r, 25));
    expect(endlessClosed).toBe(2);
    // what the peer could write before it saw the end: the limits plus what the sockets buffer, never the body's whole (endless) length
    expect(endlessWritten).toBeLessThan(32 * 1024 * 1024);
  });

  it('answers a redirect as it is: the credential is never sent to where it points', async () => {
    const res = await get(client({ proxy: 'none' }), '/redirect', { headers: { authorization: 'Bearer secret' } });
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe('/stolen');
    expect(asked).toEqual([{ path: '/redirect', authorization: 'Bearer secret' }]);
  });

  it("sends a URL's user and password as Basic credentials, unless the caller gives its own", async () => {
    const c = client({ proxy: 'none' });
    const withUser = base.replace('http://', 'http://us%40er:p%3Ass@');
    await c.request(`${withUser}/with-user`, {
      method: 'GET',
      maxBodyBytes: 64,
      onOverflow: 'destroy',
      signal: AbortSignal.timeout(20_000),
    });
    await c.request(`${withUser}/own-header`, {
      method: 'GET',
      headers: { authorization: 'Bearer mine' },
      maxBodyBytes: 64,
      onOverflow: 'destroy',
      signal: AbortSignal.timeout(20_000),
    });
    expect(asked).toEqual([
      { path: '/with-user', authorization: `Basic ${Buffer.from('us@er:p:ss').toString('base64')}` },
      { path: '/own-header', authorization: 'Bearer mine' },
    ]);
  });

  it('refuses CR, LF and NUL in a header value and a header name that is no token, sending nothing, and goes on sending', async () => {
    // more refusals than the client has connections: undici's pool does not count a refused request as a connection in use
    const c = client({ proxy: 'none', maxSockets: 2 });
    const refused: [Record<string, string>, string][] = [
      [{ 'x-a': 'v\r\nx-b: injected' }, 'UND_ERR_INVALID_ARG'],
      [{ 'x-a': 'v\nx' }, 'UND_ERR_INVALID_ARG'],
      [{ 'x-a': 'v\0x' }, 'UND_ERR_INVALID_ARG'],
      [{ 'bad name': 'v' }, 'UND_ERR_INVALID_ARG'],
      [{ 'x-a:': 'v' }, 'UND_ERR_INVALID_ARG'],
    ];
    for (const [headers, code] of refused)
      expect((await failure(get(c, '/refused', { headers }))).code, JSON.stringify(headers)).toBe(code);
    // the client still works, and the peer saw only this request
    expect((await get(c, '/fine')).status).toBe(200);
    expect(asked.map((a) => a.path)).toEqual(['/fine']);
  });

  it('honours HTTP_PROXY and NO_PROXY with `env`, and ignores them with `none`', async () => {
    const proxy = await new ForwardProxy().start();
    const saved = {
      HTTP_PROXY: process.env.HTTP_PROXY,
      NO_PROXY: process.env.NO_PROXY,
      http_proxy: process.env.http_proxy,
      no_proxy: process.env.no_proxy,
    };
    try {
      delete process.env.http_proxy;
      delete process.env.no_proxy;
      process.env.HTTP_PROXY = proxy.url;
      process.env.NO_PROXY = '';
      expect((await get(client({ proxy: 'env' }), '/via-proxy')).status).toBe(200);
      expect(proxy.requests.map((r) => r.target)).toEqual([new URL(base).host]);
      expect((await get(client({ proxy: 'none' }), '/direct')).status).toBe(200);
      process.env.NO_PROXY = '127.0.0.1';
      expect((await get(client({ proxy: 'env' }), '/not-proxied')).status).toBe(200);
      expect(proxy.requests).toHaveLength(1);
      expect(asked.map((a) => a.path)).toEqual(['/via-proxy', '/direct', '/not-proxied']);
    } finally {
      for (const [k, v] of Object.entries(saved))
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      await proxy.close();
    }
  });

  it("sends every request to its socket path, whatever the URL's host", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'se-bridge-http-'));
    try {
      await listen(join(dir, 'control.sock'));
      const c = client({ proxy: 'none', socketPath: join(dir, 'control.sock') });
      const res = await c.request('http://localhost/v1/over-the-socket', {
        method: 'GET',
        maxBodyBytes: 4096,
        onOverflow: 'destroy',
        signal: AbortSignal.timeout(20_000),
      });
      expect(res.bytes.toString()).toBe('answered /v1/over-the-socket');
      const missing = client({ proxy: 'none', socketPath: join(dir, 'nobody.sock') });
      expect((await failure(missing.request('http://localhost/x', { method: 'GET', maxBodyBytes: 1, onOverflow: 'destroy' }))).code).toBe(
        'ENOENT',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
