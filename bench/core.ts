/**
 * Core figures of the daemon as a real process against the IMDS simulator on loopback:
 * - change-to-stdout latency: the simulator changes the document at random moments, the
 *   time until `se-bridge run` prints the CloudEvent on stdout (stdout sink, json format);
 * - start-up time: process spawn to the first Scheduled Events request at the simulator;
 * - resident memory when idle.
 * Prints a table and writes bench/results.json. `--quick` runs fewer samples.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ImdsSimulator } from '../src/imds/simulator/server.ts';

const ROOT = join(fileURLToPath(import.meta.url), '..', '..');
const quick = process.argv.includes('--quick');
const CHANGES = quick ? 20 : 60;
const IDLE_S = quick ? 10 : 30;

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}
function rssKiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

async function startBridge(sim: ImdsSimulator, dir: string, pollIntervalMs: number): Promise<{ child: ChildProcess; lines: (cb: (id: string) => void) => void; spawnedAt: number }> {
  const cfg = join(dir, `bridge-${pollIntervalMs}.yaml`);
  writeFileSync(
    cfg,
    `imds: { endpoint: ${sim.url}, pollIntervalMs: ${pollIntervalMs} }\nstate: { path: ${JSON.stringify(join(dir, `state-${pollIntervalMs}.db`))} }\nsinks: [{ name: console, type: stdout, format: json }]\nlog: { level: warn }\n`,
  );
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [join(ROOT, 'src', 'cli.ts'), 'run', '--config', cfg], { stdio: ['ignore', 'pipe', 'inherit'] });
  const listeners: ((subject: string) => void)[] = [];
  let buf = '';
  child.stdout!.on('data', (c: Buffer) => {
    buf += c.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      const subject = (JSON.parse(line) as { subject: string }).subject;
      for (const l of listeners) l(subject);
    }
  });
  return { child, lines: (cb) => listeners.push(cb), spawnedAt };
}

async function latency(sim: ImdsSimulator, dir: string, pollIntervalMs: number): Promise<number[]> {
  const { child, lines } = await startBridge(sim, dir, pollIntervalMs);
  const pending = new Map<string, number>();
  const samples: number[] = [];
  lines((subject) => {
    const t = pending.get(subject);
    if (t !== undefined) {
      samples.push(performance.now() - t);
      pending.delete(subject);
    }
  });
  await new Promise((r) => setTimeout(r, 1500));
  for (let i = 0; i < CHANGES; i++) {
    await new Promise((r) => setTimeout(r, 50 + Math.random() * pollIntervalMs * 1.5));
    const e = sim.addEvent({ noticeMs: 3_600_000 });
    pending.set(e.eventId, performance.now());
    for (let k = 0; k < 100 && pending.size > 0; k++) await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  sim.reset();
  return samples.sort((a, b) => a - b);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'se-bridge-bench-'));
  const sim = new ImdsSimulator({ vmName: 'bench-vm', tickMs: 20 });
  await sim.listen(0);
  const results: Record<string, unknown> = {
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version },
    at: new Date().toISOString(),
  };
  try {
    const lat: Record<string, unknown> = {};
    for (const interval of [1000, 200]) {
      const s = await latency(sim, dir, interval);
      lat[`poll${interval}ms`] = {
        samples: s.length,
        p50: Math.round(quantile(s, 0.5)),
        p90: Math.round(quantile(s, 0.9)),
        max: Math.round(s.at(-1)!),
      };
    }
    results.changeToStdoutMs = lat;

    const startups: number[] = [];
    let rss = NaN;
    for (let i = 0; i < (quick ? 3 : 5); i++) {
      const mark = sim.requests.length;
      const { child, spawnedAt } = await startBridge(sim, dir, 1000);
      for (let k = 0; k < 400 && !sim.requests.slice(mark).some((r) => r.path === '/metadata/scheduledevents'); k++) {
        await new Promise((r) => setTimeout(r, 5));
      }
      startups.push(performance.now() - spawnedAt);
      if (i === 0) {
        await new Promise((r) => setTimeout(r, IDLE_S * 1000));
        rss = rssKiB(child.pid!);
      }
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    startups.sort((a, b) => a - b);
    results.startupToFirstPollMs = { runs: startups.length, median: Math.round(quantile(startups, 0.5)), min: Math.round(startups[0]!), max: Math.round(startups.at(-1)!) };
    results.idleRssMiB = { afterSeconds: IDLE_S, value: Math.round((rss / 1024) * 10) / 10 };
  } finally {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
  writeFileSync(join(ROOT, 'bench', 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  const lat = results.changeToStdoutMs as Record<string, { samples: number; p50: number; p90: number; max: number }>;
  const st = results.startupToFirstPollMs as { median: number; min: number; max: number };
  process.stdout.write(
    `\n| measurement | figure |\n|---|---|\n` +
      Object.entries(lat)
        .map(([k, v]) => `| change to stdout line, ${k.replace('poll', 'poll every ')} (${v.samples} changes) | p50 ${v.p50} ms, p90 ${v.p90} ms, max ${v.max} ms |`)
        .join('\n') +
      `\n| start-up to first IMDS poll | median ${st.median} ms (min ${st.min}, max ${st.max}) |\n` +
      `| resident memory, idle ${IDLE_S} s | ${(results.idleRssMiB as { value: number }).value} MiB |\n` +
      `\nmachine: ${JSON.stringify(results.machine)}\nwritten to bench/results.json\n`,
  );
}

await main();
