/** Benchmark phases A and B: real daemons as child processes, side by side with the reference poller. */
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { ImdsSimulator } from '../src/simulator/server.ts';
import { AmqpPeer } from '../src/simulator/servicebus/amqp-peer.ts';
import { HttpPeer } from '../testkit/http-peer.ts';
import { recipeSink } from './templates.ts';
import {
  bridgeConfig,
  CLI,
  cpuSeconds,
  daemon,
  dir,
  dist,
  PACKAGE_V8_FLAGS,
  quick,
  ROOT,
  rssMiB,
  sleep,
  spawnProcess,
  stop,
} from './common.ts';

// ----- A. change-to-delivery latency ----------------------------------------------------------

interface Lane {
  name: string;
  sim: ImdsSimulator;
  hook: HttpPeer;
  child: ChildProcess;
  changedAt: Map<string, number>;
  latency: number[];
}

async function lane(name: string, pollIntervalMs: number | 'reference'): Promise<Lane> {
  const sim = new ImdsSimulator({ vmName: 'bench-vm', tickMs: 20 });
  await sim.listen(0);
  const hook = new HttpPeer();
  await hook.listen();
  const l: Lane = { name, sim, hook, child: null as unknown as ChildProcess, changedAt: new Map(), latency: [] };
  hook.answer = (r) => {
    const id = String(r.headers['ce-subject'] ?? (JSON.parse(r.body) as { EventId?: string }).EventId ?? '');
    const t = l.changedAt.get(id);
    if (t !== undefined) {
      l.latency.push(performance.now() - t);
      l.changedAt.delete(id);
    }
    return { status: 204 };
  };
  l.child =
    pollIntervalMs === 'reference'
      ? daemon([join(ROOT, 'bench', 'reference-poller.ts'), sim.url, hook.url])
      : spawnProcess([
          PACKAGE_BIN,
          'run',
          '--config',
          bridgeConfig(name, { imds: { endpoint: sim.url, pollIntervalMs }, sinks: [{ name: 'hook', type: 'webhook', url: hook.url }] }),
        ]);
  return l;
}

export async function phaseLatency() {
  const seconds = quick ? 25 : 75;
  const lanes = await Promise.all([
    lane('poll-1000ms', 1000),
    lane('poll-500ms', 500),
    lane('poll-200ms', 200),
    lane('reference', 'reference'),
  ]);
  await sleep(2000);
  const end = performance.now() + seconds * 1000;
  // each lane gets changes at random moments (exponential gaps, mean 330 ms)
  await Promise.all(
    lanes.map(async (l) => {
      while (performance.now() < end) {
        await sleep(Math.min(2000, -Math.log(1 - Math.random()) * 330));
        const e = l.sim.addEvent({ noticeMs: 3_600_000 });
        l.changedAt.set(e.eventId, performance.now());
      }
    }),
  );
  await sleep(2500);
  await Promise.all(lanes.map((l) => stop(l.child)));
  await Promise.all(lanes.flatMap((l) => [l.sim.close(), l.hook.close()]));
  return Object.fromEntries(lanes.map((l) => [l.name, dist(l.latency)]));
}

// ----- B. footprint ----------------------------------------------------------------------------

/** The shipped forms of se-bridge, and the anchors they are measured beside. */
export const PACKAGE_BIN = join(ROOT, 'bin', 'se-bridge.js');
const BINARY = join(ROOT, 'build', 'se-bridge-linux-x64');
const NODE = process.execPath;

interface Footprinted {
  name: string;
  /** The command; a bridge gets `run --config FILE` appended, a poller the IMDS and webhook URLs. */
  cmd: string[];
  sinks?: 'webhook+file' | 'webhook+file+probe' | 'template webhook+file' | 'stdout+file' | 'every sink type';
  poller?: true;
}

const COMPILED = join(ROOT, 'dist', 'src', 'commands', 'cli.js');
/**
 * The package, the executable, the steps from the sources to the package (each step adds one
 * setting to the one before; the package's `#!` line has the last, and adds V8's compile cache),
 * and the anchors.
 */
