/**
 * Soak: the package's `se-bridge run` (bin/se-bridge.js over dist/, with its V8 flags) for N
 * minutes (default 30) at 5 polls per second, with a change of the IMDS document every 10 s,
 * delivering to a local webhook and a file. Reports resident memory and open handles (file
 * descriptors) over time. A benchmark figure, not a test. Builds dist/ first.
 *   node bench/soak.ts [--minutes 30]
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ImdsSimulator } from '../src/simulator/server.ts';
import { HttpPeer } from '../testkit/http-peer.ts';

const ROOT = join(fileURLToPath(import.meta.url), '..', '..');
const i = process.argv.indexOf('--minutes');
const minutes = i > 0 ? Number(process.argv[i + 1]) : 30;
const dir = mkdtempSync(join(tmpdir(), 'se-bridge-soak-'));
const sim = new ImdsSimulator({ vmName: 'soak-vm', tickMs: 50 });
await sim.listen(0);
const hook = new HttpPeer();
await hook.listen();
let delivered = 0;
hook.answer = () => {
  delivered++;
  return { status: 204 };
};
const cfg = join(dir, 'bridge.json');
writeFileSync(
  cfg,
  JSON.stringify({
    imds: { endpoint: sim.url, pollIntervalMs: 200 },
    state: { path: join(dir, 'state.db') },
    sinks: [
      { name: 'hook', type: 'webhook', url: hook.url },
      { name: 'file', type: 'file', path: join(dir, 'events.jsonl') },
    ],
    log: { level: 'warn' },
    observability: { listen: 'off' },
  }),
);
execFileSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
// through the bin's #! line, as an installed se-bridge runs, with the pinned Node first on PATH
const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` };
const child = spawn(join(ROOT, 'bin', 'se-bridge.js'), ['run', '--config', cfg], { stdio: ['ignore', 'ignore', 'inherit'], env });
const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024;
const fds = () => readdirSync(`/proc/${child.pid}/fd`).length;
const samples: { minute: number; rssMiB: number; fds: number }[] = [];
const t0 = Date.now();
const live: string[] = [];
const changer = setInterval(() => {
  // a change every 10 s: a new event, or the oldest one starting, or finishing
  if (live.length < 3) live.push(sim.addEvent({ noticeMs: 3_600_000, startedMs: 3_600_000 }).eventId);
  else {
    const id = live.shift()!;
    const e = sim.events.find((x) => x.eventId === id);
    if (e?.status === 'Scheduled') {
      sim.startEvent(id);
      live.push(id);
    } else sim.removeEvent(id);
  }
}, 10_000);
await new Promise((r) => setTimeout(r, 5000));
for (let m = 0; m <= minutes; m++) {
  samples.push({ minute: m, rssMiB: Math.round(rss() * 10) / 10, fds: fds() });
  process.stderr.write(`soak: ${JSON.stringify(samples.at(-1))}\n`);
  if (m < minutes) await new Promise((r) => setTimeout(r, 60_000));
}
clearInterval(changer);
const polls = sim.requests.filter((r) => r.path === '/metadata/scheduledevents').length;
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
await Promise.all([sim.close(), hook.close()]);
rmSync(dir, { recursive: true, force: true });
const first = samples[1] ?? samples[0]!;
const last = samples.at(-1)!;
const result = {
  minutes,
  polls,
  pollsPerSecond: Math.round((polls / ((Date.now() - t0) / 1000)) * 100) / 100,
  delivered,
  rssMiB: { afterOneMinute: first.rssMiB, end: last.rssMiB, max: Math.max(...samples.map((s) => s.rssMiB)) },
  fds: { afterOneMinute: first.fds, end: last.fds },
  samples,
};
writeFileSync(join(ROOT, 'bench', 'soak.json'), `${JSON.stringify(result, null, 2)}\n`);
process.stdout.write(`${JSON.stringify({ ...result, samples: undefined })}\n`);
