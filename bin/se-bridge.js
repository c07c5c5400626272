#!/usr/bin/env -S node --max-semi-space-size=1 --no-opt --no-maglev
// se-bridge entry point of the installed package: compiled JavaScript (npm run build), never
// TypeScript stripped at run time. Two memory settings, each measured in bench/results.md:
// a young generation of 1 MiB per semi-space is plenty for a daemon that polls once a second
// (about 10 MiB less resident), and without V8's optimizing compilers (TurboFan, Maglev) the
// code runs in the interpreter and the baseline compiler (about 9 MiB less, no CPU cost at
// one poll a second). No WebAssembly runs (the HTTP client is Node's own, with its native
// parser), so no WebAssembly flag is needed.
// V8's compile cache keeps the bytecode of every module between starts (about 35 ms less to the
// first poll): in systemd's CacheDirectory when the unit has one, else in the temporary folder.
// From a checkout, `npm start` runs the sources directly.
import module from 'node:module';
import { join } from 'node:path';

// the Node version first, from a module that imports nothing: on an older Node the CLI's own
// imports would fail to link (a SyntaxError stack) before any of its code could say why
const { nodeVersionProblem } = await import('../dist/src/lib/node-version.js');
const tooOld = nodeVersionProblem();
if (tooOld !== null) {
  process.stderr.write(`${tooOld}\n`);
  process.exit(2);
}
module.enableCompileCache?.(process.env.CACHE_DIRECTORY ? join(process.env.CACHE_DIRECTORY.split(':')[0], 'compile') : undefined);
await import('../dist/src/commands/cli.js');
