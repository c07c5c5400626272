/**
 * The npm package as a new user gets it: `npm pack`, then `npm install -g --prefix` of the
 * tarball into a temporary prefix with the pinned Node, then the installed `se-bridge`: its
 * version, `validate` on the example configuration, the demo, and `run` against the IMDS
 * simulator with a file sink. The dependencies come from npm's cache when `npm ci` filled it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { EXAMPLE_ENV, readText, ROOT, tempDir } from '../helpers.ts';
import { awaitWhileRunning, command, type Running } from './process.ts';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
let dir: ReturnType<typeof tempDir>;
let tarball = '';
let installed = '';
let bin = '';

/** seBridge runs the installed command itself, through its #! line, with the pinned Node first on PATH. */
function seBridge(args: string[], timeoutMs = 60_000, extra: NodeJS.ProcessEnv = {}): Running {
  const env = {
    ...process.env,
    PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`,
    SE_BRIDGE_CONFIG: '',
    LOG_LEVEL: '',
    ...extra,
  };
  return command(bin, args, { cwd: dir.path, env }, timeoutMs);
}

beforeAll(() => {
  dir = tempDir('se-bridge-package-');
  if (!existsSync(join(ROOT, 'dist', 'src', 'commands', 'cli.js'))) execFileSync(npm, ['run', 'build'], { cwd: ROOT, stdio: 'ignore' });
  // --ignore-scripts: `npm test` has just built dist/, and rebuilding it here would race the other suites
  execFileSync(npm, ['pack', '--ignore-scripts', '--pack-destination', dir.path, '--silent'], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  tarball = join(
    dir.path,
    readdirSync(dir.path).find((f) => f.endsWith('.tgz'))!,
  );
  const prefix = join(dir.path, 'prefix');
  execFileSync(npm, ['install', '-g', '--prefix', prefix, tarball, '--no-audit', '--no-fund', '--prefer-offline', '--silent'], {
    cwd: dir.path,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, npm_config_loglevel: 'error' },
  });
  installed = join(prefix, 'lib', 'node_modules', 'scheduled-events-bridge');
  bin = join(prefix, 'bin', 'se-bridge');
}, 240_000);
afterAll(() => dir?.cleanup());

describe('the npm package', () => {
  it('holds the compiled code, the examples, README and LICENSE, and none of test/, bench/, .ci/ or the sources', () => {
    const files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map((f) => f.replace(/^package\//, ''));
    expect(files).toEqual(
      expect.arrayContaining([
        'package.json',
        'LICENSE',
        'README.md',
        'bin/se-bridge.js',
        'dist/src/commands/cli.js',
        'dist/src/api.js',
        'dist/src/api.d.ts',
        'dist/src/kit.js',
        'dist/src/kit.d.ts',
        'dist/sinks/webhook/index.js',
        'config/bridge.example.yaml',
        'examples/pagerduty-sink.js',
      ]),
    );
    expect(files.filter((f) => /^(test|bench|\.ci|src|testkit|scripts|node_modules)\//.test(f))).toEqual([]);
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    const pkg = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(Object.keys(pkg.dependencies)).not.toContain('node');
    expect(existsSync(join(installed, 'node_modules', 'node'))).toBe(false);
  });

  it('resolves its two entries: the sink contract at the root, the parts at /kit', () => {
    const app = join(dir.path, 'app');
    mkdirSync(join(app, 'node_modules'), { recursive: true });
    symlinkSync(installed, join(app, 'node_modules', 'scheduled-events-bridge'), 'dir');
    const script = [
      "const root = await import('scheduled-events-bridge');",
      "const kit = await import('scheduled-events-bridge/kit');",
      'console.log(JSON.stringify([typeof root.defineSink, typeof root.classifyHttpStatus, typeof kit.classifyHttpStatus, typeof kit.defineSink]));',
    ].join('\n');
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: app, encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual(['function', 'undefined', 'function', 'undefined']);
  });

  it('prints its version from package.json', async () => {
    const r = await seBridge(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${VERSION}\n`);
  });

  it('validates the example configuration', async () => {
    const r = await seBridge(['validate', '--config', join(installed, 'config', 'bridge.example.yaml')], 60_000, EXAMPLE_ENV);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('valid; sinks: console (stdout), ops (webhook)');
  });

  it('runs the demo', async () => {
    const r = await seBridge(['demo', '--duration', '15'], 60_000);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/total\s+\d+/);
    expect(r.stderr).not.toContain('ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING');
  }, 60_000);

  it('runs against IMDS and delivers to a file', async () => {
    const sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
    await sim.listen(0);
    try {
      const events = join(dir.path, 'events.jsonl');
      const cfg = join(dir.path, 'bridge.yaml');
      writeFileSync(
        cfg,
        [
          `imds: { endpoint: ${sim.url}, pollIntervalMs: 200 }`,
          `state: { path: ${JSON.stringify(join(dir.path, 'state.db'))} }`,
          'observability: { listen: "off" }',
          `sinks: [{ name: audit, type: file, path: ${JSON.stringify(events)} }]`,
        ].join('\n'),
      );
      const run = seBridge(['run', '--config', cfg]);
      const e = sim.addEvent({ noticeMs: 600_000 });
      await awaitWhileRunning(run, () => readText(events).includes(e.eventId), 'the scheduled event in the file');
      run.child.kill('SIGTERM');
      const r = await run;
      expect(r.code).toBe(0);
      const written = readText(events)
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { id: string; type: string });
      expect(written.map((w) => w.id)).toEqual([`${e.eventId}/scheduled`]);
      expect(written[0]!.type).toBe('azure.scheduledevent.scheduled');
    } finally {
      await sim.close();
    }
  }, 60_000);
});
