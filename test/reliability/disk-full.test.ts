/**
 * A full disk under the state database (a 1 MiB tmpfs: the test needs root to mount it).
 * Commits fail with a clear error, /readyz says so, nothing crashes; once space is back, every
 * change is committed and delivered and the database checks clean.
 */
import { startBridge } from '../../testkit/harness.ts';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { tempDir, waitFor } from '../helpers.ts';

let sim: ImdsSimulator;
let dir: ReturnType<typeof tempDir>;
let mnt = '';
beforeAll(async () => {
  expect(process.getuid?.(), 'this test mounts a tmpfs: run the reliability suite as root').toBe(0);
  sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
  await sim.listen(0);
  dir = tempDir();
  mnt = join(dir.path, 'small');
  mkdirSync(mnt);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt]);
});
afterAll(async () => {
  if (mnt) execFileSync('umount', [mnt]);
  await sim?.close();
  dir?.cleanup();
});

describe('a full disk', () => {
  it('stops commits with a clear error, and loses nothing once space is back', async () => {
    const events = join(dir.path, 'events.jsonl');
    const h = await startBridge({
      sim,
      dir: dir.path,
      config: { state: { path: join(mnt, 'state.db') }, observability: { listen: '127.0.0.1:0' } },
      sinks: [{ name: 'f', type: 'file', path: events }],
    });
    const { bridge, lines } = h;
    try {
      const a = sim.addEvent({ noticeMs: 600_000 });
      await waitFor(() => bridge.store.journal.knowsEvent(a.eventId), 'the first event');
      // fill the disk
      const filler = join(mnt, 'filler');
      try {
        writeFileSync(filler, Buffer.alloc(2 * 1024 * 1024));
      } catch {
        /* ENOSPC: the disk is now full, which is the point */
      }
      const added = Array.from({ length: 20 }, (_, i) => sim.addEvent({ noticeMs: 600_000, Description: `d${i}`.repeat(200) }).eventId);
      await waitFor(() => lines.some((l) => l.code === 'STORE_WRITE_FAILED'), 'the store error', 15_000);
      const line = lines.find((l) => l.code === 'STORE_WRITE_FAILED')!;
      expect(line.msg).toBe('cannot write the state database; the change is committed on a later poll');
      expect(String(line.err)).toMatch(/database or disk is full/);
      await waitFor(async () => (await fetch(`${bridge.observabilityUrl}/readyz`)).status === 503, 'not ready');
      // space comes back
      rmSync(filler, { force: true });
      await waitFor(() => added.every((id) => bridge.store.journal.knowsEvent(id)), 'every change committed', 20_000);
      await waitFor(() => added.every((id) => readFileSync(events, 'utf8').includes(`${id}/scheduled`)), 'every change delivered', 20_000);
    } finally {
      await bridge.stop(500);
    }
    const db = new DatabaseSync(join(mnt, 'state.db'));
    expect(db.prepare('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' });
    db.close();
  });
});
