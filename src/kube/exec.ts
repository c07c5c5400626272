/**
 * Exec credential plugins (kubelogin, aws eks get-token and the like), read from a kubeconfig's
 * user and run as client-go runs them:
 * https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins
 *
 * - The kubeconfig's `exec` is checked as client-go's validation checks it: a command, an
 *   `apiVersion` of client.authentication.k8s.io/v1 or v1beta1, an `interactiveMode` (required
 *   with v1; IfAvailable by default with v1beta1; Always refused, since a daemon has no terminal),
 *   a name for each env entry.
 * - The plugin gets KUBERNETES_EXEC_INFO: an ExecCredential whose spec says `interactive: false`
 *   and, with `provideClusterInfo: true`, the cluster (server, CA, TLS server name, proxy, and the
 *   cluster's `client.authentication.k8s.io/exec` extension as `config`).
 * - Its answer is parsed with a schema: kind ExecCredential, the same apiVersion as asked, a
 *   token or a certificate with its key, an RFC 3339 expirationTimestamp (a plugin that writes
 *   another is wrong, as client-go says; it is never taken as expired).
 * - Its stderr is not kept, logged or passed on: a plugin may print tokens or device codes there.
 * - It has a deadline; a plugin still running then is killed with its process group, so what it
 *   started goes too. Its output is bounded.
 */
import { spawn } from 'node:child_process';
import { isAbsolute, join } from 'node:path';
import { z } from 'zod';
import { KubeConfigError, KubeExecError } from './errors.ts';

const V1 = 'client.authentication.k8s.io/v1';
const API_VERSIONS = [V1, 'client.authentication.k8s.io/v1beta1'];
const MODES = ['Never', 'IfAvailable', 'Always'];
/** The cluster's extension whose value a plugin gets as spec.cluster.config. */
const CLUSTER_EXTENSION = 'client.authentication.k8s.io/exec';
/** The most of a plugin's output read: an ExecCredential with a certificate chain is a few KiB. */
const MAX_OUTPUT = 2 ** 20;

/** ExecCluster: the cluster as KUBERNETES_EXEC_INFO's spec.cluster carries it (clientauthentication Cluster). */
export interface ExecCluster {
  readonly server: string;
  readonly 'tls-server-name'?: string;
  readonly 'insecure-skip-tls-verify'?: boolean;
  /** Base64 of the CA's PEM. */
  readonly 'certificate-authority-data'?: string;
  readonly 'proxy-url'?: string;
  readonly config?: unknown;
}

export interface ExecPlugin {
  /** The command, a relative path made absolute from the kubeconfig's folder. */
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly apiVersion: string;
  readonly interactiveMode: string;
  readonly provideClusterInfo: boolean;
  readonly installHint?: string;
  readonly cluster: ExecCluster;
}

/** What a plugin handed out: a token, or a client certificate and key; `until` in ms since the epoch (Infinity: no end said). */
export interface ExecCredential {
  readonly token?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly until: number;
}

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** clusterExtension: a cluster's `client.authentication.k8s.io/exec` extension, when it has one. */
export function clusterExtension(cluster: Readonly<Record<string, unknown>>): unknown {
  const list = Array.isArray(cluster.extensions) ? (cluster.extensions as { name?: unknown; extension?: unknown }[]) : [];
  return list.find((e) => e?.name === CLUSTER_EXTENSION)?.extension;
}

/** execOf reads and checks a user's `exec`; `where` names the user in messages, `dir` is the kubeconfig's folder. */
export function execOf(exec: Record<string, unknown>, where: string, dir: string, cluster: ExecCluster): ExecPlugin {
  const refuse = (why: string): never => {
    throw new KubeConfigError(`${where}: exec: ${why}`);
  };
  const command = text(exec.command) ?? refuse('command must be specified');
  const apiVersion = text(exec.apiVersion) ?? refuse(`apiVersion must be specified (${API_VERSIONS.join(' or ')})`);
  if (!API_VERSIONS.includes(apiVersion)) refuse(`apiVersion "${apiVersion}" is not one of ${API_VERSIONS.join(', ')}`);
  const mode = text(exec.interactiveMode) ?? (apiVersion === V1 ? refuse(`interactiveMode must be specified for ${V1}`) : 'IfAvailable');
  if (!MODES.includes(mode)) refuse(`interactiveMode "${mode}" is not one of ${MODES.join(', ')}`);
  if (mode === 'Always')
    refuse(`interactiveMode Always needs a terminal, which a daemon has not (Never or IfAvailable; kubelogin convert-kubeconfig)`);
  const entries = Array.isArray(exec.env) ? (exec.env as { name?: unknown; value?: unknown }[]) : [];
  const env: Record<string, string> = {};
  entries.forEach((e, i) => (env[text(e?.name) ?? refuse(`env[${i}] has no name`)] = typeof e.value === 'string' ? e.value : ''));
  const hint = text(exec.installHint);
  return {
    // as client-go resolves it: a command with a path separator is relative to the kubeconfig's folder
    command: /[/\\]/.test(command) && !isAbsolute(command) ? join(dir, command) : command,
    args: Array.isArray(exec.args) ? exec.args.map(String) : [],
    env,
    apiVersion,
    interactiveMode: mode,
    provideClusterInfo: exec.provideClusterInfo === true,
    ...(hint === undefined ? {} : { installHint: hint }),
    cluster,
  };
}

