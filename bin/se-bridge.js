#!/usr/bin/env -S node --max-semi-space-size=1 --no-opt --no-maglev --no-sparkplug --optimize-for-size --liftoff-only
// se-bridge entry point of the installed package: the command line bundled into one file
// (dist/se-bridge.cjs, made by `npm run build`: scripts/bundle.ts), never TypeScript stripped at
// run time. One file rather than some four hundred ES modules holds about 5 MiB less and starts
// sooner (docs/performance.md). Its V8 settings trade speed the daemon does not need (one IMDS
// read a second) for memory, each measured in docs/performance.md: a young generation of 1 MiB
// per semi-space (about 10 MiB less resident); no optimizing compilers (TurboFan, Maglev: about
// 9 MiB less); no baseline compiler either (Sparkplug), so the code runs as bytecode, and V8's
// heap sized for memory rather than speed (together about 4 MiB less, for 0.2 % more of one
// core). undici, the HTTP client, parses HTTP in WebAssembly: --liftoff-only keeps that code in
// V8's baseline WebAssembly compiler, whose optimizing tier would hold several MiB more.
// V8's compile cache keeps the bytecode of the bundle between starts (a quicker first poll): in
// systemd's CacheDirectory when the unit has one, else in the temporary folder.
// From a checkout, `npm start` runs the sources directly.
import module from 'node:module';
import { join } from 'node:path';

// the Node version first, from a module that imports nothing: on an older Node the bundle could
// fail to compile (a SyntaxError stack) before any of its code could say why
const { nodeVersionProblem } = await import('../dist/src/lib/node-version.js');
const tooOld = nodeVersionProblem();
if (tooOld !== null) {
  process.stderr.write(`${tooOld}\n`);
  process.exit(2);
}
module.enableCompileCache?.(process.env.CACHE_DIRECTORY ? join(process.env.CACHE_DIRECTORY.split(':')[0], 'compile') : undefined);
module.createRequire(import.meta.url)('../dist/se-bridge.cjs');
