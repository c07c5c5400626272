/**
 * What each deployment profile loads: the compiled daemon runs against the IMDS simulator until
 * it has carried an event to its sinks, with a module hook recording every file it resolves,
 * read when it exits. The profiles run the ES modules of dist/src (the module graph the bundle is
 * made of, whose lazy imports the bundle keeps), with the package's V8 settings; the package's own
 * `se-bridge` (bin/se-bridge.js) runs the bundle, dist/se-bridge.cjs, and needs nothing else. Each profile loads exactly
 * the packages it needs, and nothing of a client its configuration does not use: a bridge with
 * no kubernetes sink, no Kubernetes health check and no Lease store never loads the Kubernetes
 * client (src/kube/client), and no profile here loads an Azure SDK (the Blob store speaks REST). Read from the
 * loaded modules, never from a memory figure (those are bench/memory.ts's). Azure Blob Storage is
 * Azurite; the Kubernetes API is testkit/kube-apiserver.ts, a stand-in written from the API
 * reference, since no API server can run here.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { FleetStores } from '../../testkit/fleet-stores.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { LAUNCH } from '../../scripts/launch.ts';
import { ROOT, tempDir, waitFor } from '../helpers.ts';

const BIN = join(ROOT, 'bin', 'se-bridge.js');
const CLI = join(ROOT, 'dist', 'src', 'commands', 'cli.js');
const BUNDLE = join(ROOT, 'dist', 'se-bridge.cjs');
/** The package's V8 settings, read from its #! line. */
const V8_FLAGS = LAUNCH.v8Flags;
let dir: ReturnType<typeof tempDir>;
let stores: FleetStores;
let hook: HttpPeer;
let kubeconfig = '';

beforeAll(async () => {
  dir = tempDir('se-bridge-profiles-');
  stores = await FleetStores.start();
  stores.kube.addNode('vm0');
  hook = new HttpPeer();
  await hook.listen();
  kubeconfig = join(dir.path, 'kubeconfig');
  writeFileSync(kubeconfig, stores.kube.kubeconfig());
  // records every file: URL resolved, written when the process exits
  writeFileSync(
    join(dir.path, 'record.mjs'),
    [
      "import { registerHooks } from 'node:module';",
      "import { writeFileSync } from 'node:fs';",
      'const seen = new Set();',
      "registerHooks({ resolve(s, c, n) { const r = n(s, c); if (r.url.startsWith('file:')) seen.add(r.url); return r; } });",
      "process.on('exit', () => writeFileSync(process.env.RECORD_TO, [...seen].join('\\n')));",
    ].join('\n'),
  );
}, 60_000);
afterAll(async () => {
  await hook?.close();
  await stores?.stop();
  dir?.cleanup();
});

interface Loaded {
  packages: string[];
  own: string[];
}

/** run: the daemon with these sinks (and fleet), until the webhook got the event; what it loaded. */
async function run(name: string, sinks: unknown[], fleet?: unknown, bundled = false): Promise<Loaded> {
  expect(existsSync(BIN) && existsSync(CLI) && existsSync(BUNDLE)).toBe(true);
  const sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 50 });
  await sim.listen(0);
  const config = join(dir.path, `${name}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      imds: { endpoint: sim.url },
      state: { path: join(dir.path, `${name}.db`) },
      observability: { listen: 'off' },
      log: { level: 'warn' },
      sinks,
      ...(fleet === undefined ? {} : { fleet }),
    }),
  );
  const record = join(dir.path, `${name}.loaded`);
  const command = bundled ? [BIN] : [process.execPath, ...V8_FLAGS, CLI];
  const child = spawn(command[0]!, [...command.slice(1), 'run', '--config', config], {
    env: {
      ...process.env,
      PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`,
      NODE_OPTIONS: `--import ${pathToFileURL(join(dir.path, 'record.mjs')).href}`,
      RECORD_TO: record,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  try {
    const before = hook.requests.length;
    await waitFor(
      () => sim.requests.some((r) => r.path === '/metadata/scheduledevents'),
      `${name}: the first IMDS read (${stderr})`,
      30_000,
    );
    sim.addEvent({ noticeMs: 3_600_000 });
    await waitFor(() => hook.requests.length > before, `${name}: the event at the webhook (${stderr})`, 30_000);
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
    await sim.close();
  }
  const urls = readFileSync(record, 'utf8').split('\n').filter(Boolean);
  const packageOf = (u: string) => {
    const p = u.split('/node_modules/').pop()!.split('/');
    return p[0]!.startsWith('@') ? `${p[0]}/${p[1]}` : p[0]!;
  };
  return {
    packages: [...new Set(urls.filter((u) => u.includes('/node_modules/')).map(packageOf))].sort(),
    own: urls.filter((u) => u.includes('/dist/')).map((u) => u.slice(u.indexOf('/dist/') + 6)),
  };
}

