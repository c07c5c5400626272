/**
 * How the daemon is started where it is deployed (scripts/launch.ts): the V8 flags of the
 * package's bin, which the executable is built with, and the allocator settings of the systemd
 * unit, which the image sets too and the benchmarks measure with.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { allocatorEnvOf, LAUNCH, v8FlagsOf } from '../../scripts/launch.ts';
import { ROOT } from '../helpers.ts';

describe('launch settings', () => {
  it("reads the bin's V8 flags and the unit's allocator settings", () => {
    expect(LAUNCH.v8Flags).toEqual(expect.arrayContaining(['--max-semi-space-size=1', '--no-opt', '--liftoff-only']));
    expect(LAUNCH.env).toEqual({ GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=32768:glibc.malloc.trim_threshold=65536' });
  });

  it("the Dockerfile's image starts with the unit's allocator settings, as build-image's does", () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    for (const [k, v] of Object.entries(LAUNCH.env)) expect(dockerfile).toContain(`\nENV ${k}=${v}\n`);
    expect(readFileSync(join(ROOT, 'scripts', 'build-image.ts'), 'utf8')).toContain(
      'Object.entries(LAUNCH.env).map(([k, v]) => `ENV ${k}=${v}`)',
    );
  });

  it('refuses a #! line it cannot read, rather than starting the executable without flags', () => {
    expect(() => v8FlagsOf('#!/usr/bin/env node')).toThrow(/not "#!\/usr\/bin\/env -S node --FLAG/);
    expect(() => v8FlagsOf('#!/usr/bin/env -S GLIBC_TUNABLES=x node --no-opt')).toThrow(/first line/);
    expect(v8FlagsOf('#!/usr/bin/env -S node --a --b=1')).toEqual(['--a', '--b=1']);
  });

  it('takes only the allocator settings of a unit, each once', () => {
    const unit = [
      'Environment=NODE_ENV=production',
      'Environment=MALLOC_ARENA_MAX=2',
      '# Environment=GLIBC_TUNABLES=commented',
      'Environment=GLIBC_TUNABLES=a=1',
    ].join('\n');
    expect(allocatorEnvOf(unit)).toEqual({ MALLOC_ARENA_MAX: '2', GLIBC_TUNABLES: 'a=1' });
  });

  it("glibc takes the unit's settings: blocks of 64 KiB no longer grow the C heap (Linux with glibc)", () => {
    // 300 blocks of 64 KiB kept alive, and how much the process's [heap] mapping grew for them
    const script = [
      "const heap = () => { const t = require('node:fs').readFileSync('/proc/self/smaps', 'utf8'); const i = t.indexOf('[heap]');",
      '  return i < 0 ? 0 : Number(/Rss:\\s+(\\d+) kB/.exec(t.slice(i))[1]); };',
      'const before = heap(); const keep = []; for (let i = 0; i < 300; i++) keep.push(new Uint8Array(64 * 1024).fill(1));',
      'process.stdout.write(String(heap() - before));',
    ].join('\n');
    const grewKiB = (env: NodeJS.ProcessEnv) => {
      const r = spawnSync(process.execPath, ['-e', script], { env, encoding: 'utf8', timeout: 20_000 });
      expect(r.stderr).toBe('');
      return Number(r.stdout);
    };
    const { GLIBC_TUNABLES: _own, ...env } = process.env;
    expect(grewKiB(env)).toBeGreaterThan(15_000);
    expect(grewKiB({ ...env, ...LAUNCH.env })).toBeLessThan(2_000);
  });
});
