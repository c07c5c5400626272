#!/usr/bin/env -S node --max-semi-space-size=1
// se-bridge entry point of the installed package: compiled JavaScript (npm run build), never
// TypeScript stripped at run time. A young generation of 1 MiB per semi-space is plenty for a
// daemon that polls once a second, and keeps about 14 MiB less resident (bench/results.md).
// From a checkout, `npm start` runs the sources directly.
import '../dist/cli.js';