const webhook = () => ({ name: 'hook', type: 'webhook', url: hook.url });
const file = (name: string) => ({ name: 'audit', type: 'file', path: join(dir.path, `${name}.jsonl`) });
/** What every profile loads: the configuration (zod, yaml), the log (pino and its parts), HTTP (undici). */
const CORE = [
  '@pinojs/redact',
  'atomic-sleep',
  'on-exit-leak-free',
  'pino',
  'pino-std-serializers',
  'quick-format-unescaped',
  'safe-stable-stringify',
  'sonic-boom',
  'thread-stream',
  'undici',
  'yaml',
  'zod',
];
const KUBE_CLIENT = 'src/kube/client.js';

describe('what each profile of the package loads', () => {
  it("the package's se-bridge runs the bundle: a webhook and file bridge loads no other file of the package and no package", async () => {
    expect(V8_FLAGS).toContain('--optimize-for-size');
    expect(V8_FLAGS).toContain('--liftoff-only');
    const loaded = await run('bundled', [webhook(), file('bundled')], undefined, true);
    expect(loaded.own).toEqual(['src/lib/node-version.js', 'se-bridge.cjs']);
    expect(loaded.packages).toEqual([]);
  }, 60_000);

  it('webhook and file: the core packages alone; neither the Kubernetes client nor any Azure SDK', async () => {
    const loaded = await run('plain', [webhook(), file('plain')]);
    expect(loaded.packages).toEqual(CORE);
    expect(loaded.own).not.toContain(KUBE_CLIENT);
    expect(loaded.own.filter((m) => /^src\/fleet\/budget\/stores\/(blob|lease)\.js$/.test(m))).toEqual([]);
  }, 60_000);

  it('a fleet budget on Blob Storage: the REST calls of blob-rest and the core packages; no Azure SDK, no Kubernetes client', async () => {
    const loaded = await run('blob', [webhook(), file('blob')], {
      group: 'profiles-blob',
      maxUnavailable: 1,
      store: stores.config('blob'),
    });
    expect(loaded.packages).toEqual(CORE);
    expect(loaded.own).toContain('src/fleet/budget/stores/blob-rest.js');
    expect(loaded.own).not.toContain(KUBE_CLIENT);
  }, 60_000);

  it('the AKS DaemonSet (kubernetes sink, probe, webhook, file, a Lease store): the Kubernetes client, the core packages and nothing else', async () => {
    const loaded = await run(
      'aks',
      [
        { name: 'node', type: 'kubernetes', kubeconfig, nodeName: 'vm0' },
        { name: 'lb', type: 'probe', listen: '127.0.0.1:0', drainSeconds: 5 },
        webhook(),
        file('aks'),
      ],
      { group: 'profiles-aks', maxUnavailable: 1, store: stores.config('kubernetes') },
    );
    expect(loaded.packages).toEqual(CORE);
    expect(loaded.own).toContain(KUBE_CLIENT);
    expect(loaded.own).toContain('src/fleet/budget/stores/lease.js');
    expect(loaded.own).not.toContain('src/fleet/budget/stores/blob.js');
  }, 60_000);
});
