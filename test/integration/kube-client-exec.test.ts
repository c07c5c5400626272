/**
 * Exec credential plugins, run as client-go runs them: real processes (Node programs written by
 * testkit/kubeconfig.ts, which record each run's KUBERNETES_EXEC_INFO in a file), the answers
 * taken by testkit/kube-apiserver.ts, a stand-in for the API server written from the API
 * reference (no API server runs on this machine).
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KubeConfigError, KubeConnection, KubeExecError } from '../../src/kube/client.ts';
import { ForwardProxy } from '../../testkit/forward-proxy.ts';
import { KUBE_CERT, KUBE_KEY } from '../../testkit/kube-objects.ts';
import { CA_DATA, EXEC_V1, useStandIn, writeKubeconfig, writePlugin } from '../../testkit/kubeconfig.ts';
import { waitFor } from '../helpers.ts';

const { api, dir } = useStandIn('se-bridge-test-kube-exec-');

/** withPlugin: a kubeconfig whose user runs the plugin `name` (written with `body`), and its connection. */
function withPlugin(name: string, body: string, exec: Record<string, unknown> = {}, cluster: Record<string, unknown> = {}) {
  const command = writePlugin(dir, name, body);
  const file = writeKubeconfig(dir, name, {
    server: api.url,
    cluster: { 'certificate-authority-data': CA_DATA, ...cluster },
    user: { exec: { apiVersion: EXEC_V1, command, interactiveMode: 'Never', ...exec } },
  });
  return KubeConnection.open(file)!;
}

const runs = (name: string): unknown[] => {
  const file = join(dir, `${name}.runs`);
  return existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as unknown)
    : [];
};
const readNode = (kube: KubeConnection) => kube.request<{ metadata: { name: string } }>({ method: 'GET', path: '/api/v1/nodes/n0' });
const failure = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e as Error,
  );

describe('what the plugin is given', () => {
  it('provideClusterInfo: KUBERNETES_EXEC_INFO carries the cluster (server, CA, TLS name, proxy, the exec extension as config)', async () => {
    api.tokens.add('cluster-info-token');
    const proxy = await new ForwardProxy().start();
    try {
      const cluster = {
        'tls-server-name': '127.0.0.1',
        'proxy-url': proxy.url,
        extensions: [
          { name: 'client.authentication.k8s.io/exec', extension: { audience: '6dae42f8-4368-4678-94ff-3960e28e3630' } },
          { name: 'another', extension: { not: 'this' } },
        ],
      };
      const kube = withPlugin('cluster-info', "answer({ token: 'cluster-info-token' });", { provideClusterInfo: true }, cluster);
      expect((await readNode(kube)).metadata.name).toBe('n0');
      expect(runs('cluster-info')).toEqual([
        {
          apiVersion: EXEC_V1,
          kind: 'ExecCredential',
          spec: {
            interactive: false,
            cluster: {
              server: api.url,
              'certificate-authority-data': CA_DATA,
              'tls-server-name': '127.0.0.1',
              'proxy-url': proxy.url,
              config: { audience: '6dae42f8-4368-4678-94ff-3960e28e3630' },
            },
          },
        },
      ]);
      kube.close();
    } finally {
      await proxy.close();
    }
  });
});

describe('what the plugin answers', () => {
  it('an apiVersion other than the one asked, another kind, a certificate without its key: refused, saying which', async () => {
    const cases: [string, RegExp][] = [
      [
        "answer({ token: 't' }, 'client.authentication.k8s.io/v1beta1');",
        /is configured to use API version client\.authentication\.k8s\.io\/v1, and answered client\.authentication\.k8s\.io\/v1beta1/,
      ],
      [
        "process.stdout.write(JSON.stringify({ apiVersion: info.apiVersion, kind: 'Status', status: { token: 't' } }));",
        /cannot be read: kind/,
      ],
      ["answer({ clientCertificateData: 'PEM' });", /only a client certificate or a key, not both/],
      ['answer({});', /neither a token nor a client certificate and key/],
    ];
    for (const [i, [body, words]] of cases.entries()) {
      const err = await failure(readNode(withPlugin(`answer-${i}`, body)));
      expect(err, String(words)).toBeInstanceOf(KubeConfigError);
      expect(err!.message).toMatch(words);
    }
  });

  it('a token refused, and a client certificate in its place at the next run: the call asked again with the certificate', async () => {
    const pem = JSON.stringify({ clientCertificateData: KUBE_CERT, clientKeyData: KUBE_KEY });
    const first = `readFileSync(${JSON.stringify(join(dir, 'to-cert.runs'))}, 'utf8').trim().split('\\n').length === 1`;
    const kube = withPlugin('to-cert', `answer(${first} ? { token: 'revoked-token' } : ${pem});`);
    const before = api.requests.length;
    expect((await readNode(kube)).metadata.name).toBe('n0');
    expect(runs('to-cert')).toHaveLength(2);
    // the first try with the token, refused; the second over TLS with the certificate, no token sent
    expect(api.requests.slice(before).map((r) => r.authorization)).toEqual(['Bearer revoked-token', undefined]);
    kube.close();
  });

  it('an expirationTimestamp that is not RFC 3339 is an error of the answer (as client-go decodes it), never "expired"', async () => {
    api.tokens.add('soon-token');
    const kube = withPlugin('soon', "answer({ token: 'soon-token', expirationTimestamp: 'in an hour' });");
    const before = api.requests.length;
    for (let i = 0; i < 2; i++) {
      const err = await failure(readNode(kube));
      expect(err).toBeInstanceOf(KubeConfigError);
      expect(err!.message).toMatch(/status\.expirationTimestamp/);
    }
    // the token of a credential that cannot be read is never sent
    expect(api.requests.length).toBe(before);
    // a timestamp with an offset and fractions is RFC 3339: taken, and kept until then
    api.tokens.add('offset-token');
    const offset = withPlugin('offset', "answer({ token: 'offset-token', expirationTimestamp: '2999-01-02T03:04:05.678+02:00' });");
    for (let i = 0; i < 3; i++) expect((await readNode(offset)).metadata.name).toBe('n0');
    expect(runs('offset')).toHaveLength(1);
  });
});

