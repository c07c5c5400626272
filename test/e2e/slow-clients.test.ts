/**
 * 1,100 slow clients against the approval server of a daemon limited to 1,024 open files:
 * each sends the start of a request and then one header byte a second. The daemon must keep
 * polling IMDS and delivering, cut every slow client off (never half-closed and left waiting),
 * and let a valid, signed approval through.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { secretKey, signatureHeaders } from '../../src/lib/standard-webhooks.ts';
import { CLI, freePort, readText, ROOT, tempDir, waitFor } from '../helpers.ts';

const SLOW_CLIENTS = 1100;
const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;

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

it('keeps polling and approving under 1,100 slow connections with ulimit -n 1024', async () => {
  const port = await freePort();
  const events = join(dir.path, 'events.jsonl');
  const cfg = join(dir.path, 'bridge.yaml');
  writeFileSync(
    cfg,
    [
      `imds: { endpoint: ${sim.url}, pollIntervalMs: 200 }`,
      `state: { path: ${JSON.stringify(join(dir.path, 'state.db'))} }`,
      `sinks: [{ name: audit, type: file, path: ${JSON.stringify(events)} }]`,
      `identity: { vmName: vm0 }`,
      `approval: { secret: "${SECRET}" }`,
      `server: { listen: "127.0.0.1:${port}", rateLimit: { perSecond: 1000, burst: 1000 } }`,
      `observability: { listen: "off" }`,
    ].join('\n'),
  );
  const daemon = spawn('sh', ['-c', 'ulimit -n 1024 && exec "$0" "$@"', process.execPath, CLI, 'run', '--config', cfg], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', SE_BRIDGE_CONFIG: '', SE_BRIDGE_IMDS_ENDPOINT: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  daemon.stdout.on('data', (c: Buffer) => (log += c.toString()));
  daemon.stderr.on('data', (c: Buffer) => (log += c.toString()));
  const exited = new Promise<number | null>((resolve) => daemon.on('exit', (code) => resolve(code)));
  const slow: Socket[] = [];
  let closedByServer = 0;
  const trickle = setInterval(() => {
    for (const s of slow) if (!s.destroyed) s.write('x');
  }, 1000);
  try {
    await waitFor(() => log.includes('approval server listening'), 'the daemon to listen');
    const first = sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => readText(events).includes(first.eventId), 'the first event');

    for (let i = 0; i < SLOW_CLIENTS; i++) {
      const s = connect(port, '127.0.0.1');
      s.on('error', () => undefined);
      s.on('close', () => closedByServer++);
      s.setTimeout(60_000, () => s.destroy());
      s.write('POST /v1/approvals HTTP/1.1\r\nHost: bridge\r\nX-Slow: ');
      slow.push(s);
    }
    const loadStart = Date.now();
    // IMDS is still read, and a change made now still reaches the sink
    const second = sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => readText(events).includes(second.eventId), 'the event added under load', 20_000);
    const readsUnderLoad = () => sim.requests.filter((r) => r.path === '/metadata/scheduledevents' && r.at >= loadStart).length;
    await waitFor(() => readsUnderLoad() >= 10, 'ten reads under load', 20_000);

    // a valid approval gets through (connections refused while the slow ones hold every slot are retried)
    const body = JSON.stringify({ eventId: second.eventId, approver: 'oncall' });
    const approved = await waitFor(
      async () => {
        try {
          const headers = { 'content-type': 'application/json', ...signatureHeaders([secretKey(SECRET)!], `msg_${Date.now()}`, body) };
          const r = await fetch(`http://127.0.0.1:${port}/v1/approvals`, {
            method: 'POST',
            headers,
            body,
            signal: AbortSignal.timeout(5000),
          });
          return r.status === 200 ? ((await r.json()) as { status: string }) : null;
        } catch {
          return null;
        }
      },
      'a valid approval to get through',
      30_000,
      500,
    );
    expect(approved.status).toBe('approved');
    expect(sim.startRequests.flatMap((s) => s.eventIds)).toEqual([second.eventId]);
    // every slow client was cut off by the server, none left half-open
    await waitFor(() => closedByServer === SLOW_CLIENTS, `all ${SLOW_CLIENTS} slow connections closed by the server`, 30_000, 250);
    expect(log).not.toMatch(/EMFILE/);
    expect(log).not.toMatch(/IMDS read failed/);
  } finally {
    clearInterval(trickle);
    for (const s of slow) s.destroy();
    daemon.kill('SIGTERM');
    await exited;
  }
}, 120_000);
