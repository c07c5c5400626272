/**
 * The project's Kubernetes client (src/kube) against testkit/kube-apiserver.ts, a stand-in for the
 * API server written from the API reference (no API server can run on this machine), over HTTPS
 * with the cluster's CA: every way a kubeconfig or a pod says who we are. A kubeconfig file with a
 * token, a token file that rotates, a client certificate (files relative to the kubeconfig, and
 * inline data), an exec credential plugin (a real process, as kubelogin is run: its
 * KUBERNETES_EXEC_INFO read, its ExecCredential kept until it expires and asked again after a
 * 401), the in-cluster service account, and what is refused before any request.
 */
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KubeApiError, KubeConfigError, KubeConnection } from '../../src/kube/client.ts';
import { KUBE_CERT } from '../../testkit/kube-apiserver.ts';
import { KUBE_KEY, KUBE_TOKEN } from '../../testkit/kube-objects.ts';
import { EXEC_V1, useStandIn, writeKubeconfig } from '../../testkit/kubeconfig.ts';
import { envSaved, tempDir } from '../helpers.ts';

const { api, dir } = useStandIn('se-bridge-test-kube-');

/** kubeconfig writes a kubeconfig for the stand-in whose user is `user`, in namespace team-a. */
const kubeconfig = (name: string, user: Record<string, unknown>, cluster?: Record<string, unknown>) =>
  writeKubeconfig(dir, name, { server: api.url, user, namespace: 'team-a', ...(cluster === undefined ? {} : { cluster }) });

const readNode = (kube: KubeConnection) => kube.request<{ metadata: { name: string } }>({ method: 'GET', path: '/api/v1/nodes/n0' });

