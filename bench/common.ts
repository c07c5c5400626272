/** What every benchmark phase shares: paths, the --quick switch, a scratch directory, statistics, process probes. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { stringify as stringifyYaml } from 'yaml';
import { LAUNCH } from '../scripts/launch.ts';

export const ROOT = join(fileURLToPath(import.meta.url), '..', '..');
export const CLI = join(ROOT, 'src', 'commands', 'cli.ts');
/** The package's V8 settings, read from its bin's #! line, so every anchor runs with exactly them. */
export const PACKAGE_V8_FLAGS: readonly string[] = LAUNCH.v8Flags;
/** The environment the systemd unit and the image set for the daemon (glibc's allocator settings). */
export const PACKAGE_ENV: Readonly<Record<string, string>> = LAUNCH.env;
export const quick = process.argv.includes('--quick');
/** sizesOf: the group sizes a phase run alone is given (`node bench/x.ts 10 100`), or undefined for its own. */
export function sizesOf(argv: readonly string[]): number[] | undefined {
  const sizes = argv.map(Number).filter((x) => x > 0);
  return sizes.length > 0 ? sizes : undefined;
}
export const silent = pino({ level: 'silent' });
export const dir = mkdtempSync(join(tmpdir(), 'se-bridge-bench-'));
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const q = (s: readonly number[], p: number) => (s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor(p * s.length))]!);
export const dist = (raw: number[]) => {
  const s = [...raw].sort((a, b) => a - b);
  return { n: s.length, p50: q(s, 0.5), p90: q(s, 0.9), p99: q(s, 0.99), max: s.at(-1) ?? NaN, samples: s };
};
export const log = (line: string) => process.stderr.write(`bench: ${line}\n`);

export function rssMiB(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}
export function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, clock ticks at 100 Hz
}
/** daemon runs a Node script with this Node (the child is the process measured). */
export function daemon(args: string[]): ChildProcess {
  return spawnProcess([process.execPath, ...args]);
}

/** spawnProcess runs a command, this Node first on PATH (for the package's #! line); the child is the process measured. */
export function spawnProcess(cmd: string[], extraEnv: Record<string, string> = {}): ChildProcess {
  const env = { ...process.env, ...extraEnv, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` };
  return spawn(cmd[0]!, cmd.slice(1), { stdio: ['ignore', 'ignore', 'inherit'], env });
}
/**
 * bridgeConfig writes a configuration: JSON at log level `warn` by default; `asUsers` writes it as
 * users do, YAML at log level `info`.
 */
export function bridgeConfig(name: string, o: Record<string, unknown>, asUsers = false): string {
  const path = join(dir, `${name}.${asUsers ? 'yaml' : 'json'}`);
  const config = {
    state: { path: join(dir, `${name}.db`) },
    log: { level: asUsers ? 'info' : 'warn' },
    observability: { listen: 'off' },
    ...o,
  };
  writeFileSync(path, asUsers ? stringifyYaml(config) : JSON.stringify(config));
  return path;
}
export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}

/** stopEverything stops the daemons, then the peers they spoke to (simulators, proxies, stores), each as it stops. */
export async function stopEverything(
  children: readonly ChildProcess[],
  ...peers: readonly (readonly { close?: () => Promise<unknown>; stop?: () => Promise<unknown> }[])[]
): Promise<void> {
  await Promise.all(children.map((c) => stop(c)));
  for (const group of peers) await Promise.all(group.map((p) => (p.stop ?? p.close)!.call(p)));
}
