/**
 * The CLI checks the Node version before anything else, and agrees with package.json `engines`.
 * The process test runs the CLI with process.versions.node set to an old version by a preload
 * script (the pinned Node is the only one `npm ci` brings), and checks that `run` stops at once
 * with the version it needs, where it used to pass `validate` and then fail on node:sqlite.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeVersionProblem } from '../../src/lib/node-version.ts';
import { CLI, ROOT } from '../helpers.ts';

describe('the Node version check', () => {
  it('accepts what package.json engines accepts, and nothing else', () => {
    const engines = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
    expect(engines).toBe('^22.21.0 || >=24.5.0');
    for (const v of ['22.21.0', '22.22.3', '24.5.0', '24.21.0', '25.0.0', '26.1.2']) expect(nodeVersionProblem(v), v).toBeNull();
    for (const v of ['18.20.4', '20.20.2', '22.20.0', '23.11.0', '24.4.1'])
      expect(nodeVersionProblem(v), v).toMatch(
        new RegExp(`needs Node\\.js 22\\.21 or later in 22\\.x, or 24\\.5 or later \\(this is Node\\.js ${v.replaceAll('.', '\\.')}\\)`),
      );
  });

  it('stops the CLI first, exit 2, naming the version it needs', () => {
    const preload = 'data:text/javascript,Object.defineProperty(process.versions,"node",{value:"20.20.2"})';
    const r = spawnSync(process.execPath, ['--import', preload, CLI, 'run', '--config', join(ROOT, 'config', 'bridge.minimal.yaml')], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, SE_BRIDGE_CONFIG: '' },
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('se-bridge needs Node.js 22.21 or later in 22.x, or 24.5 or later (this is Node.js 20.20.2)');
    expect(r.stderr).not.toContain('node:sqlite');
  });
});
