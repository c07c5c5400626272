/**
 * KubeConnection: the few Kubernetes API calls the bridge makes (the kubernetes sink, the
 * Kubernetes health check, the fleet budget's Lease store), as JSON over the project's HTTP
 * client. It replaces a generated client whose models and HTTP stack cost about 45 MiB of
 * private memory for these calls (docs/performance.md).
 *
 * - Who we are: a bearer token, a token file read again every minute (a projected service
 *   account token rotates), a client certificate, basic credentials, or an exec credential plugin
 *   (exec.ts), its answer kept until its expirationTimestamp and asked again once after a 401;
 *   calls that need a credential at the same time share one run of the plugin, as client-go's
 *   lock makes them.
 * - Every call has a deadline (30 s unless the caller's signal is sooner; "no answer within 30 s"
 *   when it ends a call) and says who it is
 *   (User-Agent: se-bridge/<version> (<os>/<arch>), as client-go's default names kubectl).
 * - Every answer is bounded before it is decoded: an object at 3 MiB (the API server takes no
 *   request body larger), a page of a list at 8 MiB; a list is read 50 items at a time (`limit`
 *   and `continue`, as kubectl's chunks; fewer when a page is over its bound), each page folded
 *   into what the caller keeps, so a list of every Node of a large cluster never sits in memory
 *   whole.
 * - An answer outside 2xx rejects with a KubeApiError carrying the status and the body (a
 *   Status) as text; an answer over its bound with a KubeTooLargeError; a request that never got
 *   an answer with an Error whose cause is the network's error.
 */
import { z } from 'zod';
import { HttpClient, type HttpRequest, type HttpStream } from '../lib/http-client.ts';
import { readBounded } from '../lib/http-body.ts';
import { VERSION } from '../lib/version.ts';
import { fromKubeconfig, inCluster, type KubeTarget } from './config.ts';
import { KubeApiError, KubeConfigError, KubeTooLargeError, KubeUnreadableError } from './errors.ts';
import { runExec, type ExecCredential } from './exec.ts';
import { readToken, untilAborted } from './credential-wait.ts';

export { NOT_CONFIGURED } from './config.ts';
export { KubeApiError, KubeConfigError, KubeExecError, KubeTooLargeError, KubeUnreadableError } from './errors.ts';

const DEADLINE_MS = 30_000;
const EXEC_DEADLINE_MS = 60_000;
const TOKEN_FILE_MS = 60_000;
/** The most of one object's answer kept: the API server takes no request body over 3 MiB (etcd no object over 1.5). */
const MAX_OBJECT = 3 * 2 ** 20;
/** The most of one page of a list kept. */
const MAX_PAGE = 8 * 2 ** 20;
/**
 * Items per page unless the caller says: kubectl asks 500, but a Node is 10 to 20 KiB and what a
 * page costs while it is decoded is several times its size (bench/kube-list.ts: 50 a page held
 * 10 to 22 MiB at the peak for a list of 40 MiB, 100 about 23, 200 about 31).
 */
const PAGE_ITEMS = 50;
/** How often a list starts again when its continue token has expired (410) before giving up. */
const RESTARTS = 2;
/** The most pages one list reads (a million items at 50 a page): a server that never ends a list is not read for ever. */
const MAX_PAGES = 20_000;
const USER_AGENT = `se-bridge/${VERSION} (${process.platform}/${process.arch})`;

export interface KubeRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The API path, e.g. /api/v1/nodes/NAME. */
  readonly path: string;
  readonly query?: Readonly<Record<string, string | undefined>>;
  readonly body?: unknown;
  /** Default application/json; a patch names its kind (application/strategic-merge-patch+json). */
  readonly contentType?: string;
  readonly signal?: AbortSignal | undefined;
}

export interface KubeListRequest {
  /** The collection's path, e.g. /api/v1/pods. */
  readonly path: string;
  /** Selectors (labelSelector, fieldSelector); limit and continue are the client's. */
  readonly query?: Readonly<Record<string, string | undefined>>;
  /** Items per page (default 50). */
  readonly limit?: number;
  /** The most pages read before the list is given up as one that never ends (default 20,000). */
  readonly maxPages?: number;
  readonly signal?: AbortSignal | undefined;
}

/** ListFold: what a caller keeps of a list, page by page; `start` again when the list starts again. */
export interface ListFold<T, A> {
  start(): A;
  /** One page's items, and the resourceVersion of the list (a watch starts from it: watch.ts). */
  page(kept: A, items: readonly T[], resourceVersion?: string): A;
  /** True when the rest of the list is not needed (what was looked for is found). */
  done?(kept: A): boolean;
}

export interface KubeOptions {
  /** The service account's folder (default the pod's). */
  readonly serviceAccountDir?: string;
  /** How long one call may wait for its answer (default 30 s; the caller's signal may end it sooner). */
  readonly deadlineMs?: number;
  /** How long an exec credential plugin may run (default 60 s). */
  readonly execDeadlineMs?: number;
}