export const FOOTPRINTED: Footprinted[] = [
  { name: 'package, webhook+file', cmd: [PACKAGE_BIN], sinks: 'webhook+file' },
  { name: 'package, webhook+file+probe', cmd: [PACKAGE_BIN], sinks: 'webhook+file+probe' },
  { name: 'package, webhook with a template (PagerDuty recipe)+file', cmd: [PACKAGE_BIN], sinks: 'template webhook+file' },
  { name: 'package, stdout+file', cmd: [PACKAGE_BIN], sinks: 'stdout+file' },
  { name: 'package, every sink type', cmd: [PACKAGE_BIN], sinks: 'every sink type' },
  { name: 'single executable, webhook+file', cmd: [BINARY], sinks: 'webhook+file' },
  { name: 'step: sources (type stripping), webhook+file', cmd: [NODE, CLI], sinks: 'webhook+file' },
  { name: 'step: compiled, webhook+file', cmd: [NODE, COMPILED], sinks: 'webhook+file' },
  { name: 'step: + semi-space 1 MiB, webhook+file', cmd: [NODE, '--max-semi-space-size=1', COMPILED], sinks: 'webhook+file' },
  {
    name: 'step: + no optimizing compilers, webhook+file',
    cmd: [NODE, '--max-semi-space-size=1', '--no-opt', '--no-maglev', COMPILED],
    sinks: 'webhook+file',
  },
  {
    name: 'step: + no baseline compiler, webhook+file',
    cmd: [NODE, '--max-semi-space-size=1', '--no-opt', '--no-maglev', '--no-sparkplug', COMPILED],
    sinks: 'webhook+file',
  },
  {
    name: "step: + heap sized for memory (the package's V8 settings, as ES modules), webhook+file",
    cmd: [NODE, '--max-semi-space-size=1', '--no-opt', '--no-maglev', '--no-sparkplug', '--optimize-for-size', COMPILED],
    sinks: 'webhook+file',
  },
  { name: 'anchor: bare node', cmd: [NODE, '-e', 'setInterval(() => {}, 1000)'] },
  {
    // the floor of this stack: Node with the package's flags and the four libraries every configuration loads, doing nothing
    name: 'anchor: node + zod, yaml, pino, node:sqlite (idle)',
    cmd: [
      NODE,
      ...PACKAGE_V8_FLAGS,
      '--input-type=module',
      '-e',
      "for (const m of ['zod', 'yaml', 'pino', 'node:sqlite']) await import(m); setInterval(() => {}, 1000);",
    ],
  },
  { name: 'anchor: Python sample (requests, 1 poll/s)', cmd: ['python3', join(ROOT, 'bench', 'reference-poller.py')], poller: true },
  { name: 'anchor: reference poller (node)', cmd: [NODE, join(ROOT, 'bench', 'reference-poller.ts')], poller: true },
];

