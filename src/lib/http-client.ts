/**
 * HttpClient: every outbound HTTP request of the bridge and the relay, on undici (the design's
 * HTTP client). What undici does is undici's: keep-alive pools, proxies, TLS on the target's
 * connection, its deadlines for the connection, the headers and the body, the most of an answer
 * it reads, redirects left unfollowed. What stays here is the shape every caller shares.
 *
 * - One keep-alive dispatcher per client, a few connections per origin, shared by every request
 *   of that client; an idle connection is closed after `keepAliveMs`.
 * - Proxies: `none` is a plain `Agent` that never uses one, whatever the environment says (IMDS
 *   must never be reached through a proxy); `env` is an `EnvHttpProxyAgent` (HTTP_PROXY,
 *   HTTPS_PROXY, NO_PROXY); a URL is a `ProxyAgent`. Plain HTTP goes to the proxy in absolute
 *   form, HTTPS through a CONNECT tunnel with TLS verified end to end.
 * - TLS settings (`ca`, `systemRoots`, `rejectUnauthorized`, a client certificate, `serverName`) go
 *   to the target's connector, direct or through a tunnel. undici loads node:tls only for the
 *   first https connection, so a bridge that speaks only plain HTTP never loads it.
 * - Deadlines: the caller's signal bounds the whole request; undici's own `connect` timeout,
 *   `headersTimeout` and `bodyTimeout` bound each phase even without one.
 * - The answer: undici reads at most `maxResponseBytes` of any body (`maxResponseSize`), and a
 *   request keeps at most `maxBodyBytes` of it; what is over is dropped as `onOverflow` says:
 *   `destroy` stops reading, `drain` reads on to the end (or to `maxResponseBytes`) so the
 *   connection is kept.
 * - Failures reject with undici's error, whose `code` (ECONNREFUSED, UND_ERR_SOCKET,
 *   UND_ERR_HEADERS_TIMEOUT, UND_ERR_INVALID_ARG for a header it refuses to send, ...) says what
 *   happened; an aborted request rejects with an `AbortError` whose `code` is `ABORT_ERR`,
 *   whatever the signal's reason was.
 *
 * undici parses HTTP with WebAssembly; the bin and the executable run with `--liftoff-only`,
 * which keeps that code in V8's baseline compiler (docs/performance.md has what it saves).
 */
import type { Dispatcher } from 'undici';
import { readBounded, type BoundedBody } from './http-body.ts';
import type { HttpClientOptions } from './undici-dispatcher.ts';

export type { HttpClientOptions } from './undici-dispatcher.ts';

export type HttpHeaders = Record<string, string | string[] | undefined>;

export interface HttpRequest {
  readonly method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly headers?: Record<string, string>;
  readonly body?: string | Buffer;
  readonly signal?: AbortSignal;
  /** The most of the answer's body that is kept. */
  readonly maxBodyBytes: number;
  readonly onOverflow: 'destroy' | 'drain';
}

export interface HttpResponse extends BoundedBody {
  readonly status: number;
  /** Lower-case names. */
  readonly headers: HttpHeaders;
}

function abortError(cause: unknown): Error {
  const err = new Error('the request was aborted', { cause });
  err.name = 'AbortError';
  (err as Error & { code: string }).code = 'ABORT_ERR';
  return err;
}

/**
 * basicAuthOf: the URL's user and password (`https://user:secret@host/`) as Basic credentials, as
 * browsers and Node's own client send them; undici takes the origin and the path alone. A header
 * of the caller's own takes precedence.
 */
function basicAuthOf(url: URL): Record<string, string> {
  if (url.username === '' && url.password === '') return {};
  const pair = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  return { authorization: `Basic ${Buffer.from(pair).toString('base64')}` };
}

/** An answer read as it comes (stream): the caller reads its body to the end or destroys it. */
export interface HttpStream {
  readonly status: number;
  /** Lower-case names. */
  readonly headers: HttpHeaders;
  readonly body: AsyncIterable<Buffer> & { destroy(): unknown };
}

/** undici's error for an answer past `maxResponseSize`. */
const tooLarge = (err: unknown): boolean => (err as { code?: unknown } | null)?.code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE';

export class HttpClient {
  readonly #options: HttpClientOptions;
  /** The dispatcher, made at the first request (undici is loaded only then). */
  #dispatcher: Promise<Dispatcher> | null = null;

  constructor(options: HttpClientOptions) {
    this.#options = options;
  }

  #dispatch(): Promise<Dispatcher> {
    return (this.#dispatcher ??= import('./undici-dispatcher.ts').then((u) => u.dispatcherFor(this.#options)));
  }

  async request(url: string | URL, req: HttpRequest): Promise<HttpResponse> {
    try {
      const res = await this.#send(url, req);
      const read = await readBounded(res.body, req.maxBodyBytes, req.onOverflow, tooLarge);
      return { status: res.statusCode, headers: res.headers, ...read };
    } catch (err) {
      throw req.signal?.aborted ? abortError(err) : err;
    }
  }

  /**
   * stream: a request whose answer is read as it comes (a Kubernetes watch), with no bound on its
   * whole body: the caller bounds what it keeps of it, and reads it to its end or destroys it. The
   * caller's signal ends it; undici's bodyTimeout ends it when the peer sends nothing for that long.
   */
  async stream(url: string | URL, req: Omit<HttpRequest, 'maxBodyBytes' | 'onOverflow'>): Promise<HttpStream> {
    try {
      const res = await this.#send(url, req);
      return { status: res.statusCode, headers: res.headers, body: res.body };
    } catch (err) {
      throw req.signal?.aborted ? abortError(err) : err;
    }
  }

  async #send(url: string | URL, req: Omit<HttpRequest, 'maxBodyBytes' | 'onOverflow'>): Promise<Dispatcher.ResponseData> {
    const target = typeof url === 'string' ? new URL(url) : url;
    if (req.signal?.aborted) throw abortError(req.signal.reason);
    const dispatcher = await this.#dispatch();
    return await dispatcher.request({
      origin: target.origin,
      path: `${target.pathname}${target.search}`,
      method: req.method,
      headers: Object.keys(req.headers ?? {}).some((h) => h.toLowerCase() === 'authorization')
        ? (req.headers ?? {})
        : { ...basicAuthOf(target), ...req.headers },
      body: req.body ?? null,
      signal: req.signal ?? null,
    });
  }

  /** close lets requests under way finish, then drops the connections. */
  close(): void {
    void this.#dispatcher?.then((d) => d.close()).catch(() => undefined);
  }
}
