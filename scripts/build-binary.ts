/**
 * npm run build:binary [-- linux-x64 linux-arm64 win-x64]: se-bridge as a single executable,
 * with Node's single executable application support: esbuild bundles the CLI into one
 * CommonJS file, Node turns it into a blob, and postject injects the blob into a copy of the
 * Node binary of each target platform. The Node binaries come from the npm registry's
 * `node-<platform>` packages, at the version of the Node that builds (the blob must match it).
 * Writes build/se-bridge-<platform>[.exe]; default platform: linux-x64.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'postject';
import { bundleAssets, bundleCli } from './bundle.ts';
import { LAUNCH } from './launch.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = join(ROOT, 'build');
const WORK = join(OUT, 'sea');
/**
 * The memory flags the package's bin script passes (bin/se-bridge.js says what each saves): a
 * 1 MiB semi-space, no optimizing compilers, no baseline compiler, V8 sizing for memory, and
 * undici's WebAssembly parser kept in V8's baseline WebAssembly compiler.
 */
const V8_FLAGS = LAUNCH.v8Flags;
const FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
const PLATFORMS = ['linux-x64', 'linux-arm64', 'win-x64'] as const;
type Platform = (typeof PLATFORMS)[number];

const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const platforms = (wanted.length === 0 ? ['linux-x64'] : wanted) as Platform[];
for (const p of platforms) if (!PLATFORMS.includes(p)) throw new Error(`unknown platform ${p}; known: ${PLATFORMS.join(', ')}`);

mkdirSync(WORK, { recursive: true });

// 1. SEA runs one CommonJS main script: the package's bundle (scripts/bundle.ts), and beside it,
// as assets compiled on first use, the client libraries only some configurations use.
const assets = await bundleAssets(WORK);
const bundle = join(WORK, 'se-bridge.cjs');
await bundleCli(bundle);

// 2. The blob, made by the Node that runs this script (the same version as the binaries below).
const config = join(WORK, 'sea-config.json');
const blob = join(WORK, 'se-bridge.blob');
writeFileSync(
  config,
  JSON.stringify({ main: bundle, output: blob, disableExperimentalSEAWarning: true, useCodeCache: false, execArgv: V8_FLAGS, assets }),
);
execFileSync(process.execPath, ['--experimental-sea-config', config], { stdio: 'inherit' });

// 3. A Node binary per platform, with the blob injected.
const version = process.versions.node;
for (const platform of platforms) {
  const source = nodeBinary(platform);
  const target = join(OUT, `se-bridge-${platform}${platform.startsWith('win') ? '.exe' : ''}`);
  rmSync(target, { force: true });
  copyFileSync(source, target);
  chmodSync(target, 0o755);
  await quietly(() => inject(target, 'NODE_SEA_BLOB', readFileSync(blob), { sentinelFuse: FUSE, overwrite: true }));
  process.stdout.write(`${target}: ${(statSync(target).size / 2 ** 20).toFixed(1)} MiB (Node ${version})\n`);
  if (platform.startsWith('linux')) process.stdout.write(`${release(platform, target)}\n`);
}

/**
 * KNOWN_HARMLESS: postject's ELF parser (LIEF, as WebAssembly) warns that Node's linux binaries
 * have note sections (`.note`, `.note.100`) whose names it cannot find in the string table. It
 * reads and writes the file all the same, and the executable it makes runs (test/e2e/binary.test.ts
 * runs it); the nine lines said nothing a reader could act on.
 */
const KNOWN_HARMLESS = /^warning: Can't find string offset for section name '\.note(\.\d+)?'\s*$/;

/** quietly runs `fn` with the known harmless lines of postject left out of stderr; every other line passes. */
async function quietly<T>(fn: () => Promise<T>): Promise<T> {
  const write = process.stderr.write.bind(process.stderr);
  const keep = (line: unknown) => !KNOWN_HARMLESS.test(String(line));
  const { warn, error, log } = console;
  process.stderr.write = (chunk: unknown, ...rest: unknown[]) => (keep(chunk) ? write(chunk as string, ...(rest as [])) : true);
  console.warn = (...a: unknown[]) => (keep(a[0]) ? warn(...a) : undefined);
  console.error = (...a: unknown[]) => (keep(a[0]) ? error(...a) : undefined);
  console.log = (...a: unknown[]) => (keep(a[0]) ? log(...a) : undefined);
  try {
    return await fn();
  } finally {
    process.stderr.write = write;
    Object.assign(console, { warn, error, log });
  }
}

/**
 * release packs what a Linux VM needs into build/se-bridge-<platform>.tar.gz: the executable,
 * scripts/install-linux.sh, and the configuration examples it installs (config/cloud-init.yaml
 * and the VM Scale Set extension download this archive).
 */
function release(platform: Platform, binary: string): string {
  const stage = join(OUT, `release-${platform}`);
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(join(stage, 'scripts'), { recursive: true });
  mkdirSync(join(stage, 'config', 'systemd'), { recursive: true });
  copyFileSync(binary, join(stage, `se-bridge-${platform}`));
  chmodSync(join(stage, `se-bridge-${platform}`), 0o755);
  copyFileSync(join(ROOT, 'scripts', 'install-linux.sh'), join(stage, 'scripts', 'install-linux.sh'));
  chmodSync(join(stage, 'scripts', 'install-linux.sh'), 0o755);
  for (const f of ['bridge.minimal.yaml', 'bridge.example.yaml', 'systemd/se-bridge.service', 'systemd/se-bridge.env'])
    copyFileSync(join(ROOT, 'config', f), join(stage, 'config', f));
  for (const f of ['README.md', 'LICENSE']) copyFileSync(join(ROOT, f), join(stage, f));
  const archive = join(OUT, `se-bridge-${platform}.tar.gz`);
  execFileSync('tar', ['-czf', archive, '-C', stage, '.']);
  rmSync(stage, { recursive: true, force: true });
  return archive;
}

/** nodeBinary finds the Node executable of `platform`: this one for the running platform, else the registry's node-<platform> package. */
function nodeBinary(platform: Platform): string {
  if (platform === `${process.platform === 'win32' ? 'win' : process.platform}-${process.arch}`) return process.execPath;
  const cache = join(OUT, 'node', `${platform}-${version}`);
  const exe = join(cache, 'package', 'bin', platform.startsWith('win') ? 'node.exe' : 'node');
  try {
    statSync(exe);
    return exe;
  } catch {
    mkdirSync(cache, { recursive: true });
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    execFileSync(npm, ['pack', `node-${platform}@${version}`, '--pack-destination', cache, '--silent'], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const tgz = readdirSync(cache).find((f) => f.endsWith('.tgz'))!;
    execFileSync('tar', ['-xzf', join(cache, tgz), '-C', cache]);
    return exe;
  }
}
