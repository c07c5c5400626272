/**
 * The kubeconfigs the Kubernetes client (src/kube) refuses, or reads, as kubectl 1.32 does:
 * against testkit/kube-apiserver.ts, a stand-in for the API server written from the API reference
 * (no API server runs on this machine), whose requests are counted to show that a refusal comes
 * before any request; a proxy-url through a real forward proxy (testkit/forward-proxy.ts) that
 * tunnels with CONNECT, plain and over TLS.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeConfigError, KubeConnection } from '../../src/kube/client.ts';
import { ForwardProxy } from '../../testkit/forward-proxy.ts';
import { KUBE_CERT, KUBE_KEY, KUBE_TOKEN } from '../../testkit/kube-objects.ts';
import { CA_DATA, EXEC_V1, useStandIn, writeKubeconfig } from '../../testkit/kubeconfig.ts';
import { ROOT } from '../helpers.ts';

const execFileAsync = promisify(execFile);

const { api, dir } = useStandIn('se-bridge-test-kubeconfig-');
let proxy: ForwardProxy;

beforeAll(async () => {
  proxy = await new ForwardProxy().start();
});
afterAll(async () => {
  await proxy.close();
});

const withCluster = (name: string, cluster: Record<string, unknown>, user: Record<string, unknown> = { token: KUBE_TOKEN }) =>
  writeKubeconfig(dir, name, { server: api.url, cluster, user });

/** readThrough opens the kubeconfig and reads the Node n0: what any caller does first. */
async function readThrough(file: string): Promise<string> {
  const kube = KubeConnection.open(file)!;
  try {
    return (await kube.request<{ metadata: { name: string } }>({ method: 'GET', path: '/api/v1/nodes/n0' })).metadata.name;
  } finally {
    kube.close();
  }
}

/** refused: the kubeconfig is refused with a KubeConfigError matching `words`, and the API server got no request. */
async function refused(file: string, words: RegExp): Promise<void> {
  const before = api.requests.length;
  const err = await readThrough(file).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(KubeConfigError);
  expect((err as KubeConfigError).code).toBe('KUBE_CLIENT_CONFIG');
  expect((err as Error).message).toMatch(words);
  expect(api.requests.length).toBe(before);
}

describe('proxy-url', () => {
  it('a socks5 proxy, or any scheme but http and https, is refused by its key before any request, never ignored', async () => {
    const socks = withCluster('socks5', { 'certificate-authority-data': CA_DATA, 'proxy-url': 'socks5://someone:secret@127.0.0.1:1080' });
    await refused(socks, /cluster "c": proxy-url socks5:\/\/127\.0\.0\.1:1080: the scheme socks5 is not supported/);
    // the proxy's password is never repeated
    await expect(readThrough(socks)).rejects.not.toThrow(/secret/);
    await refused(
      withCluster('ftp', { 'certificate-authority-data': CA_DATA, 'proxy-url': 'ftp://127.0.0.1:21' }),
      /proxy-url .*scheme ftp/,
    );
    await refused(withCluster('junk', { 'certificate-authority-data': CA_DATA, 'proxy-url': 'not a url' }), /proxy-url .*is not a URL/);
  });

  it('an http proxy: HTTPS to the API server tunnelled through it with CONNECT, TLS verified end to end, its credentials sent', async () => {
    const via = withCluster('http-proxy', {
      'certificate-authority-data': CA_DATA,
      'proxy-url': proxy.url.replace('//', '//ops:pa%3Ass@'),
    });
    const before = proxy.requests.length;
    expect(await readThrough(via)).toBe('n0');
    expect(proxy.requests.slice(before)).toEqual([
      { method: 'CONNECT', target: new URL(api.url).host, proxyAuthorization: `Basic ${Buffer.from('ops:pa:ss').toString('base64')}` },
    ]);
  });

  it("an https proxy: TLS to the proxy checked against the system's roots and NODE_EXTRA_CA_CERTS (in a process of its own: Node reads them at start)", async () => {
    const secure = await new ForwardProxy({ cert: KUBE_CERT, key: KUBE_KEY }).start();
    try {
      const file = withCluster('https-proxy', { 'certificate-authority-data': CA_DATA, 'proxy-url': secure.url });
      const script = [
        'const [client, file] = process.argv.slice(1);',
        'const kube = (await import(client)).KubeConnection.open(file);',
        "const said = await kube.request({ method: 'GET', path: '/api/v1/nodes/n0' }).then((n) => n.metadata.name, (e) => e.message);",
        'kube.close();',
        'process.stdout.write(said);',
      ].join('\n');
      const run = async (env: NodeJS.ProcessEnv) =>
        (
          await execFileAsync(process.execPath, ['--input-type=module', '-e', script, join(ROOT, 'src', 'kube', 'client.ts'), file], {
            env: { ...process.env, NODE_EXTRA_CA_CERTS: '', ...env },
            timeout: 20_000,
          })
        ).stdout;
      // the proxy's certificate is the cluster's CA, which kubectl would trust for it; Node trusts its own roots
      expect(await run({})).toBe('GET /api/v1/nodes/n0: DEPTH_ZERO_SELF_SIGNED_CERT');
      expect(secure.requests).toEqual([]);
      expect(await run({ NODE_EXTRA_CA_CERTS: join(ROOT, 'test', 'fixtures', 'tls', 'cert.pem') })).toBe('n0');
      expect(secure.tunnels()).toEqual([new URL(api.url).host]);
    } finally {
      await secure.close();
    }
  });
});

