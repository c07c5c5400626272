/**
 * The Debian 13 root filesystem the Windows tests run Wine 10 in (Debian 12's Wine 8 cannot run
 * Node 24). Made once with debootstrap from the Debian mirror this machine's apt already uses
 * (read from its sources: nothing here names a host), then Wine installed in it with no
 * recommends; kept under build/ and reused. Mounts what Wine needs (/proc, /dev, /dev/pts,
 * /dev/shm) for a run and unmounts them afterwards.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** mirror: the Debian mirror of this machine's apt sources (deb822 or one-line format). */
export function mirror(): string {
  const deb822 = '/etc/apt/sources.list.d/debian.sources';
  if (existsSync(deb822)) {
    const m = /^URIs:\s*(\S+)/m.exec(readFileSync(deb822, 'utf8'));
    if (m) return m[1]!;
  }
  const list = '/etc/apt/sources.list';
  if (existsSync(list)) {
    const m = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+\S+\s+main/m.exec(readFileSync(list, 'utf8'));
    if (m) return m[1]!;
  }
  throw new Error("cannot find a Debian mirror in this machine's apt sources");
}

const STAMP = 'se-bridge-wine-ready';

/** ensureRoot makes the root filesystem with Wine in it, once; it says what it did. */
export function ensureRoot(root: string, say: (line: string) => void): void {
  if (existsSync(join(root, STAMP))) return say(`root filesystem: ${root} (cached)`);
  if (!existsSync(join(root, 'usr', 'bin', 'apt-get'))) {
    const from = mirror();
    say(`root filesystem: debootstrap --variant=minbase trixie (this takes a few minutes, once)`);
    execFileSync('debootstrap', ['--variant=minbase', 'trixie', root, from], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  say('root filesystem: installing wine and wine64 (no recommends)');
  const mounts = mountAll(root);
  try {
    inRoot(root, ['apt-get', 'update', '-q']);
    inRoot(root, ['apt-get', 'install', '-y', '-q', '--no-install-recommends', 'wine', 'wine64']);
  } finally {
    unmountAll(mounts);
  }
  writeFileSync(join(root, STAMP), `${new Date().toISOString()}\n`);
}

function inRoot(root: string, command: string[]): void {
  execFileSync('chroot', [root, ...command], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', DEBIAN_FRONTEND: 'noninteractive', LANG: 'C.UTF-8' },
  });
}

/** mountAll mounts what Wine and apt need inside the root; it returns the mount points, innermost last. */
export function mountAll(root: string): string[] {
  const done: string[] = [];
  const mount = (args: string[], at: string) => {
    execFileSync('mount', [...args, join(root, at)]);
    done.push(join(root, at));
  };
  try {
    mount(['-t', 'proc', 'proc'], 'proc');
    mount(['--bind', '/dev'], 'dev');
    mount(['--bind', '/dev/pts'], 'dev/pts');
    mount(['-t', 'tmpfs', 'tmpfs'], 'dev/shm');
  } catch (err) {
    unmountAll(done);
    throw err;
  }
  return done;
}

/** unmountAll unmounts in reverse order; a mount that is busy is detached lazily. */
export function unmountAll(points: readonly string[]): void {
  for (const p of [...points].reverse()) {
    if (spawnSync('umount', [p]).status !== 0) spawnSync('umount', ['-l', p]);
  }
}
