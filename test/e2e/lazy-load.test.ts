/**
 * The Azure SDKs are loaded only when an Azure sink is configured: a webhook-only bridge
 * starts without them. Checked in a fresh Node process that records every module it resolves.
 * The same process shows what a small bridge loads and what it never does: undici (the package)
 * is its HTTP client, while Node's bundled copy of undici (which an ESM import of node:http
 * pulls in), the CloudEvents SDK, prom-client and TLS stay unloaded.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers.ts';

function loadedWith(sinks: unknown[]): string[] {
  return load(sinks).azure;
}

interface Loaded {
  azure: string[];
  packages: string[];
  own: string[];
  undici: string[];
  builtins: string[];
  threads: number;
}

function load(sinks: unknown[]): Loaded {
  const script = `
    import { registerHooks } from 'node:module';
    const seen = [];
    registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.push(r.url); return r; } });
    const { validateConfig } = await import('./src/config/load.ts');
    const { Bridge } = await import('./src/daemon/bridge.ts');
    const { pino } = await import('pino');
    const config = validateConfig({ state: { path: ':memory:' }, sinks: ${JSON.stringify(sinks)} }, 't', {});
    const bridge = await Bridge.create({ config, logger: pino({ level: 'silent' }), dryRun: false });
    await bridge.start();
    const threads = Number(/Threads:\\s+(\\d+)/.exec((await import('node:fs')).readFileSync('/proc/self/status', 'utf8'))[1]);
    await bridge.stop();
    const packageOf = (u) => { if (!u.includes('/node_modules/')) return null; const p = u.split('/node_modules/').pop().split('/'); return p[0].startsWith('@') ? p[0] + '/' + p[1] : p[0]; };
    const packages = [...new Set(seen.map(packageOf).filter((p) => p !== null))];
    process.stdout.write(JSON.stringify({ azure: seen.filter((u) => u.includes('/node_modules/@azure/')), packages, own: seen.filter((u) => !u.includes('/node_modules/')), undici: seen.filter((u) => u.includes('/node_modules/undici/')), builtins: process.moduleLoadList, threads }));
    process.exit(0);
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
  expect(r.stderr).toBe('');
  return JSON.parse(r.stdout) as Loaded;
}

describe('lazy loading of the Azure SDKs', () => {
  it('a webhook and file bridge loads none of them', () => {
    expect(
      loadedWith([
        { name: 'w', type: 'webhook', url: 'http://127.0.0.1:9/x' },
        { name: 'f', type: 'file', path: '/dev/null' },
      ]),
    ).toEqual([]);
  });

  it("a plain-HTTP webhook and file bridge loads undici as its one HTTP client, and neither Node's bundled copy, nor the CloudEvents SDK, nor prom-client, nor TLS", () => {
    const { packages, undici, builtins } = load([
      { name: 'w', type: 'webhook', url: 'http://127.0.0.1:9/x' },
      { name: 'f', type: 'file', path: '/dev/null' },
    ]);
    expect(packages).toContain('zod');
    expect(packages).toContain('undici');
    expect(packages.filter((p) => ['cloudevents', 'prom-client', 'jsonata'].includes(p))).toEqual([]);
    // undici's parts one by one: its main entry (fetch, WebSocket, cookies) stays unloaded
    expect(undici.some((u) => u.endsWith('/undici/lib/dispatcher/agent.js'))).toBe(true);
    expect(undici.filter((u) => /\/undici\/(index\.js|lib\/web\/)/.test(u))).toEqual([]);
    expect(builtins.filter((m) => m.includes('undici'))).toEqual([]);
    // no https URL is configured, so node:https and node:tls stay unloaded, and node:http2
    // (which undici's HTTP/2 client would load at once) too: it gets http2-lazy.ts instead
    expect(builtins.filter((m) => ['NativeModule https', 'NativeModule tls', 'NativeModule http2'].includes(m))).toEqual([]);
  });

  it('a command that makes no request (validate, --help) loads nothing of undici; one that makes one does', () => {
    const config = join(mkdtempSync(join(tmpdir(), 'se-bridge-lazy-')), 'config.yaml');
    writeFileSync(config, "imds: {endpoint: 'http://127.0.0.1:9'}\nsinks:\n  - {name: f, type: file, path: /dev/null}\n");
    const undiciOf = (args: string[], code = 0): string[] => {
      const script = `
        import { registerHooks } from 'node:module';
        const seen = [];
        registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.push(r.url); return r; } });
        process.on('exit', () => process.stderr.write('\\n' + JSON.stringify(seen.filter((u) => u.includes('/node_modules/undici/')))));
        process.argv = [process.argv[0], 'se-bridge', ...${JSON.stringify(args)}];
        await import('./src/commands/cli.ts');
      `;
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
      expect(r.status, r.stderr).toBe(code);
      return JSON.parse(r.stderr.trim().split('\n').at(-1)!) as string[];
    };
    expect(undiciOf(['validate', '--config', config])).toEqual([]);
    expect(undiciOf(['--help'])).toEqual([]);
    // a drill asks the daemon over its control channel: undici comes with that request (no daemon runs: it fails, saying so)
    expect(undiciOf(['drill', '--config', config], 1).length).toBeGreaterThan(0);
  });

  it("the stand-in for node:http2 holds node:http2's own constants, and connects through it", async () => {
    const lazy = await import('../../src/lib/http2-lazy.ts');
    const real = process.getBuiltinModule('node:http2');
    for (const [k, v] of Object.entries(lazy.constants)) expect([k, v]).toEqual([k, real.constants[k as keyof typeof real.constants]]);
    const session = lazy.connect('http://127.0.0.1:9');
    await new Promise((resolve) => session.once('error', resolve));
    expect(session.destroyed).toBe(true);
  });

  it('jsonata loads only with a webhook template, in a worker thread of its own; the Kubernetes client (src/kube/client) only with a kubernetes sink', () => {
    const plain = load([{ name: 'w', type: 'webhook', url: 'http://127.0.0.1:9/x' }]);
    const templated = load([{ name: 'w', type: 'webhook', url: 'http://127.0.0.1:9/x', template: '{ "id": id }' }]);
    // the daemon's own thread never loads it (a template runs where it cannot stall the daemon): one thread more does
    expect(templated.packages).not.toContain('jsonata');
    expect(templated.threads).toBeGreaterThan(plain.threads);
    const kube = load([{ name: 'k', type: 'kubernetes', nodeName: 'n0' }]);
    const client = (l: { own: string[] }) => l.own.filter((u) => u.endsWith('/src/kube/client.ts'));
    expect(client(plain)).toEqual([]);
    expect(client(templated)).toEqual([]);
    expect(client(kube)).toHaveLength(1);
    expect(kube.threads).toBe(plain.threads);
  });

  it('an eventgrid sink with an access key, and a webhook with an Entra ID token not yet asked for, load none of them', () => {
    expect(
      loadedWith([
        { name: 'g', type: 'eventgrid', endpoint: 'http://127.0.0.1:9', accessKey: 'k' },
        { name: 'w', type: 'webhook', url: 'http://127.0.0.1:9/x', auth: { kind: 'managedIdentity', scope: 'api://app/.default' } },
      ]),
    ).toEqual([]);
  });

  it('an eventhubs sink loads @azure/event-hubs (and not Service Bus)', () => {
    const loaded = loadedWith([
      {
        name: 'h',
        type: 'eventhubs',
        connectionString: 'Endpoint=sb://127.0.0.1:9;SharedAccessKeyName=k;SharedAccessKey=dg==;UseDevelopmentEmulator=true;EntityPath=h',
      },
    ]);
    expect(loaded.some((u) => u.includes('/@azure/event-hubs/'))).toBe(true);
    expect(loaded.some((u) => u.includes('/@azure/service-bus/'))).toBe(false);
  });
});