describe('the connection, as the proxy sees it (each connection to the API server is one CONNECT tunnel)', () => {
  it('calls one after another share the connection kept alive; closed, it is dropped and the next call opens another', async () => {
    const own = await new ForwardProxy().start();
    try {
      const kube = KubeConnection.open(withCluster('kept-alive', { 'certificate-authority-data': CA_DATA, 'proxy-url': own.url }))!;
      const read = async () =>
        (await kube.request<{ metadata: { name: string } }>({ method: 'GET', path: '/api/v1/nodes/n0' })).metadata.name;
      for (let i = 0; i < 6; i++) expect(await read()).toBe('n0');
      // one tunnel; a second only when the API server closed the first while it was idle (5 s), never one a call
      const kept = own.tunnels().length;
      expect(kept).toBeLessThanOrEqual(2);
      kube.close();
      expect(await read()).toBe('n0');
      expect(own.tunnels()).toHaveLength(kept + 1);
      kube.close();
    } finally {
      await own.close();
    }
  });
});

describe('TLS', () => {
  it('a CA together with insecure-skip-tls-verify is refused, as kubectl does (data or file)', async () => {
    const words = /cluster "c": certificate-authority(-data)? and insecure-skip-tls-verify are both set/;
    await refused(withCluster('ca-data-insecure', { 'certificate-authority-data': CA_DATA, 'insecure-skip-tls-verify': true }), words);
    await refused(withCluster('ca-file-insecure', { 'certificate-authority': 'ca.pem', 'insecure-skip-tls-verify': true }), words);
    // insecure-skip-tls-verify alone is taken (a test cluster), as kubectl takes it
    expect(await readThrough(withCluster('insecure', { 'insecure-skip-tls-verify': true }))).toBe('n0');
  });
});

describe('exec', () => {
  const exec = (more: Record<string, unknown>) => ({ exec: { command: '/bin/true', ...more } });
  const file = (name: string, more: Record<string, unknown>) => withCluster(name, { 'certificate-authority-data': CA_DATA }, exec(more));

  it('client.authentication.k8s.io/v1 without interactiveMode is refused, as client-go refuses it; v1beta1 defaults it', () => {
    expect(() => KubeConnection.open(file('v1-no-mode', { apiVersion: EXEC_V1 }))).toThrow(
      /user "u": exec: interactiveMode must be specified for client\.authentication\.k8s\.io\/v1/,
    );
    expect(KubeConnection.open(file('v1beta1-no-mode', { apiVersion: 'client.authentication.k8s.io/v1beta1' }))!.target.exec).toMatchObject(
      {
        interactiveMode: 'IfAvailable',
      },
    );
  });

  it('an apiVersion missing or unknown, an interactiveMode unknown, an env entry without a name: refused by key', () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ interactiveMode: 'Never' }, /exec: apiVersion must be specified/],
      [
        { apiVersion: 'client.authentication.k8s.io/v1alpha1', interactiveMode: 'Never' },
        /exec: apiVersion "client\.authentication\.k8s\.io\/v1alpha1" is not one of/,
      ],
      [{ apiVersion: EXEC_V1, interactiveMode: 'Sometimes' }, /exec: interactiveMode "Sometimes" is not one of Never, IfAvailable, Always/],
      [{ apiVersion: EXEC_V1, interactiveMode: 'Never', env: [{ value: 'x' }] }, /exec: env\[0\] has no name/],
    ];
    for (const [more, words] of cases) expect(() => KubeConnection.open(file('bad-exec', more)), String(words)).toThrow(words);
  });
});