/** A list's envelope, as every List kind has it; the items are the caller's to read. */
const ListPage = z.object({
  metadata: z.object({ continue: z.string().optional(), resourceVersion: z.string().optional() }).nullish(),
  items: z.array(z.unknown()).nullable(),
});

export class KubeConnection {
  readonly target: KubeTarget;
  readonly #execDeadlineMs: number;
  readonly #deadlineMs: number;
  #credential: ExecCredential | null = null;
  /** The credential being fetched (an exec plugin's run), shared by every call that waits for one. */
  #pending: Promise<ExecCredential> | null = null;
  #http: { client: HttpClient; cert: string | undefined } | null = null;

  private constructor(target: KubeTarget, options: KubeOptions) {
    this.target = target;
    this.#execDeadlineMs = options.execDeadlineMs ?? EXEC_DEADLINE_MS;
    this.#deadlineMs = options.deadlineMs ?? DEADLINE_MS;
  }

  /** open: the kubeconfig file, or the in-cluster service account; null when neither is there. */
  static open(kubeconfig: string | undefined, options: KubeOptions = {}): KubeConnection | null {
    const target = kubeconfig === undefined ? inCluster(options.serviceAccountDir) : fromKubeconfig(kubeconfig);
    return target === null ? null : new KubeConnection(target, options);
  }