describe('how the plugin is run', () => {
  it('three calls at once share one run; three refused at once by a 401 share one run more', async () => {
    const issued = join(dir, 'issued-token');
    writeFileSync(issued, 'shared-1');
    api.tokens.add('shared-1');
    const kube = withPlugin('shared', `answer({ token: readFileSync(${JSON.stringify(issued)}, 'utf8') });`);
    const three = () => Promise.all([readNode(kube), readNode(kube), readNode(kube)]);
    expect((await three()).map((n) => n.metadata.name)).toEqual(['n0', 'n0', 'n0']);
    expect(runs('shared')).toHaveLength(1);
    // the token is revoked: the three calls are each refused once, and one new run serves them all
    api.tokens.delete('shared-1');
    api.tokens.add('shared-2');
    writeFileSync(issued, 'shared-2');
    expect((await three()).map((n) => n.metadata.name)).toEqual(['n0', 'n0', 'n0']);
    expect(runs('shared')).toHaveLength(2);
    kube.close();
  });

  it('a call that gives up while the plugin runs leaves the run to the others: it answers them, and is not run again', async () => {
    api.tokens.add('patient-token');
    const go = join(dir, 'patient.go');
    // the plugin answers once the test says so, so the call that gives up has surely given up first
    const body = `const wait = () => (existsSync(${JSON.stringify(go)}) ? answer({ token: 'patient-token' }) : setTimeout(wait, 20)); wait();`;
    const kube = withPlugin('patient', `import { existsSync } from 'node:fs';\n${body}`);
    const quitter = new AbortController();
    const gaveUp = failure(kube.request({ method: 'GET', path: '/api/v1/nodes/n0', signal: quitter.signal }));
    const stays = readNode(kube);
    await waitFor(() => runs('patient').length === 1, 'the plugin running');
    quitter.abort(new Error('the caller gave up'));
    expect((await gaveUp)!.message).toBe('the caller gave up');
    writeFileSync(go, '');
    expect((await stays).metadata.name).toBe('n0');
    expect((await readNode(kube)).metadata.name).toBe('n0');
    expect(runs('patient')).toHaveLength(1);
    kube.close();
  });

  it('a plugin that prints without end is stopped at 1 MiB, with its process group', async () => {
    const kube = withPlugin('chatty', "setInterval(() => process.stdout.write('x'.repeat(65536)), 1);");
    const err = await failure(readNode(kube));
    expect(err).toBeInstanceOf(KubeExecError);
    expect(err!.message).toMatch(/printed more than 1 MiB; it was killed with its process group/);
  });

  it('what the plugin prints on stderr is never kept: not in the error, so never in a log line or a dead letter', async () => {
    const kube = withPlugin('noisy', "process.stderr.write('To sign in, use the code SECRET-DEVICE-CODE\\n'); process.exit(3);");
    const err = await failure(readNode(kube));
    expect(err).toBeInstanceOf(KubeExecError);
    expect((err as KubeExecError).code).toBe('KUBE_CLIENT_EXEC');
    expect(err!.message).toMatch(/failed \(exit code 3; what it printed on stderr is not kept\)/);
    expect(JSON.stringify({ message: err!.message, cause: String((err as Error).cause) })).not.toContain('SECRET');
  });

  it('a plugin that cannot be found says so, with its installHint', async () => {
    const file = writeKubeconfig(dir, 'missing', {
      server: api.url,
      cluster: { 'certificate-authority-data': CA_DATA },
      user: {
        exec: { apiVersion: EXEC_V1, command: 'kubelogin-not-installed', interactiveMode: 'Never', installHint: 'az aks install-cli' },
      },
    });
    const err = await failure(readNode(KubeConnection.open(file)!));
    expect(err).toBeInstanceOf(KubeExecError);
    expect(err!.message).toBe('the exec plugin kubelogin-not-installed cannot be run: ENOENT (az aks install-cli)');
  });

  it('a plugin that hangs is killed at its deadline with its process group (what it started goes too)', { timeout: 15_000 }, async () => {
    const pidFile = join(dir, 'grandchild.pid');
    // a shell plugin: it starts its child within milliseconds even on a loaded machine, long before the deadline
    const command = join(dir, 'hangs.sh');
    writeFileSync(command, `#!/bin/sh\nsleep 300 &\necho $! > ${pidFile}\nwait\n`);
    chmodSync(command, 0o755);
    const file = writeKubeconfig(dir, 'hangs', {
      server: api.url,
      cluster: { 'certificate-authority-data': CA_DATA },
      user: { exec: { apiVersion: EXEC_V1, command, interactiveMode: 'Never' } },
    });
    const kube = KubeConnection.open(file, { execDeadlineMs: 1000 })!;
    try {
      const err = await failure(readNode(kube));
      expect(err).toBeInstanceOf(KubeExecError);
      expect(err!.message).toMatch(/did not finish within 1 s; it was killed with its process group/);
      const pid = Number(readFileSync(pidFile, 'utf8'));
      await waitFor(() => !alive(pid), 'the process the plugin started, killed with it', 5_000);
    } finally {
      if (existsSync(pidFile)) kill(Number(readFileSync(pidFile, 'utf8')));
    }
  });
});

/** alive: the process is there and not a zombie waiting for its parent. */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

function kill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone
  }
}
