/**
 * npm run test:windows (as root; outside npm test: it needs debootstrap, chroot and mounts, and
 * about 2.3 GB of disk once): the win-x64 single executable run under Wine 10 in a Debian 13
 * root filesystem (scripts/windows-root.ts), through its whole story. Each step prints one line
 * with its result; the exit code is 1 if any step failed. Node under Wine dies with EBADF when a
 * standard stream is a Unix pipe, so every run writes its output to files that are read after.
 * Every process it starts is stopped (`wineserver -k` for its own prefix), and what it mounted
 * is unmounted.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, cpSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureRoot, mountAll, unmountAll } from './windows-root.ts';
import { windowsStory, type Wine } from './windows-story.ts';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const ROOTFS = join(REPO, 'build', 'windows-root');
/** Inside the root: the executable, its files, and a Wine prefix made afresh for each run. */
const WORK = '/opt/se';
const PREFIX = `${WORK}/prefix`;

const results: { step: string; ok: boolean; detail: string }[] = [];
const say = (line: string) => process.stdout.write(`${line}\n`);

async function main(): Promise<number> {
  if (process.getuid?.() !== 0) {
    say('npm run test:windows needs root (debootstrap, chroot, mount)');
    return 1;
  }
  say('building the win-x64 executable');
  execFileSync(process.execPath, [join(REPO, 'scripts', 'build-binary.ts'), 'win-x64'], {
    cwd: REPO,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exe = join(REPO, 'build', 'se-bridge-win-x64.exe');
  if (!existsSync(exe)) throw new Error(`the build made no ${exe}`);
  ensureRoot(ROOTFS, say);
  const work = join(ROOTFS, WORK);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  cpSync(exe, join(work, 'se-bridge.exe'));
  cpSync(join(REPO, 'config', 'windows'), join(work, 'config'), { recursive: true });
  const mounts = mountAll(ROOTFS);
  const started: ChildProcess[] = [];
  const wine = makeWine(work, started);
  try {
    await windowsStory(wine, { work, step });
  } finally {
    for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    spawnSync('chroot', [ROOTFS, '/usr/bin/env', '-i', `WINEPREFIX=${PREFIX}`, 'PATH=/usr/bin:/bin', 'wineserver', '-k']);
    unmountAll(mounts);
  }
  const failed = results.filter((r) => !r.ok);
  say(
    `\n${results.length - failed.length} of ${results.length} steps passed${failed.length > 0 ? `; failed: ${failed.map((f) => f.step).join(', ')}` : ''}`,
  );
  return failed.length === 0 ? 0 : 1;
}

/** step runs one check and prints its line: ok, or FAIL with why. */
async function step(name: string, check: () => Promise<string> | string): Promise<boolean> {
  const t0 = Date.now();
  try {
    const detail = await check();
    results.push({ step: name, ok: true, detail });
    say(`ok    ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s)${detail ? `: ${detail}` : ''}`);
    return true;
  } catch (err) {
    const detail = (err as Error).message ?? String(err);
    results.push({ step: name, ok: false, detail });
    say(`FAIL  ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s): ${detail}`);
    return false;
  }
}

/** makeWine: runs the executable under Wine in the root, its output in files (never pipes). */
function makeWine(work: string, started: ChildProcess[]): Wine {
  let n = 0;
  const launch = (args: readonly string[], env: Readonly<Record<string, string>>) => {
    n += 1;
    const out = join(work, `out-${n}.txt`);
    const err = join(work, `err-${n}.txt`);
    const o = openSync(out, 'w');
    const e = openSync(err, 'w');
    const vars = Object.entries({
      HOME: '/root',
      PATH: '/usr/bin:/bin',
      LANG: 'C.UTF-8',
      WINEPREFIX: PREFIX,
      WINEDEBUG: '-all',
      ...env,
    }).map(([k, v]) => `${k}=${v}`);
    const child = spawn('chroot', [ROOTFS, '/usr/bin/env', '-i', ...vars, 'wine', `${WORK}/se-bridge.exe`, ...args], {
      stdio: ['ignore', o, e],
    });
    closeSync(o);
    closeSync(e);
    started.push(child);
    const read = () => ({ stdout: readFileSync(out, 'utf8'), stderr: readFileSync(err, 'utf8') });
    return { child, read };
  };
  return {
    windowsPath: (p) => `Z:${p.replace(/\//g, '\\')}`,
    inRoot: (p) => join(ROOTFS, p),
    start: launch,
    run(args, env = {}, timeoutMs = 120_000) {
      const { child, read } = launch(args, env);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`se-bridge.exe ${args.join(' ')} did not exit within ${timeoutMs / 1000} s: ${JSON.stringify(read())}`));
        }, timeoutMs);
        child.once('exit', (code) => {
          clearTimeout(timer);
          resolve({ code, ...read() });
        });
      });
    },
    write(p, text) {
      writeFileSync(join(ROOTFS, p), text);
    },
  };
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    say(`test:windows: ${(err as Error).stack ?? String(err)}`);
    process.exit(1);
  },
);