describe('the Kubernetes client', () => {
  it('a kubeconfig with a token and a CA file beside it: the Node read, a 404 is a KubeApiError with the Status', async () => {
    const kube = KubeConnection.open(kubeconfig('token', { token: KUBE_TOKEN }))!;
    expect(kube.target.namespace).toBe('team-a');
    expect((await readNode(kube)).metadata.name).toBe('n0');
    const missing = await kube.request({ method: 'GET', path: '/api/v1/nodes/nope' }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(KubeApiError);
    expect((missing as KubeApiError).status).toBe(404);
    expect(JSON.parse((missing as KubeApiError).body)).toMatchObject({ kind: 'Status', code: 404 });
    const wrong = KubeConnection.open(kubeconfig('wrong', { token: 'not-this-one' }))!;
    expect(await readNode(wrong).catch((e: unknown) => (e as KubeApiError).status)).toBe(401);
    kube.close();
    wrong.close();
  });

  it('a client certificate, from files relative to the kubeconfig and from inline data, with no token', async () => {
    writeFileSync(join(dir, 'client.crt'), KUBE_CERT);
    writeFileSync(join(dir, 'client.key'), KUBE_KEY);
    const files = KubeConnection.open(kubeconfig('cert', { 'client-certificate': 'client.crt', 'client-key': 'client.key' }))!;
    expect((await readNode(files)).metadata.name).toBe('n0');
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    const inline = KubeConnection.open(
      kubeconfig('cert-data', { 'client-certificate-data': b64(KUBE_CERT), 'client-key-data': b64(KUBE_KEY) }),
    )!;
    expect((await readNode(inline)).metadata.name).toBe('n0');
    // without the certificate the same server says 401: it was the certificate that was taken
    const none = KubeConnection.open(kubeconfig('nobody', {}))!;
    expect(await readNode(none).catch((e: unknown) => (e as KubeApiError).status)).toBe(401);
    for (const k of [files, inline, none]) k.close();
  });

  it('an exec credential plugin: run with KUBERNETES_EXEC_INFO, its token kept until it expires, asked again after a 401', async () => {
    const plugin = join(dir, 'plugin.mjs');
    const log = join(dir, 'plugin.log');
    writeFileSync(
      plugin,
      [
        `#!${process.execPath}`,
        "import { appendFileSync, readFileSync } from 'node:fs';",
        `appendFileSync(${JSON.stringify(log)}, process.env.KUBERNETES_EXEC_INFO + '\\n');`,
        `const token = readFileSync(${JSON.stringify(join(dir, 'issued'))}, 'utf8');`,
        'const expires = new Date(Date.now() + Number(process.env.LIFETIME_MS)).toISOString();',
        "process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token, expirationTimestamp: expires } }));",
      ].join('\n'),
    );
    chmodSync(plugin, 0o755);
    writeFileSync(join(dir, 'issued'), 'exec-token-1');
    api.tokens.add('exec-token-1');
    const user = (lifetimeMs: number) => ({
      exec: {
        apiVersion: EXEC_V1,
        command: './plugin.mjs',
        env: [{ name: 'LIFETIME_MS', value: String(lifetimeMs) }],
        interactiveMode: 'Never',
      },
    });
    const kube = KubeConnection.open(kubeconfig('exec', user(3_600_000)))!;
    for (let i = 0; i < 3; i++) expect((await readNode(kube)).metadata.name).toBe('n0');
    const runs = () => readFileSync(log, 'utf8').trim().split('\n');
    // one run for three calls: the credential is kept until it expires
    expect(runs()).toHaveLength(1);
    expect(JSON.parse(runs()[0]!)).toEqual({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: { interactive: false },
    });
    // the server stops taking the token (revoked, rotated): one 401, the plugin asked again, the call made again
    api.tokens.delete('exec-token-1');
    api.tokens.add('exec-token-2');
    writeFileSync(join(dir, 'issued'), 'exec-token-2');
    expect((await readNode(kube)).metadata.name).toBe('n0');
    expect(runs()).toHaveLength(2);
    // a credential that has expired is asked for before the call, with no 401 on the way
    const expired = KubeConnection.open(kubeconfig('exec-short', user(-1000)))!;
    const before = api.requests.length;
    await readNode(expired);
    await readNode(expired);
    expect(runs()).toHaveLength(4);
    expect(api.requests.length - before).toBe(2);
    kube.close();
    expired.close();
  });

  it('a plugin that fails or prints no ExecCredential: the call fails saying so', async () => {
    const fails = KubeConnection.open(
      kubeconfig('exec-fails', { exec: { apiVersion: EXEC_V1, command: '/bin/false', interactiveMode: 'Never' } }),
    )!;
    await expect(readNode(fails)).rejects.toThrow(/the exec plugin \/bin\/false failed/);
    const junk = join(dir, 'junk.sh');
    writeFileSync(junk, '#!/bin/sh\necho hello\n');
    chmodSync(junk, 0o755);
    const silly = KubeConnection.open(kubeconfig('exec-junk', { exec: { apiVersion: EXEC_V1, command: junk, interactiveMode: 'Never' } }))!;
    await expect(readNode(silly)).rejects.toThrow(KubeConfigError);
  });

  it('in the cluster: the service account folder, its token read again when it rotates, the namespace', async () => {
    const sa = tempDir('se-bridge-test-sa-');
    writeFileSync(join(sa.path, 'ca.crt'), KUBE_CERT);
    writeFileSync(join(sa.path, 'token'), KUBE_TOKEN);
    writeFileSync(join(sa.path, 'namespace'), 'kube-system\n');
    const port = new URL(api.url).port;
    const saved = envSaved('KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT');
    try {
      delete process.env.KUBERNETES_SERVICE_HOST;
      expect(KubeConnection.open(undefined, { serviceAccountDir: sa.path })).toBeNull();
      process.env.KUBERNETES_SERVICE_HOST = '127.0.0.1';
      process.env.KUBERNETES_SERVICE_PORT = port;
      const kube = KubeConnection.open(undefined, { serviceAccountDir: sa.path })!;
      expect(kube.target).toMatchObject({ server: `https://127.0.0.1:${port}`, namespace: 'kube-system' });
      expect((await readNode(kube)).metadata.name).toBe('n0');
      // the kubelet rotates the projected token: the old one is refused, the file read again after the 401
      api.tokens.add('rotated');
      api.tokens.delete(KUBE_TOKEN);
      writeFileSync(join(sa.path, 'token'), 'rotated\n');
      expect((await readNode(kube)).metadata.name).toBe('n0');
      kube.close();
    } finally {
      api.tokens.add(KUBE_TOKEN);
      saved.restore();
      sa.cleanup();
    }
  });

  it('refused before any request: an auth-provider, a missing context, a missing file, plain HTTP without insecure-skip-tls-verify', async () => {
    expect(() => KubeConnection.open(kubeconfig('legacy', { 'auth-provider': { name: 'azure' } }))).toThrow(/auth-provider.*exec plugin/);
    const noContext = join(dir, 'no-context.yaml');
    writeFileSync(noContext, 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n');
    expect(() => KubeConnection.open(noContext)).toThrow(/no current-context/);
    expect(() => KubeConnection.open(kubeconfig('no-ca', {}, { 'certificate-authority': 'missing.pem' }))).toThrow(
      /cannot read .*missing\.pem: ENOENT/,
    );
    const plain = join(dir, 'plain.yaml');
    writeFileSync(plain, readFileSync(kubeconfig('p', {}), 'utf8').replace(api.url, 'http://127.0.0.1:9'));
    const before = api.requests.length;
    await expect(readNode(KubeConnection.open(plain)!)).rejects.toThrow(/HTTP protocol is not allowed when skipTLSVerify is not set/);
    expect(api.requests.length).toBe(before);
  });
});
