/**
 * Where the Kubernetes API is and who we are to it, read as client-go reads it: a kubeconfig
 * file when one is named, else the in-cluster service account. Nothing is asked of the network
 * here; client.ts makes the requests.
 *
 * From a kubeconfig: the current context (or the only one), its cluster (`server`,
 * `certificate-authority[-data]`, `insecure-skip-tls-verify`, `tls-server-name`, `proxy-url`) and
 * its user (`token`, `tokenFile`, `client-certificate[-data]` with `client-key[-data]`,
 * `username`/`password`, or an `exec` credential plugin such as kubelogin). Relative paths are
 * relative to the kubeconfig's folder. The legacy `auth-provider` plugins are refused by name.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { parse as parseYaml } from 'yaml';

import { BridgeError } from '../lib/errors.ts';

export { NOT_CONFIGURED } from '../lib/errors.ts';

/** The service account's folder in every pod. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** An exec credential plugin (client.authentication.k8s.io). */
export interface ExecPlugin {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly apiVersion: string;
  /** The folder a relative command is found from (the kubeconfig's). */
  readonly cwd: string;
  readonly interactiveMode: string;
}

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

/** A kubeconfig that cannot be used: said before any request, so trying again cannot help. */
export class KubeConfigError extends BridgeError<'KUBE_CLIENT_CONFIG'> {
  constructor(message: string) {
    super('KUBE_CLIENT_CONFIG', message);
  }
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
  const server = str(cluster.server);
  if (server === undefined) throw new KubeConfigError(`${file}: cluster "${String(context.cluster)}" has no server`);
  if (user['auth-provider'] !== undefined)
    throw new KubeConfigError(
      `${file}: user "${String(context.user)}" uses an auth-provider plugin, which Kubernetes removed; use an exec plugin (kubelogin convert-kubeconfig)`,
    );
  const exec = user.exec;
  const username = str(user.username);
  return {
    server: server.replace(/\/+$/, ''),
    ...opt('ca', b64(cluster['certificate-authority-data']) ?? read(cluster['certificate-authority'])),
    insecure: cluster['insecure-skip-tls-verify'] === true,
    ...opt('serverName', str(cluster['tls-server-name'])),
    ...opt('proxy', str(cluster['proxy-url'])),
    ...opt('cert', b64(user['client-certificate-data']) ?? read(user['client-certificate'])),
    ...opt('key', b64(user['client-key-data']) ?? read(user['client-key'])),
    ...opt('token', str(user.token)),
    ...opt('tokenFile', path(user.tokenFile)),
    ...(username === undefined ? {} : { basic: { username, password: str(user.password) ?? '' } }),
    ...(exec === undefined || exec === null ? {} : { exec: execOf(exec, dir, file) }),
    ...opt('namespace', str(context.namespace)),
  };
}

function execOf(exec: Record<string, unknown>, cwd: string, file: string): ExecPlugin {
  const command = str(exec.command);
  if (command === undefined) throw new KubeConfigError(`${file}: the user's exec plugin has no command`);
  const env = Array.isArray(exec.env) ? (exec.env as { name?: unknown; value?: unknown }[]) : [];
  return {
    command,
    args: Array.isArray(exec.args) ? exec.args.map(String) : [],
    env: Object.fromEntries(env.filter((e) => str(e?.name) !== undefined).map((e) => [String(e.name), String(e.value ?? '')])),
    apiVersion: str(exec.apiVersion) ?? 'client.authentication.k8s.io/v1',
    cwd,
    interactiveMode: str(exec.interactiveMode) ?? 'IfAvailable',
  };
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
