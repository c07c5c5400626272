/**
 * What the Kubernetes client (src/kube/config.ts) takes from a kubeconfig and from a pod, as
 * client-go reads them: the context chosen, its cluster and user found by name, what is refused by
 * its key before any request, the credentials sent (token, token file, basic, none), the server's
 * name checked on TLS (certificate-authority, tls-server-name), plain HTTP only with
 * insecure-skip-tls-verify, and the in-cluster service account. Against
 * testkit/kube-apiserver.ts, a stand-in for the API server written from the API reference (no API
 * server runs on this machine); plain HTTP against a real HTTP server on 127.0.0.1.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { KubeConfigError, KubeConnection } from '../../src/kube/client.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { KUBE_CERT, KUBE_KEY, KUBE_TOKEN } from '../../testkit/kube-objects.ts';
import { CA_DATA, EXEC_V1, useStandIn, writeKubeconfig, writePlugin } from '../../testkit/kubeconfig.ts';
import { envSaved } from '../helpers.ts';

const { api, dir } = useStandIn('se-bridge-test-kube-config-');
const NODE = '/api/v1/nodes/n0';
const opened: KubeConnection[] = [];
afterEach(() => {
  for (const k of opened.splice(0)) k.close();
});

/** write: a kubeconfig document (as YAML) at `<dir>/<name>.yaml`. */
function write(name: string, doc: unknown): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, typeof doc === 'string' ? doc : stringify(doc));
  return file;
}
function open(file: string): KubeConnection {
  const kube = KubeConnection.open(file)!;
  opened.push(kube);
  return kube;
}
/** read: the Node n0 through `file`'s kubeconfig: its name, or the error's message; and the Authorization sent. */
async function read(file: string): Promise<{ said: string; authorization: string | undefined }> {
  const before = api.requests.length;
  const said = await open(file)
    .request<{ metadata: { name: string } }>({ method: 'GET', path: NODE })
    .then(
      (n) => n.metadata.name,
      (e: unknown) => (e as Error).message,
    );
  return { said, authorization: api.requests.length > before ? api.requests.at(-1)!.authorization : 'no request' };
}
const cluster = (name: string, more: Record<string, unknown> = {}) => ({
  name,
  cluster: { server: api.url, 'certificate-authority-data': CA_DATA, ...more },
});

describe('the context', () => {
  it('current-context names the context, its cluster and user found by name among several', async () => {
    api.tokens.add('second-token');
    const doc = {
      clusters: [null, cluster('one', { server: 'https://127.0.0.1:9' }), cluster('two')],
      users: [
        { name: 'first', user: { token: 'first-token' } },
        { name: 'second', user: { token: 'second-token' } },
      ],
      contexts: [
        { name: 'a', context: { cluster: 'one', user: 'first', namespace: 'ns-a' } },
        { name: 'b', context: { cluster: 'two', user: 'second', namespace: 'ns-b' } },
      ],
      'current-context': 'b',
    };
    const file = write('two-contexts', doc);
    expect(open(file).target.namespace).toBe('ns-b');
    expect(await read(file)).toEqual({ said: 'n0', authorization: 'Bearer second-token' });
    // no current-context: the only context is taken; with two, none is guessed
    const only = write('only', { ...doc, contexts: [doc.contexts[1]], 'current-context': '' });
    expect(await read(only)).toEqual({ said: 'n0', authorization: 'Bearer second-token' });
    expect(() => KubeConnection.open(write('two-none', { ...doc, 'current-context': undefined }))).toThrow(/: no current-context$/);
  });

  it('a context, cluster or user named and not there, or not a mapping: refused by name before any request', () => {
    const base = {
      clusters: [cluster('c')],
      users: [{ name: 'u', user: { token: KUBE_TOKEN } }],
      contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'ctx',
    };
    const cases: [string, unknown, RegExp][] = [
      ['no-context', { ...base, 'current-context': 'elsewhere' }, /no-context\.yaml: no context named "elsewhere"$/],
      ['no-cluster', { ...base, clusters: [cluster('other')] }, /: no cluster named "c"$/],
      ['no-user', { ...base, users: { u: { token: 'x' } } }, /: no user named "u"$/],
      ['null-user', { ...base, users: [{ name: 'u', user: null }] }, /: no user named "u"$/],
      ['string-cluster', { ...base, clusters: [{ name: 'c', cluster: 'https://x' }] }, /: no cluster named "c"$/],
      ['no-server', { ...base, clusters: [{ name: 'c', cluster: { server: '' } }] }, /: cluster "c" has no server$/],
      ['empty', '', /empty\.yaml: no current-context$/],
      ['not-yaml', 'clusters: [\n', /not-yaml\.yaml: .*flow sequence/i],
    ];
    const before = api.requests.length;
    for (const [name, doc, words] of cases) {
      const err = (() => {
        try {
          KubeConnection.open(write(name, doc));
          return null;
        } catch (e) {
          return e as Error;
        }
      })();
      expect(err, name).toBeInstanceOf(KubeConfigError);
      expect(err!.message, name).toMatch(words);
    }
    expect(() => KubeConnection.open(join(dir, 'absent.yaml'))).toThrow(/absent\.yaml: ENOENT/);
    expect(api.requests.length).toBe(before);
  });
});

