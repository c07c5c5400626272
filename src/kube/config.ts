/**
 * Where the Kubernetes API is and who we are to it, read as client-go reads it: a kubeconfig
 * file when one is named, else the in-cluster service account. Nothing is asked of the network
 * here; client.ts makes the requests.
 *
 * From a kubeconfig: the current context (or the only one), its cluster (`server`,
 * `certificate-authority[-data]`, `insecure-skip-tls-verify`, `tls-server-name`, `proxy-url`) and
 * its user (`token`, `tokenFile`, `client-certificate[-data]` with `client-key[-data]`,
 * `username`/`password`, or an `exec` credential plugin such as kubelogin: exec.ts). Relative
 * paths are relative to the kubeconfig's folder. What kubectl refuses is refused here too, by its
 * key and before any request: a CA with insecure-skip-tls-verify, an exec plugin its validation
 * refuses; and so is what this client cannot do as kubectl does, rather than done otherwise: a
 * proxy-url other than http:// or https:// (a socks5 proxy would otherwise be passed by), the
 * legacy `auth-provider` plugins.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { KubeConfigError } from './errors.ts';
import { clusterExtension, execOf, type ExecPlugin } from './exec.ts';

export { NOT_CONFIGURED } from '../lib/errors.ts';

/** The service account's folder in every pod. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface KubeTarget {
  /** https://host:port, no trailing slash. */
  readonly server: string;
  readonly ca?: string;
  readonly insecure: boolean;
  readonly serverName?: string;
  readonly proxy?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly token?: string;
  /** A file holding the token, read again as it rotates (a projected service account token). */
  readonly tokenFile?: string;
  readonly basic?: { readonly username: string; readonly password: string };
  readonly exec?: ExecPlugin;
  /** The context's namespace, or the service account's. */
  readonly namespace?: string;
}

type Entry<T> = { name?: unknown } & T;
type Cluster = Record<string, unknown>;
type User = Record<string, unknown> & { exec?: Record<string, unknown> };

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const b64 = (v: unknown): string | undefined => (str(v) === undefined ? undefined : Buffer.from(v as string, 'base64').toString('utf8'));

function named<T>(list: unknown, name: string, what: string, file: string): T {
  const found = (Array.isArray(list) ? (list as Entry<Record<string, unknown>>[]) : []).find((e) => e?.name === name);
  const body = found?.[what];
  if (body === undefined || body === null || typeof body !== 'object') throw new KubeConfigError(`${file}: no ${what} named "${name}"`);
  return body as T;
}

