#!/usr/bin/env node
// se-bridge entry point: the sources are TypeScript that Node runs directly (type stripping).
import '../src/cli.ts';
