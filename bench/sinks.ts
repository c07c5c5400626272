/**
 * Per-sink figures:
 * - start-up to the first IMDS poll and resident memory of `se-bridge run`, with webhook +
 *   file sinks, and with the Azure sinks (Event Hubs, Service Bus) added against the local
 *   AMQP peer;
 * - time from an IMDS change to its arrival at each sink on loopback (poll every 200 ms).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { validateConfig } from '../src/config/load.ts';
import { Bridge } from '../src/core/bridge.ts';
import { ImdsSimulator } from '../src/imds/simulator/server.ts';
import { AmqpPeer } from '../test/peers/amqp-peer.ts';
import { HttpPeer } from '../test/peers/http-peer.ts';

const ROOT = join(fileURLToPath(import.meta.url), '..', '..');
const quick = process.argv.includes('--quick');
const q = (s: number[], p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

const dir = mkdtempSync(join(tmpdir(), 'se-bridge-bench-'));
const sim = new ImdsSimulator({ tickMs: 20 });
await sim.listen(0);
const hook = new HttpPeer();
await hook.listen();
const amqp = new AmqpPeer();
await amqp.listen();

const basic = [
  { name: 'ops', type: 'webhook', url: `${hook.url}/hook` },
  { name: 'audit', type: 'file', path: join(dir, 'events.jsonl') },
];
const azure = [
  ...basic,
  { name: 'hub', type: 'eventhubs', connectionString: amqp.connectionString('maintenance') },
  { name: 'queue', type: 'servicebus', connectionString: amqp.connectionString(), entity: 'maintenance-queue' },
];

async function footprint(label: string, sinks: unknown[], runs: number, idleS: number) {
  const startups: number[] = [];
  let rss = NaN;
  for (let i = 0; i < runs; i++) {
    const cfg = join(dir, `${label}-${i}.yaml`);
    writeFileSync(cfg, JSON.stringify({ imds: { endpoint: sim.url, pollIntervalMs: 1000 }, state: { path: join(dir, `${label}-${i}.db`) }, sinks, log: { level: 'warn' } }));
    const mark = sim.requests.length;
    const t0 = performance.now();
    const child = spawn(process.execPath, [join(ROOT, 'src', 'cli.ts'), 'run', '--config', cfg], { stdio: 'ignore' });
    for (let k = 0; k < 600 && !sim.requests.slice(mark).some((r) => r.path === '/metadata/scheduledevents'); k++) await new Promise((r) => setTimeout(r, 5));
    startups.push(performance.now() - t0);
    if (i === 0) {
      // one event through every sink, so the clients are connected, then idle
      sim.addEvent({ noticeMs: 3_600_000 });
      await new Promise((r) => setTimeout(r, idleS * 1000));
      rss = rssMiB(child.pid!);
      sim.reset();
    }
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
  startups.sort((a, b) => a - b);
  return { startupMedianMs: Math.round(q(startups, 0.5)), rssMiB: Math.round(rss * 10) / 10 };
}

async function perSink(changes: number) {
  const config = validateConfig({ imds: { endpoint: sim.url, pollIntervalMs: 200 }, state: { path: join(dir, 'persink.db') }, sinks: azure }, 'bench', {});
  const bridge = await Bridge.create({ config, logger: pino({ level: 'silent' }) });
  await bridge.start();
  const lat: Record<string, number[]> = { webhook: [], file: [], eventhubs: [], servicebus: [] };
  const file = join(dir, 'events.jsonl');
  for (let i = 0; i < changes; i++) {
    await new Promise((r) => setTimeout(r, 20 + Math.random() * 300));
    const t = Date.now();
    const e = sim.addEvent({ noticeMs: 3_600_000 });
    const arrived: Record<string, number> = {};
    for (let k = 0; k < 1000 && Object.keys(arrived).length < 4; k++) {
      if (!arrived.webhook && hook.requests.some((r) => r.headers['ce-subject'] === e.eventId)) arrived.webhook = Date.now();
      if (!arrived.eventhubs && amqp.messages.some((m) => m.address === 'maintenance' && m.message.application_properties?.cloudEvents_subject === e.eventId)) arrived.eventhubs = Date.now();
      if (!arrived.servicebus && amqp.messages.some((m) => m.address === 'maintenance-queue' && m.message.application_properties?.cloudEvents_subject === e.eventId)) arrived.servicebus = Date.now();
      if (!arrived.file && existsSync(file) && readFileSync(file, 'utf8').includes(e.eventId)) arrived.file = Date.now();
      await new Promise((r) => setTimeout(r, 1));
    }
    for (const [k, v] of Object.entries(arrived)) lat[k]!.push(v - t);
  }
  await bridge.stop(1000);
  return Object.fromEntries(Object.entries(lat).map(([k, s]) => [k, s.sort((a, b) => a - b)]));
}

try {
  const idle = quick ? 5 : 20;
  const a = await footprint('basic', basic, quick ? 2 : 5, idle);
  const b = await footprint('azure', azure, quick ? 2 : 5, idle);
  const lat = await perSink(quick ? 20 : 60);
  process.stdout.write(
    `\n| measurement | webhook + file | + Event Hubs + Service Bus |\n|---|---|---|\n` +
      `| start-up to first IMDS poll (median) | ${a.startupMedianMs} ms | ${b.startupMedianMs} ms |\n` +
      `| resident memory after one event and ${idle} s idle | ${a.rssMiB} MiB | ${b.rssMiB} MiB |\n\n` +
      `| IMDS change to arrival, poll every 200 ms | p50 | p90 | max |\n|---|---|---|---|\n` +
      Object.entries(lat)
        .map(([k, s]) => `| ${k} (${s.length}) | ${q(s, 0.5)} ms | ${q(s, 0.9)} ms | ${s.at(-1)} ms |`)
        .join('\n') +
      '\n',
  );
} finally {
  await Promise.all([hook.close(), amqp.close(), sim.close()]);
  rmSync(dir, { recursive: true, force: true });
}
