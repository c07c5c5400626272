/**
 * `se-bridge drill`: the daemon as a real process polling the project's IMDS simulator, its
 * sinks against real peers on 127.0.0.1 (an HTTP peer for the webhook, a file), and the drill
 * command asking it over the control channel (a Unix socket beside the state database).
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { tempDir, waitFor } from '../helpers.ts';
import { cli, start, stopProcesses } from './process.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Report {
  passed: boolean;
  problems: string[];
  drill: { eventId: string; ended: string | null; request: { type: string } };
  approval: { by: string; via: string; afterMs: number } | null;
  events: { transition: string; ceId: string; sinks: { sink: string; outcome: string; attempts: number }[] }[];
}

interface Setup {
  sim: ImdsSimulator;
  peer: HttpPeer;
  cfg: string;
  dir: string;
  events: () => Record<string, unknown>[];
}

async function daemon(rules: unknown[] = [{ match: {}, action: 'approve' }]): Promise<Setup> {
  const sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
  await sim.listen(0);
  const peer = new HttpPeer();
  await peer.listen();
  const dir = tempDir();
  cleanups.push(
    () => sim.close(),
    () => peer.close(),
    () => dir.cleanup(),
  );
  const file = join(dir.path, 'events.jsonl');
  const cfg = join(dir.path, 'bridge.yaml');
  const config = {
    imds: { endpoint: sim.url, pollIntervalMs: 200 },
    state: { path: join(dir.path, 'state.db') },
    observability: { listen: 'off' },
    log: { level: 'warn' },
    approval: { rules },
    sinks: [
      { name: 'audit', type: 'file', path: file },
      { name: 'hook', type: 'webhook', url: `${peer.url}/events` },
    ],
  };
  writeFileSync(cfg, JSON.stringify(config));
  const child = start(['run', '--config', cfg]);
  cleanups.push(() => stopProcesses([child]));
  await waitFor(() => {
    try {
      return statSync(join(dir.path, 'se-bridge.sock')).isSocket();
    } catch {
      return false;
    }
  }, 'the control channel');
  const events = () =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { sim, peer, cfg, dir: dir.path, events };
}

describe('se-bridge drill', () => {
  it('plays a maintenance through every sink, marked drill: true, approved by the policy, with no StartRequests; the report passes', async () => {
    const s = await daemon();
    const r = await cli(['drill', '--notice', '3s', '--duration', '1s', '--config', s.cfg, '--json'], {}, 60_000);
    expect(r.stderr).toBe('');
    expect(r.code, r.stdout).toBe(0);
    const report = JSON.parse(r.stdout) as Report;
    expect(report.passed).toBe(true);
    expect(report.drill.ended).toBe('completed');
    expect(report.drill.eventId).toMatch(/^drill-[0-9a-f-]{36}$/);
    expect(report.approval).toMatchObject({ via: 'policy' });
    expect(report.events.map((e) => e.transition)).toEqual(['scheduled', 'approved', 'started', 'completed']);
    for (const e of report.events) {
      expect(e.sinks.map((x) => x.sink).sort()).toEqual(['audit', 'hook']);
      for (const x of e.sinks) expect(x).toMatchObject({ outcome: 'delivered', attempts: 1 });
    }
    // nothing reached IMDS
    expect(s.sim.startRequests).toEqual([]);
    // every CloudEvent is marked: in the file (structured) and in the webhook's headers (binary)
    const inFile = s.events();
    expect(inFile.map((e) => e.type)).toEqual([
      'azure.scheduledevent.scheduled',
      'azure.scheduledevent.approved',
      'azure.scheduledevent.started',
      'azure.scheduledevent.completed',
    ]);
    for (const e of inFile) expect(e).toMatchObject({ drill: true, subject: report.drill.eventId });
    await waitFor(() => s.peer.requests.length === 4, 'the webhook deliveries');
    for (const q of s.peer.requests) expect(q.headers['ce-drill']).toBe('true');
  });
});
