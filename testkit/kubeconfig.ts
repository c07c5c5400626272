/**
 * Kubeconfig files for the Kubernetes client's tests, written as kubectl writes them (one
 * cluster, one user, one context, current), and exec credential plugins as small Node programs
 * that say what they were given.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { stringify } from 'yaml';
import { KubeStandIn } from './kube-apiserver.ts';
import { KUBE_CERT } from './kube-objects.ts';

export const EXEC_V1 = 'client.authentication.k8s.io/v1';
/** The stand-in's CA as a kubeconfig's certificate-authority-data. */
export const CA_DATA = Buffer.from(KUBE_CERT).toString('base64');

/**
 * useStandIn gives the calling file's tests an API stand-in holding the Node n0, started before
 * them and closed after, and a folder of their own for kubeconfigs and plugins.
 */
export function useStandIn(prefix: string): { readonly api: KubeStandIn; readonly dir: string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const api = new KubeStandIn();
  beforeAll(async () => {
    await api.start();
    api.addNode('n0');
  });
  afterAll(async () => {
    await api.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { api, dir };
}

export interface KubeconfigParts {
  readonly server: string;
  /** The cluster's other keys; default `certificate-authority: ca.pem` (the stand-in's CA, written beside it). */
  readonly cluster?: Readonly<Record<string, unknown>>;
  readonly user?: Readonly<Record<string, unknown>>;
  readonly namespace?: string;
}

/** writeKubeconfig writes `<dir>/<name>.yaml` (and `<dir>/ca.pem`) and returns its path. */
export function writeKubeconfig(dir: string, name: string, parts: KubeconfigParts): string {
  writeFileSync(join(dir, 'ca.pem'), KUBE_CERT);
  const path = join(dir, `${name}.yaml`);
  const doc = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster: { server: parts.server, ...(parts.cluster ?? { 'certificate-authority': 'ca.pem' }) } }],
    users: [{ name: 'u', user: parts.user ?? {} }],
    contexts: [
      { name: 'ctx', context: { cluster: 'c', user: 'u', ...(parts.namespace === undefined ? {} : { namespace: parts.namespace }) } },
    ],
    'current-context': 'ctx',
  };
  writeFileSync(path, stringify(doc));
  return path;
}

/**
 * writePlugin writes an exec credential plugin, `<dir>/<name>.mjs`: each run appends its
 * KUBERNETES_EXEC_INFO to `<dir>/<name>.runs` (one line per run), then runs `body`, which may use
 * `info` (the parsed KUBERNETES_EXEC_INFO) and `answer(status, apiVersion?)` (prints an
 * ExecCredential). Returns its path.
 */
export function writePlugin(dir: string, name: string, body: string): string {
  const path = join(dir, `${name}.mjs`);
  writeFileSync(
    path,
    [
      `#!${process.execPath}`,
      "import { appendFileSync, readFileSync } from 'node:fs';",
      `appendFileSync(${JSON.stringify(join(dir, `${name}.runs`))}, process.env.KUBERNETES_EXEC_INFO + '\\n');`,
      'const info = JSON.parse(process.env.KUBERNETES_EXEC_INFO);',
      "const answer = (status, apiVersion = info.apiVersion) => process.stdout.write(JSON.stringify({ apiVersion, kind: 'ExecCredential', status }));",
      body,
    ].join('\n'),
  );
  chmodSync(path, 0o755);
  return path;
}
