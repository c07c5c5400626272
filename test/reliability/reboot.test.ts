/**
 * The reboot the event announced: the bridge is killed while an event is Started (its
 * `started` not yet delivered: the webhook is down), the simulator removes the event while the
 * bridge is gone, and a new bridge process starts: `completed` is reported, and the
 * undelivered `started` is delivered first, from the outbox kept on disk.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { tempDir, waitFor } from '../helpers.ts';
import { start } from '../e2e/process.ts';

let dir: ReturnType<typeof tempDir>;
let sim: ImdsSimulator;
let hook: HttpPeer;
beforeAll(async () => {
  dir = tempDir();
  sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
  await sim.listen(0);
  hook = new HttpPeer();
  await hook.listen();
});
afterAll(async () => {
  await hook.close();
  await sim.close();
  dir.cleanup();
});

describe('the reboot the event announced', () => {
  it('reports completed after the restart, with the outbox of undelivered events intact', async () => {
    const cfg = join(dir.path, 'bridge.yaml');
    writeFileSync(
      cfg,
      [
        `imds: { endpoint: ${sim.url}, pollIntervalMs: 200 }`,
        `state: { path: ${JSON.stringify(join(dir.path, 'state.db'))} }`,
        `sinks: [{ name: ops, type: webhook, url: ${hook.url}, delivery: { initialBackoffMs: 50, maxBackoffMs: 200 } }]`,
        'observability: { listen: "off" }',
      ].join('\n'),
    );
    let up = true;
    hook.answer = () => (up ? { status: 204 } : { status: 503 });
    const e = sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 600_000 });
    let child = start(['run', '--config', cfg]);
    await waitFor(() => hook.requests.some((r) => r.headers['ce-id'] === `${e.eventId}/scheduled`), 'scheduled delivered');
    up = false;
    sim.startEvent(e.eventId);
    await waitFor(
      () => hook.requests.filter((r) => r.headers['ce-id'] === `${e.eventId}/started`).length >= 2,
      'started failing to deliver',
    );
    child.kill('SIGKILL'); // the reboot
    await new Promise((r) => child.once('exit', r));
    sim.removeEvent(e.eventId); // the event finishes while the VM is down
    up = true;
    const mark = hook.requests.length;
    child = start(['run', '--config', cfg]);
    try {
      await waitFor(
        () => hook.requests.slice(mark).some((r) => r.headers['ce-id'] === `${e.eventId}/completed`),
        'completed after the restart',
        20_000,
      );
      const after = hook.requests.slice(mark).map((r) => String(r.headers['ce-id']));
      expect(after).toEqual([`${e.eventId}/started`, `${e.eventId}/completed`]);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });
});
