/**
 * KubeConnection: the few Kubernetes API calls the bridge makes (the kubernetes sink, the
 * Kubernetes health check, the fleet budget's Lease store), as JSON over the project's HTTP
 * client. It replaces a generated client whose models and HTTP stack cost about 45 MiB of
 * private memory for these calls (docs/performance.md).
 *
 * - Who we are: a bearer token, a token file read again every minute (a projected service
 *   account token rotates), a client certificate, basic credentials, or an exec credential plugin
 *   (kubelogin and the like), run as client-go runs it (KUBERNETES_EXEC_INFO on its environment,
 *   an ExecCredential on its output), its answer kept until its expirationTimestamp and asked
 *   again once after a 401.
 * - Every call has a deadline (30 s unless the caller's signal is sooner).
 * - An answer outside 2xx rejects with a KubeApiError carrying the status in `status` and the
 *   body (a Status) as text; a request that never got an answer rejects with an Error whose cause
 *   is the network's error.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { BridgeError } from '../lib/errors.ts';
import { HttpClient } from '../lib/http-client.ts';
import { fromKubeconfig, inCluster, KubeConfigError, type KubeTarget } from './config.ts';

export { KubeConfigError, NOT_CONFIGURED } from './config.ts';

const DEADLINE_MS = 30_000;
const EXEC_DEADLINE_MS = 60_000;
const TOKEN_FILE_MS = 60_000;
/** The most of one answer kept: a list of every Node of a large cluster fits. */
const MAX_BODY = 256 * 2 ** 20;