const Answer = z.object({
  apiVersion: z.string(),
  kind: z.literal('ExecCredential'),
  status: z
    .object({
      token: z.string().optional(),
      clientCertificateData: z.string().optional(),
      clientKeyData: z.string().optional(),
      expirationTimestamp: z.iso.datetime({ offset: true }).nullish(),
    })
    .nullish(),
});

/** runExec runs the plugin once and reads its ExecCredential. */
export async function runExec(plugin: ExecPlugin, deadlineMs: number): Promise<ExecCredential> {
  const info = {
    apiVersion: plugin.apiVersion,
    kind: 'ExecCredential',
    spec: { interactive: false, ...(plugin.provideClusterInfo ? { cluster: plugin.cluster } : {}) },
  };
  const out = await run(plugin, { ...process.env, ...plugin.env, KUBERNETES_EXEC_INFO: JSON.stringify(info) }, deadlineMs);
  const said = (why: string) => new KubeConfigError(`the exec plugin ${plugin.command} ${why}`);
  let json: unknown;
  try {
    json = JSON.parse(out);
  } catch {
    throw said('did not print an ExecCredential (its output is not JSON)');
  }
  const parsed = Answer.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw said(`printed an ExecCredential that cannot be read: ${issue.path.join('.') || '(the document)'}: ${issue.message}`);
  }
  const { apiVersion, status } = parsed.data;
  if (apiVersion !== plugin.apiVersion) throw said(`is configured to use API version ${plugin.apiVersion}, and answered ${apiVersion}`);
  if (status === null || status === undefined) throw said('answered an ExecCredential without a status');
  const token = text(status.token);
  const cert = text(status.clientCertificateData);
  const key = text(status.clientKeyData);
  if ((cert === undefined) !== (key === undefined)) throw said('answered only a client certificate or a key, not both');
  if (token === undefined && cert === undefined) throw said('answered neither a token nor a client certificate and key');
  const until = status.expirationTimestamp ? Date.parse(status.expirationTimestamp) : Infinity;
  return { ...(token === undefined ? {} : { token }), ...(cert === undefined ? {} : { cert, key: key! }), until };
}

/** run: the plugin's stdout; its stderr dropped; killed with its process group at the deadline or past MAX_OUTPUT. */
function run(plugin: ExecPlugin, env: NodeJS.ProcessEnv, deadlineMs: number): Promise<string> {
  const group = process.platform !== 'win32';
  return new Promise<string>((resolve, reject) => {
    const child = spawn(plugin.command, [...plugin.args], { env, stdio: ['ignore', 'pipe', 'ignore'], detached: group, windowsHide: true });
    const chunks: Buffer[] = [];
    let size = 0;
    let failed: KubeExecError | null = null;
    const kill = (why: string) => {
      failed ??= new KubeExecError(`the exec plugin ${plugin.command} ${why}; it was killed with its process group`);
      try {
        if (group && child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        else child.kill('SIGKILL');
      } catch {
        // gone already
      }
    };
    const timer = setTimeout(() => kill(`did not finish within ${deadlineMs / 1000} s`), deadlineMs);
    child.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_OUTPUT) kill(`printed more than ${MAX_OUTPUT / 2 ** 20} MiB`);
      else chunks.push(chunk);
    });
    child.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      const hint = err.code === 'ENOENT' && plugin.installHint !== undefined ? ` (${plugin.installHint.trim()})` : '';
      reject(new KubeExecError(`the exec plugin ${plugin.command} cannot be run: ${err.code ?? err.message}${hint}`, { cause: err }));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (failed !== null) reject(failed);
      else if (code === 0) resolve(Buffer.concat(chunks).toString('utf8'));
      else
        reject(
          new KubeExecError(
            `the exec plugin ${plugin.command} failed (${code === null ? `signal ${signal}` : `exit code ${code}`}; what it printed on stderr is not kept)`,
          ),
        );
    });
  });
}
