/**
 * The installed package on a Node that is too old says so in one line and exits 2, whatever the
 * command (even --help and --version), instead of dying on a module it cannot link. Run with a
 * real Node 20: the machine's own when it has one (outside node_modules), else the npm registry's
 * `node-<platform>` package at 20, fetched once into build/ as build:binary fetches other
 * platforms' Node.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers.ts';

/** majorOf: the major version of the Node at `exe`, or null when it does not run. */
function majorOf(exe: string): number | null {
  const r = spawnSync(exe, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  const m = /^v(\d+)\./.exec(r.stdout ?? '');
  return m === null ? null : Number(m[1]);
}

/** node20: a real Node.js 20. */
function node20(): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '' || dir.includes('node_modules')) continue;
    const exe = join(dir, process.platform === 'win32' ? 'node.exe' : 'node');
    if (existsSync(exe) && majorOf(exe) === 20) return exe;
  }
  const platform = `${process.platform === 'win32' ? 'win' : process.platform}-${process.arch}`;
  const cache = join(ROOT, 'build', 'node', `${platform}-20`);
  const exe = join(cache, 'package', 'bin', process.platform === 'win32' ? 'node.exe' : 'node');
  if (!existsSync(exe)) {
    mkdirSync(cache, { recursive: true });
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    execFileSync(npm, ['pack', `node-${platform}@20`, '--pack-destination', cache, '--silent'], { stdio: ['ignore', 'ignore', 'inherit'] });
    const tgz = readdirSync(cache).find((f) => f.endsWith('.tgz'))!;
    execFileSync('tar', ['-xzf', join(cache, tgz), '-C', cache]);
  }
  return exe;
}

describe('the package on Node.js 20', () => {
  it('says in one line which Node it needs, exit 2, for every command', { timeout: 120_000 }, () => {
    const node = node20();
    expect(majorOf(node)).toBe(20);
    for (const args of [
      ['--version'],
      ['--help'],
      ['run', '--help'],
      ['validate', '--config', join(ROOT, 'config', 'bridge.minimal.yaml')],
      ['demo'],
    ]) {
      const r = spawnSync(node, [join(ROOT, 'bin', 'se-bridge.js'), ...args], { encoding: 'utf8', timeout: 30_000, cwd: ROOT });
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(
        /^se-bridge needs Node\.js 22\.21 or later in 22\.x, or 24\.5 or later \(this is Node\.js 20\.\d+\.\d+\); [^\n]+\n$/,
      );
    }
  });
});