/** fromKubeconfig reads a kubeconfig file's current context. */
export function fromKubeconfig(file: string): KubeTarget {
  let doc: Record<string, unknown>;
  try {
    doc = (parseYaml(readFileSync(file, 'utf8')) ?? {}) as Record<string, unknown>;
  } catch (err) {
    throw new KubeConfigError(`${file}: ${(err as Error).message}`);
  }
  const contexts = Array.isArray(doc.contexts) ? (doc.contexts as Entry<Record<string, unknown>>[]) : [];
  const current = str(doc['current-context']) ?? (contexts.length === 1 ? str(contexts[0]?.name) : undefined);
  if (current === undefined) throw new KubeConfigError(`${file}: no current-context`);
  const context = named<Record<string, unknown>>(doc.contexts, current, 'context', file);
  const cluster = named<Cluster>(doc.clusters, String(context.cluster), 'cluster', file);
  const user: User = str(context.user) === undefined ? {} : named<User>(doc.users, String(context.user), 'user', file);
  const dir = dirname(file);
  const path = (p: unknown) => (str(p) === undefined ? undefined : isAbsolute(p as string) ? (p as string) : join(dir, p as string));
  const read = (p: unknown) => {
    const at = path(p);
    if (at === undefined) return undefined;
    try {
      return readFileSync(at, 'utf8');
    } catch (err) {
      throw new KubeConfigError(`${file}: cannot read ${at}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  };
  const clusterAt = `${file}: cluster "${String(context.cluster)}"`;
  const server = str(cluster.server);
  if (server === undefined) throw new KubeConfigError(`${clusterAt} has no server`);
  if (user['auth-provider'] !== undefined)
    throw new KubeConfigError(
      `${file}: user "${String(context.user)}" uses an auth-provider plugin, which Kubernetes removed; use an exec plugin (kubelogin convert-kubeconfig)`,
    );
  const insecure = cluster['insecure-skip-tls-verify'] === true;
  const caKey = str(cluster['certificate-authority-data']) !== undefined ? 'certificate-authority-data' : 'certificate-authority';
  const ca = b64(cluster['certificate-authority-data']) ?? read(cluster['certificate-authority']);
  // as kubectl: "specifying a root certificates file with the insecure flag is not allowed"
  if (insecure && ca !== undefined)
    throw new KubeConfigError(
      `${clusterAt}: ${caKey} and insecure-skip-tls-verify are both set: a CA is of no use without verification; keep one`,
    );
  const proxy = proxyOf(str(cluster['proxy-url']), clusterAt);
  const serverName = str(cluster['tls-server-name']);
  const exec = user.exec;
  const username = str(user.username);
  return {
    server: server.replace(/\/+$/, ''),
    ...opt('ca', ca),
    insecure,
    ...opt('serverName', serverName),
    ...opt('proxy', proxy),
    ...opt('cert', b64(user['client-certificate-data']) ?? read(user['client-certificate'])),
    ...opt('key', b64(user['client-key-data']) ?? read(user['client-key'])),
    ...opt('token', str(user.token)),
    ...opt('tokenFile', path(user.tokenFile)),
    ...(username === undefined ? {} : { basic: { username, password: str(user.password) ?? '' } }),
    ...(exec === undefined || exec === null
      ? {}
      : {
          exec: execOf(exec, `${file}: user "${String(context.user)}"`, dir, {
            server,
            ...opt('tls-server-name', serverName),
            ...(insecure ? { 'insecure-skip-tls-verify': true } : {}),
            ...opt('certificate-authority-data', ca === undefined ? undefined : Buffer.from(ca).toString('base64')),
            ...opt('proxy-url', proxy),
            ...opt('config', clusterExtension(cluster)),
          }),
        }),
    ...opt('namespace', str(context.namespace)),
  };
}

/**
 * proxyOf checks a cluster's proxy-url: what the HTTP client can go through (http:// and https://
 * proxies, HTTPS tunnelled with CONNECT), or a refusal; kubectl also speaks socks5, which this
 * client does not, so such a kubeconfig is refused rather than its proxy passed by. The proxy's
 * credentials are never repeated in a message.
 */
function proxyOf(raw: string | undefined, where: string): string | undefined {
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new KubeConfigError(`${where}: proxy-url is not a URL`);
  }
  const scheme = url.protocol.slice(0, -1);
  if (scheme !== 'http' && scheme !== 'https')
    throw new KubeConfigError(
      `${where}: proxy-url ${url.protocol}//${url.host}: the scheme ${scheme} is not supported; the API server is reached through http:// and https:// proxies only (CONNECT)`,
    );
  if (url.hostname === '') throw new KubeConfigError(`${where}: proxy-url has no host`);
  return raw;
}

/** inCluster: the pod's service account, as every in-cluster client reads it; null outside a cluster. */
export function inCluster(dir = SERVICE_ACCOUNT_DIR): KubeTarget | null {
  const host = process.env.KUBERNETES_SERVICE_HOST;
  if (!host) return null;
  const port = process.env.KUBERNETES_SERVICE_PORT || '443';
  let ca: string | undefined;
  let namespace: string | undefined;
  try {
    ca = readFileSync(join(dir, 'ca.crt'), 'utf8');
  } catch {
    ca = undefined;
  }
  try {
    namespace = readFileSync(join(dir, 'namespace'), 'utf8').trim() || undefined;
  } catch {
    namespace = undefined;
  }
  return {
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    insecure: false,
    tokenFile: join(dir, 'token'),
    ...opt('ca', ca),
    ...opt('namespace', namespace),
  };
}

function opt<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
