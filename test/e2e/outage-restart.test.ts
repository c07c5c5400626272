/**
 * SIGTERM during a webhook outage, then a restart once the peer is back: the daemon stops
 * within its deadline, keeps what it could not deliver, and delivers it after the restart.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { tempDir, waitFor } from '../helpers.ts';
import { cli, finished, start } from './process.ts';

let dir: ReturnType<typeof tempDir>;
let sim: ImdsSimulator;
let peer: HttpPeer;
beforeAll(async () => {
  dir = tempDir();
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

describe('webhook outage across a restart', () => {
  it('loses nothing: SIGTERM while the peer is down, restart after it is back', async () => {
    const cfg = join(dir.path, 'bridge.yaml');
    writeFileSync(
      cfg,
      [
        `imds: { endpoint: ${sim.url}, pollIntervalMs: 200 }`,
        `state: { path: ${JSON.stringify(join(dir.path, 'state.db'))} }`,
        `sinks: [{ name: ops, type: webhook, url: ${peer.url}/hook, delivery: { initialBackoffMs: 50, maxBackoffMs: 200, timeoutMs: 1000 } }]`,
        'log: { level: info }',
      ].join('\n'),
    );
    let down = true;
    peer.answer = () => (down ? { status: 503 } : { status: 200 });
    const a = sim.addEvent({ noticeMs: 600_000 });
    const b = sim.addEvent({ EventStatus: 'Started', startedMs: 600_000 });
    let child = start(['run', '--config', cfg]);
    await waitFor(() => peer.requests.length >= 4, 'attempts during the outage');
    sim.removeEvent(b.eventId);
    await waitFor(() => child.out.stdout.includes('"event completed"'), 'the completed transition to be committed');
    child.kill('SIGTERM');
    const stopped = await finished(child, 20_000);
    expect(stopped.code).toBe(0);
    expect(stopped.stdout).toContain('"bridge stopped"');

    const pending = await cli(['dead-letters', 'list', '--json', '--config', cfg]);
    expect(JSON.parse(pending.stdout)).toEqual([]);

    down = false;
    const mark = peer.requests.length;
    child = start(['run', '--config', cfg]);
    await waitFor(() => peer.requests.slice(mark).filter((r) => r.headers['ce-id']).length >= 3, 'delivery after the restart', 20_000);
    child.kill('SIGTERM');
    expect((await finished(child, 20_000)).code).toBe(0);

    const delivered = peer.requests.slice(mark).map((r) => String(r.headers['ce-id']));
    expect(new Set(delivered)).toEqual(new Set([`${a.eventId}/scheduled`, `${b.eventId}/started`, `${b.eventId}/completed`]));
    expect(delivered.indexOf(`${b.eventId}/started`)).toBeLessThan(delivered.indexOf(`${b.eventId}/completed`));
  });
});
