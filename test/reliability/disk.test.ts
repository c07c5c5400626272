/**
 * The state directory read-only or missing: a clear error and exit code 1 (read-only), a
 * directory created on start (missing), and a store that opens cleanly and loses nothing once
 * the directory is writable again. When the tests run as root (which ignores permissions), the
 * daemon runs as the unprivileged user `nobody`, so the permissions do apply.
 */
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { CLI, ROOT, tempDir, waitFor } from '../helpers.ts';

const asRoot = process.getuid?.() === 0;
const NOBODY = 65534;
let sim: ImdsSimulator;
let dir: ReturnType<typeof tempDir>;
beforeAll(async () => {
  sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
  await sim.listen(0);
  dir = tempDir();
  chmodSync(dir.path, 0o755);
});
afterAll(async () => {
  await sim.close();
  dir.cleanup();
});

function own(path: string): void {
  if (asRoot) chownSync(path, NOBODY, NOBODY);
}
function run(cfg: string) {
  const child = spawn(process.execPath, [CLI, 'run', '--config', cfg], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'info', SE_BRIDGE_IMDS_ENDPOINT: '', SE_BRIDGE_CONFIG: '' },
    ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}),
  });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (c: Buffer) => (out.stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out.stderr += c.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, out, exited };
}

describe('the state directory', () => {
  it('read-only: a clear error and exit 1; writable again: starts, and nothing is lost', async () => {
    const state = join(dir.path, 'ro-state');
    mkdirSync(state);
    own(state);
    chmodSync(state, 0o555);
    const events = join(dir.path, 'ro-events');
    mkdirSync(events);
    own(events);
    const cfg = join(dir.path, 'ro.yaml');
    writeFileSync(
      cfg,
      `imds: { endpoint: ${sim.url}, pollIntervalMs: 200 }\nstate: { path: ${JSON.stringify(join(state, 'state.db'))} }\nsinks: [{ name: f, type: file, path: ${JSON.stringify(join(events, 'e.jsonl'))} }]\nobservability: { listen: "off" }\n`,
    );
    chmodSync(cfg, 0o644);
    const e = sim.addEvent({ noticeMs: 600_000 });
    const first = run(cfg);
    expect(await first.exited).toBe(1);
    expect(first.out.stderr).toContain(`cannot open state database ${join(state, 'state.db')}`);

    chmodSync(state, 0o755);
    const second = run(cfg);
    try {
      await waitFor(() => {
        try {
          return readFileSync(join(events, 'e.jsonl'), 'utf8').includes(`${e.eventId}/scheduled`);
        } catch {
          return false;
        }
      }, 'the event delivered once the directory is writable');
    } finally {
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    }
    const db = new DatabaseSync(join(state, 'state.db'));
    expect(db.prepare('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' });
    db.close();
  });

  it('missing: created on start, with its parents', async () => {
    const parent = join(dir.path, 'missing-parent');
    mkdirSync(parent);
    own(parent);
    const state = join(parent, 'a', 'b', 'state.db');
    const cfg = join(dir.path, 'missing.yaml');
    writeFileSync(
      cfg,
      `imds: { endpoint: ${sim.url}, pollIntervalMs: 200 }\nstate: { path: ${JSON.stringify(state)} }\nobservability: { listen: "off" }\n`,
    );
    chmodSync(cfg, 0o644);
    const r = run(cfg);
    try {
      await waitFor(() => r.out.stdout.includes('"bridge starting"'), 'the bridge to start');
    } finally {
      r.child.kill('SIGTERM');
      expect(await r.exited).toBe(0);
    }
    const db = new DatabaseSync(state);
    expect(db.prepare('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' });
    db.close();
  });
});
