/**
 * Crash safety of the daemon as a real process: `se-bridge run` is killed with SIGKILL at
 * varying moments (before, during and after a commit or a delivery) while the simulator's
 * document changes, then restarted. Every transition reaches the file sink at least once,
 * nothing is invented, and duplicates carry identical CloudEvents.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { freePort, laterReads, readJsonLines, tempDir, waitFor } from '../helpers.ts';
import { start } from './process.ts';

let dir: ReturnType<typeof tempDir>;
let sim: ImdsSimulator;
beforeAll(async () => {
  dir = tempDir();
  sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
  await sim.listen(0);
});
afterAll(async () => {
  await sim.close();
  dir.cleanup();
});

interface Line {
  id: string;
  type: string;
  subject: string;
  data: unknown;
}
const file = () => join(dir.path, 'events.jsonl');
const lines = (): Line[] => readJsonLines<Line>(file());
const has = (kind: string, subject: string) => lines().some((l) => l.type === `azure.scheduledevent.${kind}` && l.subject === subject);

describe('SIGKILL and restart', () => {
  it(`loses no transition and invents none across ${process.env.SE_BRIDGE_CRASH_ROUNDS ?? 8} kills`, async () => {
    const cfg = join(dir.path, 'bridge.yaml');
    writeFileSync(
      cfg,
      `imds: { endpoint: ${sim.url}, pollIntervalMs: 200 }\nstate: { path: ${JSON.stringify(join(dir.path, 'state.db'))} }\nsinks: [{ name: audit, type: file, path: ${JSON.stringify(file())} }]\nlog: { level: warn }\n`,
    );
    const expected: [string, string][] = [];
    const live: string[] = [];
    // 8 in the regular suite; the reliability suite (npm run test:reliability) runs 50
    const rounds = Number(process.env.SE_BRIDGE_CRASH_ROUNDS ?? 8);
    let child = start(['run', '--config', cfg]);
    for (let round = 0; round < rounds; round++) {
      // one change of the document per round: add, start, or remove an event
      let change: [string, string];
      if (live.length === 0 || round % 3 === 0) {
        const e = sim.addEvent({ EventId: `EV-${round}`, noticeMs: 600_000, startedMs: 600_000 });
        live.push(e.eventId);
        change = ['scheduled', e.eventId];
      } else if (round % 3 === 1) {
        const id = live[0]!;
        const ev = sim.events.find((x) => x.eventId === id)!;
        if (ev.status === 'Scheduled') {
          sim.startEvent(id);
          change = ['started', id];
        } else {
          sim.removeEvent(id);
          live.shift();
          change = ['completed', id];
        }
      } else {
        const id = live.pop()!;
        const ev = sim.events.find((x) => x.eventId === id)!;
        sim.removeEvent(id);
        change = [ev.status === 'Started' ? 'completed' : 'canceled', id];
      }
      expected.push(change);
      // kill at a different moment each round, 0 to ~700 ms after the change: before, during
      // and after the commit and the delivery
      await new Promise((r) => setTimeout(r, (round * 97) % 700));
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      child = start(['run', '--config', cfg]);
      await waitFor(() => has(change[0], change[1]), `${change[0]} of ${change[1]} after restart ${round}`, 20_000);
    }
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));

    const seen = lines();
    const distinct = new Set(seen.map((l) => `${l.type.replace('azure.scheduledevent.', '')}:${l.subject}`));
    expect([...distinct].sort()).toEqual(expected.map(([k, s]) => `${k}:${s}`).sort());
    // duplicates (at-least-once) are the same CloudEvent: same id, same content but the observation
    const byId = new Map<string, Line>();
    for (const l of seen) {
      const first = byId.get(l.id);
      if (first === undefined) byId.set(l.id, l);
      else expect({ ...l, time: undefined }).toEqual({ ...first, time: undefined });
    }
    expect(byId.size).toBe(expected.length);
  });

  it('a probe out of service stays out of service across a SIGKILL until IMDS shows the event completed', async () => {
    // nothing pending for this VM from the test before: the probe starts in service
    sim.reset();
    const port = await freePort();
    const probe = `http://127.0.0.1:${port}/probe`;
    const cfg = join(dir.path, 'probe.yaml');
    writeFileSync(
      cfg,
      `imds: { endpoint: ${sim.url}, pollIntervalMs: 200 }\nstate: { path: ${JSON.stringify(join(dir.path, 'probe-state.db'))} }\n` +
        `sinks: [{ name: lb, type: probe, listen: "127.0.0.1:${port}", drainSeconds: 0 }]\nlog: { level: warn }\n`,
    );
    const status = async () => {
      try {
        const r = await fetch(probe);
        return { status: r.status, body: (await r.json()) as Record<string, unknown> };
      } catch {
        return { status: 0, body: {} };
      }
    };
    let child = start(['run', '--config', cfg]);
    await waitFor(async () => (await status()).status === 200, 'the probe in service', 20_000);
    const e = sim.addEvent({ EventId: 'PROBE-1', noticeMs: 600_000, startedMs: 600_000 });
    await waitFor(async () => (await status()).status === 503, 'the probe out of service');
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    // IMDS fails while the bridge comes back: the hold it answers with comes from the store
    sim.injectFault({ kind: 'status', status: 500, count: 1_000_000 });
    child = start(['run', '--config', cfg]);
    const first = await waitFor(
      async () => {
        const s = await status();
        return s.status === 0 ? null : s;
      },
      'the probe to answer after the restart',
      20_000,
    );
    expect(first).toEqual({
      status: 503,
      body: { status: 'out-of-service', eventId: e.eventId, eventType: 'Reboot', notBefore: expect.any(String) },
    });
    sim.clearFaults();
    sim.startEvent(e.eventId);
    // read twice since: the daemon has seen the event Started, and holds on
    await laterReads(sim);
    expect((await status()).status).toBe(503);
    sim.removeEvent(e.eventId);
    await waitFor(async () => (await status()).status === 200, 'the probe back in service after completion', 20_000);
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  });
});
