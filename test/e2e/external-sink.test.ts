/**
 * An external sink, as an outside module: examples/pagerduty-sink.js is copied into a
 * directory of its own, where `scheduled-events-bridge` and `zod` resolve as installed
 * packages, and named in the configuration with `type: module`. The daemon runs as a real
 * process against the IMDS simulator, and a local HTTP peer plays PagerDuty's Events API v2.
 */
import { copyFileSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { ROOT, tempDir, waitFor } from '../helpers.ts';
import { cli, finished, start } from './process.ts';

const KEY = 'R0UTINGKEY0123456789abcdefABCDEF';
let dir: ReturnType<typeof tempDir>;
let sim: ImdsSimulator;
let peer: HttpPeer;

/** config writes a configuration whose only sink is the external module, and returns its path. */
function config(name: string, sink: string): string {
  const path = join(dir.path, 'etc', `${name}.yaml`);
  writeFileSync(
    path,
    [
      `imds: { endpoint: ${sim.url}, pollIntervalMs: 200 }`,
      `state: { path: ${JSON.stringify(join(dir.path, `${name}.db`))} }`,
      `observability: { listen: "off" }`,
      'sinks:',
      sink,
    ].join('\n'),
  );
  return path;
}

beforeAll(async () => {
  dir = tempDir();
  // an outside project: the sink beside its configuration, the bridge and zod as installed packages
  mkdirSync(join(dir.path, 'etc', 'node_modules'), { recursive: true });
  symlinkSync(ROOT, join(dir.path, 'etc', 'node_modules', 'scheduled-events-bridge'), 'dir');
  symlinkSync(join(ROOT, 'node_modules', 'zod'), join(dir.path, 'etc', 'node_modules', 'zod'), 'dir');
  copyFileSync(join(ROOT, 'examples', 'pagerduty-sink.js'), join(dir.path, 'etc', 'pagerduty-sink.js'));
  writeFileSync(join(dir.path, 'etc', 'not-a-sink.js'), 'export default { hello: "world" };\n');
  // a sink whose create() never settles and holds nothing open: a Standard Schema by hand, no packages
  writeFileSync(
    join(dir.path, 'etc', 'stuck-sink.js'),
    'const configSchema = { "~standard": { version: 1, vendor: "test", validate: (value) => ({ value }) } };\n' +
      'export default { name: "stuck", configSchema, create: () => new Promise(() => {}) };\n',
  );
  sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
  await sim.listen(0);
  peer = new HttpPeer();
  await peer.listen();
});
afterAll(async () => {
  await peer.close();
  await sim.close();
  dir.cleanup();
});

describe('an external sink module (examples/pagerduty-sink.js)', () => {
  it('delivers through the daemon: Scheduled triggers an alert, Completed resolves it, a refused event is dead-lettered', async () => {
    const path = config(
      'pd',
      `  - { name: pd, type: module, module: ./pagerduty-sink.js, config: { routingKey: ${KEY}, severity: error, url: "${peer.url}/v2/enqueue" }, delivery: { initialBackoffMs: 50, maxBackoffMs: 200 } }`,
    );
    expect((await cli(['validate', '--config', path])).code).toBe(0);
    const bad = { eventId: '' };
    peer.answer = (req) =>
      bad.eventId !== '' && req.body.includes(bad.eventId)
        ? { status: 400, body: '{"status":"invalid event"}' }
        : { status: 202, body: '{"status":"success"}' };
    const child = start(['run', '--config', path]);
    try {
      const a = sim.addEvent({ noticeMs: 600_000, EventType: 'Reboot' });
      await waitFor(() => peer.requests.length >= 1, 'the trigger');
      bad.eventId = sim.addEvent({ noticeMs: 600_000, EventType: 'Freeze' }).eventId;
      sim.removeEvent(a.eventId);
      await waitFor(() => peer.requests.filter((r) => JSON.parse(r.body).event_action === 'resolve').length >= 1, 'the resolve');
      await waitFor(() => peer.requests.some((r) => r.body.includes(bad.eventId)), 'the refused event');
      const bodies = peer.requests.map((r) => JSON.parse(r.body) as Record<string, any>);
      const forA = bodies.filter((b) => b.payload.custom_details.eventId === a.eventId);
      expect(forA.map((b) => b.event_action)).toEqual(['trigger', 'resolve']);
      for (const b of forA) {
        expect(b.routing_key).toBe(KEY);
        expect(b.dedup_key).toBe(`vm0/${a.eventId}`);
        expect(b.payload.severity).toBe('error');
        expect(b.payload.class).toBe('Reboot');
        expect(b.payload.summary).toMatch(/^Reboot of vm0: /);
      }
      expect(
        peer.requests.every((r) => r.method === 'POST' && r.url === '/v2/enqueue' && r.headers['content-type'] === 'application/json'),
      ).toBe(true);
      const dead = await waitFor(async () => {
        const list = JSON.parse((await cli(['dead-letters', 'list', '--json', '--config', path])).stdout) as {
          ceId: string;
          lastError: string;
        }[];
        return list.length > 0 ? list : null;
      }, 'the dead letter');
      expect(dead.map((d) => d.ceId)).toEqual([`${bad.eventId}/scheduled`]);
      expect(dead[0]!.lastError).toContain('PagerDuty answered 400');
    } finally {
      child.kill('SIGTERM');
      expect((await finished(child, 20_000)).code).toBe(0);
    }
  });

  it('a create() that never settles: run does not end quietly (it used to exit 0 at once); start-up fails after the deadline naming the sink', async () => {
    const path = config('stuck', '  - { name: pd, type: module, module: ./stuck-sink.js }');
    const child = start(['run', '--config', path]);
    // the old daemon had nothing left to wait for and exited 0 in about 0.6 s; this one waits for
    // the sink until the start-up deadline (30 s), then fails, naming it
    const ended = await finished(child, 60_000);
    expect(ended.code).toBe(1);
    expect(ended.stderr + ended.stdout).toContain('sinks[0] (pd): create() did not finish within 30 s');
    const { validateConfig } = await import('../../src/config/load.ts');
    const { Bridge } = await import('../../src/daemon/bridge.ts');
    const { pino } = await import('pino');
    const cfg = validateConfig(
      {
        imds: { endpoint: sim.url },
        state: { path: ':memory:' },
        observability: { listen: 'off' },
        sinks: [
          { name: 'out', type: 'stdout' },
          { name: 'pd', type: 'module', module: './stuck-sink.js' },
        ],
      },
      join(dir.path, 'etc', 'stuck.yaml'),
      {},
    );
    const failed = await Bridge.create({ config: cfg, logger: pino({ level: 'silent' }), sinkCreateDeadlineMs: 300 }).then(
      () => null,
      (err: unknown) => err as { code: string; message: string },
    );
    expect(failed?.code).toBe('SINK_CREATE_FAILED');
    expect(failed?.message).toBe('sinks[1] (pd): create() did not finish within 0.3 s');
  }, 90_000);

  it('reports a missing module, a module without the contract, and settings the module refuses, by path, with exit 2', async () => {
    const missing = await cli(['validate', '--config', config('missing', '  - { name: pd, type: module, module: ./no-such-sink.js }')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/sinks\[0\]\.module: cannot load "[^"]*no-such-sink\.js" \(no such file or package\)/);

    const noPackage = await cli([
      'validate',
      '--config',
      config('nopkg', '  - { name: pd, type: module, module: se-bridge-sink-that-does-not-exist }'),
    ]);
    expect(noPackage.code).toBe(2);
    expect(noPackage.stderr).toContain('sinks[0].module: cannot find "se-bridge-sink-that-does-not-exist"');

    const notSink = await cli(['validate', '--config', config('notsink', '  - { name: pd, type: module, module: ./not-a-sink.js }')]);
    expect(notSink.code).toBe(2);
    expect(notSink.stderr).toContain('sinks[0].module: the sink');
    expect(notSink.stderr).toContain('has no create function');

    const refused = await cli([
      'validate',
      '--config',
      config(
        'refused',
        '  - { name: pd, type: module, module: ./pagerduty-sink.js, config: { routingKey: short, severity: loud, extra: 1 } }',
      ),
    ]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('sinks[0].config.routingKey: must be a 32-character PagerDuty integration key');
    expect(refused.stderr).toContain('sinks[0].config.severity:');
    expect(refused.stderr).toContain('sinks[0].config:');

    const noModule = await cli(['validate', '--config', config('nomodule', '  - { name: pd, type: module }')]);
    expect(noModule.code).toBe(2);
    expect(noModule.stderr).toContain('sinks[0].module: is required (string)');

    // run refuses the same configuration before it touches IMDS or the state
    const run = await cli([
      'run',
      '--config',
      config('refused2', '  - { name: pd, type: module, module: ./pagerduty-sink.js, config: { routingKey: short } }'),
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('sinks[0].config.routingKey:');
  });
});
