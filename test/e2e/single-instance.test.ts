/**
 * One daemon per state database: a second `run` on the same state exits 1 and says why;
 * read-only commands keep working beside the daemon; a daemon killed with SIGKILL never
 * blocks its restart. Real processes, real files.
 */
import { linkSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { readText, tempDir, waitFor } from '../helpers.ts';
import { cli, finished, start } from './process.ts';

let sim: ImdsSimulator;
let dir: ReturnType<typeof tempDir>;
beforeAll(async () => {
  sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 20 });
  await sim.listen(0);
  dir = tempDir();
});
afterAll(async () => {
  await sim.close();
  dir.cleanup();
});

it('refuses a second daemon on the same state, serves read-only commands, and restarts after SIGKILL', async () => {
  const events = join(dir.path, 'events.jsonl');
  const state = join(dir.path, 'state', 'state.db');
  const cfg = join(dir.path, 'bridge.yaml');
  writeFileSync(
    cfg,
    [
      `imds: { endpoint: ${sim.url}, pollIntervalMs: 200 }`,
      `state: { path: ${JSON.stringify(state)} }`,
      `sinks: [{ name: audit, type: file, path: ${JSON.stringify(events)} }]`,
      `identity: { vmName: vm0 }`,
      `observability: { listen: "off" }`,
    ].join('\n'),
  );
  const e = sim.addEvent({ noticeMs: 600_000 });
  const first = start(['run', '--config', cfg]);
  try {
    await waitFor(() => first.out.stdout.includes('"event scheduled"'), 'the first daemon to see the event');
    await waitFor(() => readText(events).includes(e.eventId), 'the first delivery');

    const second = await cli(['run', '--config', cfg]);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`another se-bridge daemon is using the state database ${realpathSync(state)}`);

    // the same database through a symbolic link (to the file, and to its directory): one lock
    const linked = join(dir.path, 'linked.db');
    symlinkSync(state, linked);
    symlinkSync(join(dir.path, 'state'), join(dir.path, 'state-link'), 'dir');
    for (const other of [linked, join(dir.path, 'state-link', 'state.db')]) {
      const linkedCfg = join(dir.path, `bridge-${basename(other)}-${other.length}.yaml`);
      writeFileSync(linkedCfg, readFileSync(cfg, 'utf8').replace(JSON.stringify(state), JSON.stringify(other)));
      const third = await cli(['run', '--config', linkedCfg]);
      expect(third.code).toBe(1);
      expect(third.stderr).toContain(`another se-bridge daemon is using the state database ${realpathSync(state)} (${other} leads there)`);
    }

    // the same database through a hard link, in the same directory and in another: its device and inode are locked too
    mkdirSync(join(dir.path, 'elsewhere'));
    for (const hard of [join(dir.path, 'state', 'hard.db'), join(dir.path, 'elsewhere', 'hard.db')]) {
      linkSync(state, hard);
      const hardCfg = join(dir.path, `bridge-hard-${hard.length}.yaml`);
      writeFileSync(hardCfg, readFileSync(cfg, 'utf8').replace(JSON.stringify(state), JSON.stringify(hard)));
      const fourth = await cli(['run', '--config', hardCfg]);
      expect(fourth.code).toBe(1);
      expect(fourth.stderr).toMatch(
        /another se-bridge daemon is using the state database .*hard\.db \(it holds .*se-bridge-\d+-\d+\.lock\)/,
      );
    }

    const status = await cli(['status', '--json', '--config', cfg]);
    expect(status.code).toBe(0);
    expect((JSON.parse(status.stdout) as { events: { eventId: string }[] }).events.map((x) => x.eventId)).toEqual([e.eventId]);
    const dead = await cli(['dead-letters', 'list', '--json', '--config', cfg]);
    expect(dead.code).toBe(0);
    expect(JSON.parse(dead.stdout)).toEqual([]);

    first.kill('SIGKILL');
    await finished(first);
    const restarted = start(['run', '--config', cfg]);
    try {
      await waitFor(() => restarted.out.stdout.includes('"bridge starting"'), 'the restart after SIGKILL');
      const later = sim.addEvent({ noticeMs: 600_000 });
      await waitFor(() => readText(events).includes(later.eventId), 'the restarted daemon to deliver');
      // each event exactly once at the sink
      const ids = readText(events)
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { id: string }).id);
      expect(ids).toEqual([`${e.eventId}/scheduled`, `${later.eventId}/scheduled`]);
    } finally {
      restarted.kill('SIGTERM');
      expect((await finished(restarted)).code).toBe(0);
    }
  } finally {
    first.kill('SIGKILL');
  }
}, 90_000);
