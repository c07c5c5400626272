/**
 * One template never stops the daemon. The daemon runs as a real process against the IMDS
 * simulator, with four webhook sinks whose templates each run away in their own way (a regular
 * expression that backtracks for ever over a 140-character Description, another one, $pad to 200
 * million characters, $string of a ten-million item range) and a file sink. While they render,
 * IMDS keeps being read, /livez answers every time, the file sink delivers, and each templated
 * event is dead-lettered with the limit it ran into; SIGTERM then stops the daemon as usual.
 *
 * And a row whose delivery kills the process (a module sink that SIGKILLs its own process) is
 * counted as an attempt from its start: after maxAttempts runs that died, the next run
 * dead-letters it with the reason and goes on.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { Store } from '../../src/store/store.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { freePort, tempDir, waitFor } from '../helpers.ts';
import { finished, start } from './process.ts';

const RUNAWAY = {
  backtrack: '$match(data.description, /^(\\w+\\s?)*$/)',
  nested: '$match("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", /^(a+)+$/)',
  pad: '$pad("", 200000000)',
  range: '$string([1..10000000])',
} as const;

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
  await sim.close();
  await peer.close();
  dir.cleanup();
});

const lines = (file: string): { type: string; subject: string }[] => {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { type: string; subject: string });
  } catch {
    return [];
  }
};

describe('a runaway template', () => {
  it('stops at its deadline, in a worker: polls, /livez, other sinks and SIGTERM go on as usual', async () => {
    const port = await freePort();
    const file = join(dir.path, 'events.jsonl');
    const cfg = join(dir.path, 'stall.yaml');
    const sinks = Object.entries(RUNAWAY).map(
      ([name, template]) =>
        `  - { name: ${name}, type: webhook, url: "${peer.url}/${name}", template: ${JSON.stringify(template)}, delivery: { maxAttempts: 3 } }`,
    );
    writeFileSync(
      cfg,
      [
        `imds: { endpoint: ${sim.url}, pollIntervalMs: 200 }`,
        `state: { path: ${JSON.stringify(join(dir.path, 'stall.db'))} }`,
        `observability: { listen: "127.0.0.1:${port}" }`,
        'log: { level: warn }',
        'sinks:',
        `  - { name: audit, type: file, path: ${JSON.stringify(file)} }`,
        ...sinks,
      ].join('\n'),
    );
    const child = start(['run', '--config', cfg]);
    const livez = async () => {
      const r = await request(`http://127.0.0.1:${port}/livez`, { headersTimeout: 1000, bodyTimeout: 1000 });
      await r.body.dump();
      return r.statusCode;
    };
    await waitFor(() => livez().catch(() => child.exitCode !== null), 'the daemon to start', 20_000, 100);
    expect(child.exitCode).toBeNull();
    const added = Date.now();
    const ev = sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, Description: `${'word '.repeat(27)}words!` });
    expect(ev.description).toHaveLength(141);

    // while the four templates render, /livez answers every time within a second
    const answers: number[] = [];
    const dbPath = join(dir.path, 'stall.db');
    const deadLettered = () => {
      const store = Store.open(dbPath);
      try {
        return store.outbox.deadLetters();
      } finally {
        store.close();
      }
    };
    await waitFor(
      async () => {
        answers.push(await livez());
        return deadLettered().length === 4;
      },
      'every runaway template dead-lettered',
      30_000,
      100,
    );
    expect(answers.length).toBeGreaterThan(0);
    expect(answers.every((s) => s === 200)).toBe(true);
    const dead = deadLettered();
    const reasons = Object.fromEntries(dead.map((d) => [d.sink, d.lastError]));
    expect(reasons.backtrack).toMatch(
      /^rejected: TEMPLATE_FAILED: template: the template ran for more than 100 ms of CPU time and was stopped$/,
    );
    expect(reasons.nested).toMatch(/ran for more than 100 ms of CPU time and was stopped$/);
    expect(reasons.pad).toMatch(/the template \$pad would make more than 1048576 characters$/);
    expect(reasons.range).toMatch(
      /the template (\$string would make more than 1048576 characters|ran for more than 100 ms of CPU time and was stopped)$/,
    );
    expect(dead.every((d) => d.attempts === 1)).toBe(true);
    // the other sink delivered, IMDS kept being read, and nothing reached the peer
    expect(lines(file).map((l) => `${l.type}:${l.subject}`)).toContain(`azure.scheduledevent.scheduled:${ev.eventId}`);
    // IMDS was read while the templates rendered: between the change and the last dead letter
    const lastDead = Math.max(...dead.map((d) => d.deadAt));
    const reads = sim.requests.filter((r) => r.path.includes('scheduledevents') && r.at > added && r.at < lastDead);
    expect(reads.length).toBeGreaterThan(0);
    expect(peer.requests).toHaveLength(0);

    child.kill('SIGTERM');
    const run = await finished(child, 20_000);
    expect(run.code).toBe(0);
    sim.removeEvent(ev.eventId);
  });

  it('a row whose delivery kills the process is dead-lettered after maxAttempts runs that died, with the reason', async () => {
    const sinkFile = join(dir.path, 'killer-sink.js');
    writeFileSync(
      sinkFile,
      'const configSchema = { "~standard": { version: 1, vendor: "test", validate: (value) => ({ value }) } };\n' +
        'export default { name: "killer", configSchema, create: () => ({ send: async () => { process.kill(process.pid, "SIGKILL"); return new Promise(() => {}); }, close: async () => {} }) };\n',
    );
    const file = join(dir.path, 'killer.jsonl');
    const cfg = join(dir.path, 'killer.yaml');
    const dbPath = join(dir.path, 'killer.db');
    writeFileSync(
      cfg,
      [
        `imds: { endpoint: ${sim.url}, pollIntervalMs: 200 }`,
        `state: { path: ${JSON.stringify(dbPath)} }`,
        'observability: { listen: "off" }',
        'log: { level: warn }',
        'sinks:',
        `  - { name: audit, type: file, path: ${JSON.stringify(file)} }`,
        `  - { name: killer, type: module, module: ${JSON.stringify(sinkFile)}, filter: { types: [scheduled] }, delivery: { maxAttempts: 2 } }`,
      ].join('\n'),
    );
    const ev = sim.addEvent({ EventType: 'Redeploy', noticeMs: 600_000 });
    // two runs die in the attempt
    for (let run = 1; run <= 2; run++) {
      const r = await finished(start(['run', '--config', cfg]), 30_000);
      expect(r.signal).toBe('SIGKILL');
    }
    // the third sends nothing: it dead-letters the row and keeps running
    const child = start(['run', '--config', cfg]);
    await waitFor(() => child.out.stdout.includes('ATTEMPT_INTERRUPTED') || child.exitCode !== null, 'the row dead-lettered', 20_000);
    expect(child.exitCode).toBeNull();
    child.kill('SIGTERM');
    const third = await finished(child, 20_000);
    expect(third.code, third.stdout).toBe(0);
    const store = Store.open(dbPath);
    try {
      const [dead, ...more] = store.outbox.deadLetters();
      expect(more).toEqual([]);
      expect(dead).toMatchObject({ sink: 'killer', eventId: ev.eventId, attempts: 2 });
      expect(dead!.lastError).toBe(
        'gave up after 2 attempts: ATTEMPT_INTERRUPTED: the process stopped during attempt 2 (a crash, a kill or a power cut)',
      );
      expect(store.outbox.depth().get('killer') ?? 0).toBe(0);
    } finally {
      store.close();
    }
    expect(lines(file).some((l) => l.subject === ev.eventId)).toBe(true);
    sim.removeEvent(ev.eventId);
  });
});