describe('who we are', () => {
  const withUser = (name: string, user: Record<string, unknown>) =>
    writeKubeconfig(dir, name, { server: `${api.url}//`, cluster: { 'certificate-authority-data': CA_DATA }, user });

  it('a context without a user, or a user with an empty token: nothing sent as who we are, and the 401', async () => {
    const doc = { clusters: [cluster('c')], contexts: [{ name: 'x', context: { cluster: 'c' } }], 'current-context': 'x' };
    expect(await read(write('userless', doc))).toEqual({ said: `GET ${NODE}: HTTP 401`, authorization: undefined });
    expect(await read(withUser('empty-token', { token: '' }))).toEqual({ said: `GET ${NODE}: HTTP 401`, authorization: undefined });
  });

  it('basic credentials are sent as basic authentication (the API server refuses them since 1.19: 401), a token before them', async () => {
    const basic = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;
    expect(await read(withUser('basic', { username: 'ops', password: 'pa:ss' }))).toEqual({
      said: `GET ${NODE}: HTTP 401`,
      authorization: basic('ops:pa:ss'),
    });
    expect((await read(withUser('basic-no-password', { username: 'ops' }))).authorization).toBe(basic('ops:'));
    expect(await read(withUser('token-and-basic', { token: KUBE_TOKEN, username: 'ops', password: 'x', exec: null }))).toEqual({
      said: 'n0',
      authorization: `Bearer ${KUBE_TOKEN}`,
    });
    // the server's trailing slashes are not doubled in the path
    expect(api.requests.at(-1)!.path).toBe(NODE);
  });

  it('an exec plugin that answers with a client certificate and key: the call made with them, no token sent', async () => {
    const pem = JSON.stringify({ clientCertificateData: KUBE_CERT, clientKeyData: KUBE_KEY });
    const command = writePlugin(dir, 'cert-plugin', `answer(${pem});`);
    const file = withUser('cert-plugin', { exec: { apiVersion: EXEC_V1, command, interactiveMode: 'Never' } });
    expect(await read(file)).toEqual({ said: 'n0', authorization: undefined });
  });

  it('a tokenFile by absolute path is read; a client key that cannot be read is refused by its file', async () => {
    const token = join(dir, 'abs-token');
    writeFileSync(token, `${KUBE_TOKEN}\n`);
    expect(await read(withUser('abs-token', { tokenFile: token }))).toEqual({ said: 'n0', authorization: `Bearer ${KUBE_TOKEN}` });
    const noKey = withUser('no-key', { 'client-certificate-data': CA_DATA, 'client-key': 'gone.key' });
    expect(() => KubeConnection.open(noKey)).toThrow(new KubeConfigError(`${noKey}: cannot read ${join(dir, 'gone.key')}: ENOENT`));
  });
});

