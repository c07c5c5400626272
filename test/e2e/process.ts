/** Helpers to run the se-bridge CLI as a real child process. */
import { spawn, type ChildProcess } from 'node:child_process';
import { CLI, ROOT, waitFor } from '../helpers.ts';

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** cli runs `se-bridge ARGS` to completion (bounded by timeoutMs). */
export function cli(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000): Promise<Run> {
  const child = start(args, env);
  return finished(child, timeoutMs);
}

/** start launches `se-bridge ARGS` and collects its output on `child.out`. */
export function start(args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess & { out: { stdout: string; stderr: string } } {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: '', SE_BRIDGE_CONFIG: '', SE_BRIDGE_IMDS_ENDPOINT: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  }) as ChildProcess & { out: { stdout: string; stderr: string } };
  child.out = { stdout: '', stderr: '' };
  // never leave a daemon behind, even when a test times out
  live.add(child);
  child.once('exit', () => live.delete(child));
  child.stdout!.on('data', (c: Buffer) => (child.out.stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (child.out.stderr += c.toString()));
  return child;
}

export function finished(child: ChildProcess & { out: { stdout: string; stderr: string } }, timeoutMs = 60_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`se-bridge did not exit within ${timeoutMs} ms\nstdout: ${child.out.stdout}\nstderr: ${child.out.stderr}`));
    }, timeoutMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      // let the pipes drain
      setImmediate(() => resolve({ code, signal, stdout: child.out.stdout, stderr: child.out.stderr }));
    });
  });
}

export type Running = Promise<Run> & { child: ChildProcess & { out: { stdout: string; stderr: string } } };

/** command runs any program (an installed se-bridge, the single executable) to completion, its output collected; `child` is the process. */
export function command(program: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }, timeoutMs = 60_000): Running {
  const child = spawn(program, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] }) as ChildProcess & {
    out: { stdout: string; stderr: string };
  };
  child.out = { stdout: '', stderr: '' };
  live.add(child);
  child.once('exit', () => live.delete(child));
  child.stdout!.on('data', (c: Buffer) => (child.out.stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (child.out.stderr += c.toString()));
  return Object.assign(finished(child, timeoutMs), { child });
}

/** awaitWhileRunning waits for `check` while `run` goes on; on a timeout it kills the process and fails with what it said. */
export async function awaitWhileRunning(run: Running, check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  try {
    await waitFor(check, what, timeoutMs);
  } catch (err) {
    run.child.kill('SIGKILL');
    throw new Error(`${(err as Error).message}; the process said: ${run.child.out.stdout} ${run.child.out.stderr}`);
  }
}

/** stopProcesses ends processes with SIGTERM, and with SIGKILL those still running after `graceMs`; it waits for every one to exit. */
export async function stopProcesses(list: readonly (ChildProcess | null | undefined)[], graceMs = 10_000): Promise<void> {
  const running = list.filter((c): c is ChildProcess => c != null && c.exitCode === null && c.signalCode === null);
  const exited = running.map((c) => new Promise((r) => c.once('exit', r)));
  for (const c of running) c.kill('SIGTERM');
  const late = setTimeout(() => running.forEach((c) => c.kill('SIGKILL')), graceMs);
  await Promise.all(exited);
  clearTimeout(late);
}