/** An API answer outside 2xx: `status` is the HTTP status, `body` the Status the server sent. */
export class KubeApiError extends BridgeError<'KUBE_CLIENT_STATUS'> {
  readonly status: number;
  readonly body: string;
  constructor(what: string, status: number, body: string) {
    super('KUBE_CLIENT_STATUS', `${what}: HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

export interface KubeRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The API path, e.g. /api/v1/nodes/NAME. */
  readonly path: string;
  readonly query?: Readonly<Record<string, string | undefined>>;
  readonly body?: unknown;
  /** Default application/json; a patch names its kind (application/strategic-merge-patch+json). */
  readonly contentType?: string;
  readonly signal?: AbortSignal;
}

interface Credential {
  readonly token?: string;
  readonly cert?: string;
  readonly key?: string;
  /** When it must be asked for again (ms since the epoch); Infinity when it said no end. */
  readonly until: number;
}

export class KubeConnection {
  readonly target: KubeTarget;
  #credential: Credential | null = null;
  #http: { client: HttpClient; cert: string | undefined } | null = null;

  private constructor(target: KubeTarget) {
    this.target = target;
  }

  /** open: the kubeconfig file, or the in-cluster service account; null when neither is there. */
  static open(kubeconfig: string | undefined, serviceAccountDir?: string): KubeConnection | null {
    const target = kubeconfig === undefined ? inCluster(serviceAccountDir) : fromKubeconfig(kubeconfig);
    return target === null ? null : new KubeConnection(target);
  }

  /** request: one call, its JSON answer parsed (undefined for an empty body). */
  async request<T>(r: KubeRequest): Promise<T> {
    const what = `${r.method} ${r.path}`;
    // as the official clients: plain HTTP only where the kubeconfig says it knows (a test cluster)
    if (this.target.server.startsWith('http://') && !this.target.insecure)
      throw new KubeConfigError(`${this.target.server}: HTTP protocol is not allowed when skipTLSVerify is not set`);
    const refreshable = this.target.exec !== undefined || this.target.tokenFile !== undefined;
    let res = await this.#send(r, what);
    if (res.status === 401 && refreshable) {
      this.#credential = null;
      res = await this.#send(r, what);
    }
    const text = res.bytes.toString('utf8');
    if (res.overflow) throw new Error(`${what}: the answer is larger than ${MAX_BODY / 2 ** 20} MiB`);
    if (res.status < 200 || res.status > 299) throw new KubeApiError(what, res.status, text);
    return (text === '' ? undefined : JSON.parse(text)) as T;
  }

  close(): void {
    this.#http?.client.close();
    this.#http = null;
  }

  async #send(r: KubeRequest, what: string) {
    const signal = AbortSignal.any([AbortSignal.timeout(DEADLINE_MS), ...(r.signal === undefined ? [] : [r.signal])]);
    const credential = await this.#credentials(signal);
    const t = this.target;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (credential.token !== undefined) headers.authorization = `Bearer ${credential.token}`;
    else if (t.basic !== undefined)
      headers.authorization = `Basic ${Buffer.from(`${t.basic.username}:${t.basic.password}`).toString('base64')}`;
    const body = r.body === undefined ? undefined : JSON.stringify(r.body);
    if (body !== undefined) headers['content-type'] = r.contentType ?? 'application/json';
    const query = Object.entries(r.query ?? {}).filter((e): e is [string, string] => e[1] !== undefined);
    const url = `${t.server}${r.path}${query.length === 0 ? '' : `?${new URLSearchParams(query).toString()}`}`;
    try {
      return await this.#client(credential).request(url, {
        method: r.method,
        headers,
        ...(body === undefined ? {} : { body }),
        signal,
        maxBodyBytes: MAX_BODY,
        onOverflow: 'destroy',
      });
    } catch (err) {
      const cause = err as { code?: string; message?: string };
      throw new Error(`${what}: ${cause.code ?? cause.message ?? String(err)}`, { cause: err });
    }
  }

  /** client: the HTTP client for this credential (a new one when an exec plugin hands out a new certificate). */
  #client(credential: Credential): HttpClient {
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

  async #credentials(signal: AbortSignal): Promise<Credential> {
    if (this.#credential !== null && Date.now() < this.#credential.until) return this.#credential;
    const t = this.target;
    if (t.exec !== undefined) this.#credential = await runExec(t, signal);
    else if (t.tokenFile !== undefined) this.#credential = { token: readToken(t.tokenFile), until: Date.now() + TOKEN_FILE_MS };
    else this.#credential = { ...(t.token === undefined ? {} : { token: t.token }), until: Infinity };
    return this.#credential;
  }
}

function readToken(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new KubeConfigError(`cannot read the token file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

interface ExecCredential {
  status?: { token?: string; clientCertificateData?: string; clientKeyData?: string; expirationTimestamp?: string };
}

/** runExec runs the exec credential plugin once, as client-go does, and reads its ExecCredential. */
async function runExec(t: KubeTarget, signal: AbortSignal): Promise<Credential> {
  const plugin = t.exec!;
  if (plugin.interactiveMode === 'Always')
    throw new KubeConfigError(`the exec plugin ${plugin.command} needs a terminal (interactiveMode: Always), which a daemon has not`);
  const info = { apiVersion: plugin.apiVersion, kind: 'ExecCredential', spec: { interactive: false } };
  const command = plugin.command.includes('/') && !isAbsolute(plugin.command) ? join(plugin.cwd, plugin.command) : plugin.command;
  const out = await new Promise<string>((resolve, reject) => {
    execFile(
      command,
      [...plugin.args],
      {
        env: { ...process.env, ...plugin.env, KUBERNETES_EXEC_INFO: JSON.stringify(info) },
        timeout: EXEC_DEADLINE_MS,
        maxBuffer: 2 ** 20,
        signal,
        windowsHide: true,
      },
      (err, stdout, stderr) => {
        if (err === null) resolve(stdout);
        else reject(new Error(`the exec plugin ${plugin.command} failed: ${(stderr.trim() || err.message).slice(0, 500)}`, { cause: err }));
      },
    );
  });
  let status: ExecCredential['status'];
  try {
    status = (JSON.parse(out) as ExecCredential).status;
  } catch {
    throw new KubeConfigError(`the exec plugin ${plugin.command} did not print an ExecCredential`);
  }
  const until = status?.expirationTimestamp === undefined ? Infinity : Date.parse(status.expirationTimestamp);
  if (status?.token !== undefined) return { token: status.token, until };
  if (status?.clientCertificateData !== undefined && status.clientKeyData !== undefined)
    return { cert: status.clientCertificateData, key: status.clientKeyData, until };
  throw new KubeConfigError(`the exec plugin ${plugin.command} gave neither a token nor a client certificate`);
}
