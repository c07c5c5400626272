/**
 * Every test stops what it starts. The run marks its environment (SE_BRIDGE_TEST_RUN), which
 * every process a test starts inherits; when the run ends, a process still alive with the mark
 * (a daemon, a relay, a browser) fails it, named, after being killed. Reads /proc: on a system
 * without it there is nothing to read and nothing is checked.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';

const MARK = 'SE_BRIDGE_TEST_RUN';

export function setup(): void {
  process.env[MARK] = randomUUID();
}

/** marked: the processes (pid and command line) whose environment carries this run's mark, the test runner's own left out. */
function marked(run: string): { pid: number; cmd: string }[] {
  if (!existsSync('/proc/self/environ')) return [];
  const out: { pid: number; cmd: string }[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (!readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`${MARK}=${run}`)) continue;
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
      // the runner's own workers, and processes that have already exited (zombies have no command line)
      if (cmd === '' || /[/\\]node_modules[/\\](vitest|tinypool|@vitest)[/\\]/.test(cmd)) continue;
      out.push({ pid, cmd });
    } catch {
      /* gone, or not ours to read */
    }
  }
  return out;
}

export async function teardown(): Promise<void> {
  const run = process.env[MARK];
  if (run === undefined) return;
  // a process stopped in the last test's afterAll may take a moment to go
  let left = marked(run);
  for (let i = 0; i < 50 && left.length > 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    left = marked(run);
  }
  if (left.length === 0) return;
  for (const p of left) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  // an error thrown here is printed, but does not change the runner's exit code by itself
  process.exitCode = 1;
  throw new Error(
    `${left.length} process${left.length === 1 ? '' : 'es'} started by the tests outlived them (now killed):\n${left.map((p) => `  ${p.pid} ${p.cmd.slice(0, 300)}`).join('\n')}`,
  );
}