describe('TLS and plain HTTP', () => {
  it("the server's name checked against the certificate: tls-server-name names it when the address does not", async () => {
    const named = (name: string, more: Record<string, unknown>) =>
      writeKubeconfig(dir, name, {
        server: api.url,
        cluster: { 'certificate-authority-data': CA_DATA, ...more },
        user: { token: KUBE_TOKEN },
      });
    expect((await read(named('right-name', { 'tls-server-name': '127.0.0.1' }))).said).toBe('n0');
    expect(await read(named('wrong-name', { 'tls-server-name': 'api.elsewhere.example' }))).toEqual({
      said: `GET ${NODE}: ERR_TLS_CERT_ALTNAME_INVALID`,
      authorization: 'no request',
    });
    // the CA file is read only when no certificate-authority-data is given
    expect((await read(named('data-first', { 'certificate-authority': 'absent-ca.pem' }))).said).toBe('n0');
    // no CA named: the system's roots, which do not hold the cluster's own CA
    const none = writeKubeconfig(dir, 'no-ca', { server: api.url, cluster: {}, user: { token: KUBE_TOKEN } });
    expect((await read(none)).said).toBe(`GET ${NODE}: DEPTH_ZERO_SELF_SIGNED_CERT`);
  });

  it('a CA with insecure-skip-tls-verify is refused naming the key given; an https:// proxy-url is taken as it is written', () => {
    const both = (name: string, ca: Record<string, unknown>) =>
      writeKubeconfig(dir, name, { server: api.url, cluster: { ...ca, 'insecure-skip-tls-verify': true }, user: {} });
    for (const [name, key, ca] of [
      ['both-data', 'certificate-authority-data', { 'certificate-authority-data': CA_DATA }],
      ['both-file', 'certificate-authority', { 'certificate-authority': 'ca.pem' }],
    ] as const) {
      const file = both(name, ca);
      expect(() => KubeConnection.open(file)).toThrow(
        new KubeConfigError(
          `${file}: cluster "c": ${key} and insecure-skip-tls-verify are both set: a CA is of no use without verification; keep one`,
        ),
      );
    }
    const proxied = writeKubeconfig(dir, 'https-proxy', {
      server: api.url,
      cluster: { 'certificate-authority-data': CA_DATA, 'proxy-url': 'https://proxy.example:3128' },
      user: {},
    });
    expect(open(proxied).target.proxy).toBe('https://proxy.example:3128');
  });

  it('http:// with insecure-skip-tls-verify is spoken (a test cluster), as kubectl does; without it, refused before any request', async () => {
    const peer = new HttpPeer();
    peer.answer = () => ({ status: 200, body: JSON.stringify({ kind: 'Node', metadata: { name: 'plain' } }) });
    await peer.listen();
    try {
      const plain = writeKubeconfig(dir, 'plain', {
        server: peer.url,
        cluster: { 'insecure-skip-tls-verify': true },
        user: { token: 't' },
      });
      const kube = open(plain);
      expect(kube.target).toMatchObject({ server: peer.url, insecure: true });
      expect(await kube.request({ method: 'GET', path: NODE })).toEqual({ kind: 'Node', metadata: { name: 'plain' } });
      expect(peer.requests.map((r) => [r.method, r.url, r.headers.authorization, r.headers.accept])).toEqual([
        ['GET', NODE, 'Bearer t', 'application/json'],
      ]);
      const refused = writeKubeconfig(dir, 'plain-refused', { server: peer.url, cluster: {}, user: { token: 't' } });
      await expect(open(refused).request({ method: 'GET', path: NODE })).rejects.toThrow(KubeConfigError);
      expect(peer.requests).toHaveLength(1);
    } finally {
      await peer.close();
    }
  });

  it('an exec plugin given the cluster of an insecure kubeconfig: no CA, insecure-skip-tls-verify true', async () => {
    const command = writePlugin(dir, 'insecure-info', "answer({ token: 'stand-in-service-account-token' });");
    const file = writeKubeconfig(dir, 'insecure-info', {
      server: api.url,
      cluster: { 'insecure-skip-tls-verify': true },
      user: { exec: { apiVersion: EXEC_V1, command, interactiveMode: 'Never', provideClusterInfo: true } },
    });
    expect((await read(file)).said).toBe('n0');
    const info = readFileSync(join(dir, 'insecure-info.runs'), 'utf8');
    expect(JSON.parse(info).spec.cluster).toEqual({ server: api.url, 'insecure-skip-tls-verify': true });
  });
});

describe('in the cluster', () => {
  const saved = envSaved('KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT');
  afterEach(() => {
    saved.restore();
  });

  it('the service host and port (443 unless said; an IPv6 address in brackets), the CA and namespace when the pod has them', () => {
    const sa = join(dir, 'sa-bare');
    mkdirSync(sa, { recursive: true });
    process.env.KUBERNETES_SERVICE_HOST = 'fd00::1';
    delete process.env.KUBERNETES_SERVICE_PORT;
    expect(KubeConnection.open(undefined, { serviceAccountDir: sa })!.target).toEqual({
      server: 'https://[fd00::1]:443',
      insecure: false,
      tokenFile: join(sa, 'token'),
    });
    process.env.KUBERNETES_SERVICE_HOST = '10.0.0.1';
    process.env.KUBERNETES_SERVICE_PORT = '';
    writeFileSync(join(sa, 'namespace'), ' \n');
    writeFileSync(join(sa, 'ca.crt'), KUBE_CERT);
    expect(KubeConnection.open(undefined, { serviceAccountDir: sa })!.target).toEqual({
      server: 'https://10.0.0.1:443',
      insecure: false,
      tokenFile: join(sa, 'token'),
      ca: KUBE_CERT,
    });
    // the pod's own folder unless told
    expect(KubeConnection.open(undefined)!.target.tokenFile).toBe('/var/run/secrets/kubernetes.io/serviceaccount/token');
    process.env.KUBERNETES_SERVICE_HOST = '';
    expect(KubeConnection.open(undefined, { serviceAccountDir: sa })).toBeNull();
  });
});