export async function phaseFootprint() {
  const seconds = quick ? 15 : 60;
  const hook = new HttpPeer();
  await hook.listen();
  const amqp = new AmqpPeer();
  await amqp.listen();
  const slack = new HttpPeer();
  await slack.listen();
  slack.answer = () => ({ status: 200, body: 'ok' });
  const sinksOf = (kind: NonNullable<Footprinted['sinks']>, i: number) => {
    const file = { name: 'audit', type: 'file', path: join(dir, `fp-${i}.jsonl`) };
    if (kind === 'stdout+file') return [{ name: 'out', type: 'stdout', format: 'json' }, file];
    const basic = [{ name: 'hook', type: 'webhook', url: hook.url }, file];
    if (kind === 'webhook+file') return basic;
    if (kind === 'webhook+file+probe')
      return [...basic, { name: 'lb', type: 'probe', listen: '127.0.0.1:0', drainSeconds: 30, prepare: true }];
    if (kind === 'template webhook+file') return [recipeSink(`${hook.url}/v2/enqueue`), file];
    return [
      ...basic,
      { name: 'hub', type: 'eventhubs', connectionString: amqp.connectionString('maintenance') },
      { name: 'queue', type: 'servicebus', connectionString: amqp.connectionString(), entity: 'q' },
      { name: 'slack', type: 'slack', webhookUrl: `${slack.url}/services/x` },
      { name: 'teams', type: 'teams', webhookUrl: `${slack.url}/teams` },
      { name: 'exec', type: 'exec', command: ['/bin/true'] },
      { name: 'out', type: 'stdout', format: 'json' },
    ];
  };
  const started = await Promise.all(
    FOOTPRINTED.map(async (f, i) => {
      const sim = new ImdsSimulator({ vmName: 'bench-vm', tickMs: 50 });
      await sim.listen(0);
      const args =
        f.sinks !== undefined
          ? [...f.cmd, 'run', '--config', bridgeConfig(`fp-${i}`, { imds: { endpoint: sim.url }, sinks: sinksOf(f.sinks, i) })]
          : f.poller
            ? [...f.cmd, sim.url, hook.url]
            : f.cmd;
      return { ...f, sim, args, t0: 0, firstPollMs: NaN, child: null as unknown as ChildProcess };
    }),
  );
  for (const s of started) {
    s.t0 = performance.now();
    s.child = spawnProcess(s.args);
  }
  const polls = (s: (typeof started)[number]) => s.sim.requests.some((r) => r.path === '/metadata/scheduledevents');
  for (let k = 0; k < 1000 && started.some((s) => (s.sinks !== undefined || s.poller) && Number.isNaN(s.firstPollMs)); k++) {
    for (const s of started) if (Number.isNaN(s.firstPollMs) && polls(s)) s.firstPollMs = performance.now() - s.t0;
    await sleep(5);
  }
  // one event through every sink so each client is connected, then measure
  for (const s of started) s.sim.addEvent({ noticeMs: 3_600_000 });
  await sleep(3000);
  const before = started.map((s) => ({ cpu: cpuSeconds(s.child.pid!), at: performance.now(), requests: s.sim.requests.length }));
  await sleep(seconds * 1000);
  const out = started.map((s, i) => {
    const elapsed = (performance.now() - before[i]!.at) / 1000;
    const reqs = s.sim.requests.slice(before[i]!.requests).map((r) => r.at);
    let maxPerSecond = 0;
    for (let a = 0, b = 0; b < reqs.length; b++) {
      while (reqs[b]! - reqs[a]! >= 1000) a++;
      maxPerSecond = Math.max(maxPerSecond, b - a + 1);
    }
    return {
      name: s.name,
      startupToFirstPollMs: Number.isNaN(s.firstPollMs) ? null : Math.round(s.firstPollMs),
      rssMiB: Math.round(rssMiB(s.child.pid!) * 10) / 10,
      cpuPercent: Math.round(((cpuSeconds(s.child.pid!) - before[i]!.cpu) / elapsed) * 1000) / 10,
      imdsRequestsPerSecond: Math.round((reqs.length / elapsed) * 100) / 100,
      imdsMaxInAnySecond: maxPerSecond,
    };
  });
  await Promise.all(started.map((s) => stop(s.child)));
  await Promise.all([hook.close(), amqp.close(), slack.close(), ...started.map((s) => s.sim.close())]);
  return out;
}

// ----- B2. start-up, one process at a time -------------------------------------------------------

/**
 * phaseStartup starts each form alone on a quiet machine, `rounds` times, and takes the time
 * from spawn to its first Scheduled Events request (the footprint phase starts every process
 * at once, which measures the machine's contention more than the start-up).
 */
export async function phaseStartup(rounds: number) {
  const hook = new HttpPeer();
  await hook.listen();
  const forms = FOOTPRINTED.filter((f) => (f.name.includes('webhook+file') && !f.name.startsWith('not adopted')) || f.poller);
  const out: { name: string; startupToFirstPollMs: number }[] = [];
  for (const f of forms) {
    const samples: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const sim = new ImdsSimulator({ vmName: 'bench-vm', tickMs: 50 });
      await sim.listen(0);
      const args =
        f.sinks !== undefined
          ? [
              ...f.cmd,
              'run',
              '--config',
              bridgeConfig(`su-${out.length}-${r}`, {
                imds: { endpoint: sim.url },
                sinks: [
                  { name: 'hook', type: 'webhook', url: hook.url },
                  { name: 'audit', type: 'file', path: join(dir, `su-${r}.jsonl`) },
                ],
              }),
            ]
          : [...f.cmd, sim.url, hook.url];
      const t0 = performance.now();
      const child = spawnProcess(args);
      for (let k = 0; k < 2000 && !sim.requests.some((q) => q.path === '/metadata/scheduledevents'); k++) await sleep(2);
      samples.push(performance.now() - t0);
      await stop(child);
      await sim.close();
    }
    out.push({ name: f.name, startupToFirstPollMs: Math.round(dist(samples).p50) });
  }
  await hook.close();
  return out;
}