  /** request: one call about one object, its JSON answer parsed (undefined for an empty body). */
  async request<T>(r: KubeRequest): Promise<T> {
    return (await this.#call(r, MAX_OBJECT)) as T;
  }

  /**
   * list: a collection read a page at a time, each page given to `fold`; started again (twice at
   * most) when a continue token has expired, and a page over 8 MiB asked again with an eighth of
   * its items (down to one: only an item over 8 MiB fails).
   */
  async list<T, A>(r: KubeListRequest, fold: ListFold<T, A>): Promise<A> {
    let limit = r.limit ?? PAGE_ITEMS;
    for (let restarts = 0; ; restarts++) {
      let kept = fold.start();
      let token: string | undefined;
      try {
        for (let pages = 0; ; pages++) {
          if (pages >= (r.maxPages ?? MAX_PAGES))
            throw new KubeUnreadableError(`GET ${r.path}: the list did not end within ${pages} pages`);
          const page = await this.#page(r, limit, token);
          limit = page.limit;
          kept = fold.page(kept, page.items as T[], page.rv);
          token = page.next;
          if (token === undefined || fold.done?.(kept) === true) return kept;
        }
      } catch (err) {
        // 410 Gone: the list's snapshot was compacted away between two pages; only a new list can go on
        if (token === undefined || !(err instanceof KubeApiError) || err.status !== 410 || restarts >= RESTARTS) throw err;
      }
    }
  }

  /** page: one page of a list from `token`, with the limit it was read at. */
  async #page(r: KubeListRequest, limit: number, token: string | undefined) {
    for (;;) {
      try {
        const query = { ...r.query, limit: String(limit), continue: token };
        const page = ListPage.safeParse(await this.#call({ method: 'GET', path: r.path, query, signal: r.signal }, MAX_PAGE));
        if (!page.success) throw new KubeUnreadableError(`GET ${r.path}: the answer is not a list`);
        const next = page.data.metadata?.continue || undefined;
        // a server that hands back the token it was given would be read for ever
        if (next !== undefined && next === token)
          throw new KubeUnreadableError(`GET ${r.path}: the list gave back the same continue token`);
        return { items: page.data.items ?? [], next, limit, rv: page.data.metadata?.resourceVersion };
      } catch (err) {
        if (!(err instanceof KubeTooLargeError) || limit === 1) throw err;
        limit = Math.max(1, Math.floor(limit / 8));
      }
    }
  }

  close(): void {
    this.#http?.client.close();
    this.#http = null;
  }

  /** call: one request, asked again once after a 401 with a fresh credential; its JSON answer, bounded before it is decoded. */
  async #call(r: KubeRequest, maxBytes: number): Promise<unknown> {
    const what = `${r.method} ${r.path}`;
    const res = await this.#answered(r, this.#deadlineMs, (client, url, init) =>
      client.request(url, { ...init, maxBodyBytes: maxBytes, onOverflow: 'destroy' }),
    );
    if (res.overflow) throw new KubeTooLargeError(what, maxBytes);
    const text = res.bytes.toString('utf8');
    if (res.status < 200 || res.status > 299) throw new KubeApiError(what, res.status, text);
    if (text === '') return undefined;
    try {
      return JSON.parse(text);
    } catch {
      throw new KubeUnreadableError(`${what}: the answer is not JSON`);
    }
  }

  /**
   * stream: a request whose answer is read as it comes (a watch; watch.ts), asked again once after
   * a 401 with a fresh credential: its body, which the caller reads to its end or destroys; an
   * answer outside 2xx is a KubeApiError. `deadlineMs` bounds the whole call, body and all.
   */
  async stream(r: KubeRequest, deadlineMs: number): Promise<HttpStream['body']> {
    const res = await this.#answered(r, deadlineMs, async (client, url, init) => {
      const s = await client.stream(url, init);
      return { ...s, drop: () => s.body.destroy() };
    });
    if (res.status >= 200 && res.status <= 299) return res.body;
    const said = await readBounded(res.body, 64 * 1024, 'destroy');
    throw new KubeApiError(`${r.method} ${r.path}`, res.status, said.bytes.toString('utf8'));
  }

  /** answered: one request sent by `send`, and once more with a fresh credential after a 401 (`drop` lets go of the first answer). */
  async #answered<T extends { readonly status: number; readonly drop?: () => unknown }>(
    r: KubeRequest,
    deadlineMs: number,
    send: (client: HttpClient, url: string, init: Omit<HttpRequest, 'maxBodyBytes' | 'onOverflow'>) => Promise<T>,
  ): Promise<T> {
    // as the official clients: plain HTTP only where the kubeconfig says it knows (a test cluster)
    if (this.target.server.startsWith('http://') && !this.target.insecure)
      throw new KubeConfigError(`${this.target.server}: HTTP protocol is not allowed when skipTLSVerify is not set`);
    const refreshable = this.target.exec !== undefined || this.target.tokenFile !== undefined;
    let sent = await this.#send(r, deadlineMs, send);
    if (sent.res.status === 401 && refreshable) {
      sent.res.drop?.();
      // only the credential this call used is dropped: calls refused together fetch one new one
      if (this.#credential === sent.credential) this.#credential = null;
      sent = await this.#send(r, deadlineMs, send);
    }
    return sent.res;
  }

  async #send<T>(
    r: KubeRequest,
    deadlineMs: number,
    send: (client: HttpClient, url: string, init: Omit<HttpRequest, 'maxBodyBytes' | 'onOverflow'>) => Promise<T>,
  ) {
    const deadline = AbortSignal.timeout(deadlineMs);
    const signal = AbortSignal.any([deadline, ...(r.signal === undefined ? [] : [r.signal])]);
    const credential = await this.#credentials(signal);
    const t = this.target;
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': USER_AGENT };
    if (credential.token !== undefined) headers.authorization = `Bearer ${credential.token}`;
    else if (t.basic !== undefined)
      headers.authorization = `Basic ${Buffer.from(`${t.basic.username}:${t.basic.password}`).toString('base64')}`;
    const body = r.body === undefined ? undefined : JSON.stringify(r.body);
    if (body !== undefined) headers['content-type'] = r.contentType ?? 'application/json';
    const query = Object.entries(r.query ?? {}).filter((e): e is [string, string] => e[1] !== undefined);
    const url = `${t.server}${r.path}${query.length === 0 ? '' : `?${new URLSearchParams(query).toString()}`}`;
    try {
      const res = await send(this.#client(credential), url, { method: r.method, headers, ...(body === undefined ? {} : { body }), signal });
      return { res, credential };
    } catch (err) {
      const cause = err as { code?: string; message?: string };
      // the client's own deadline says so; the caller's signal, or the network, says what it was
      const said = deadline.aborted && r.signal?.aborted !== true ? `no answer within ${deadlineMs / 1000} s` : undefined;
      throw new Error(`${r.method} ${r.path}: ${said ?? cause.code ?? cause.message ?? String(err)}`, { cause: err });
    }
  }

  /** client: the HTTP client for this credential (a new one when an exec plugin hands out a new certificate). */
  #client(credential: ExecCredential): HttpClient {
    const cert = credential.cert ?? this.target.cert;
    if (this.#http !== null && this.#http.cert === cert) return this.#http.client;
    this.#http?.client.close();
    const t = this.target;
    const client = new HttpClient({
      proxy: t.proxy ?? 'none',
      // the cluster's CA alone, as kubectl trusts it; the system's roots when the kubeconfig names none
      ...(t.ca === undefined ? {} : { ca: t.ca, systemRoots: false }),
      ...(t.insecure ? { rejectUnauthorized: false } : {}),
      ...(cert === undefined ? {} : { cert, key: credential.key ?? t.key ?? '' }),
      ...(t.serverName === undefined ? {} : { serverName: t.serverName }),
    });
    this.#http = { client, cert };
    return client;
  }

  /** credentials: the credential in hand while it lasts, else one fetch that every waiting call shares. */
  async #credentials(signal: AbortSignal): Promise<ExecCredential> {
    const held = this.#credential;
    if (held !== null && Date.now() < held.until) return held;
    this.#pending ??= this.#fetch().finally(() => (this.#pending = null));
    return await untilAborted(this.#pending, signal);
  }

  async #fetch(): Promise<ExecCredential> {
    const t = this.target;
    this.#credential =
      t.exec !== undefined
        ? await runExec(t.exec, this.#execDeadlineMs)
        : t.tokenFile !== undefined
          ? { token: readToken(t.tokenFile), until: Date.now() + TOKEN_FILE_MS }
          : { ...(t.token === undefined ? {} : { token: t.token }), until: Infinity };
    return this.#credential;
  }
}
