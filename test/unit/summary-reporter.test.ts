/**
 * The closing line counts a suite that could not run (its beforeAll threw) as failed, never as
 * skipped: a real vitest run over two fixture files, read back from its output.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ROOT } from '../helpers.ts';

function runVitest(files: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'),
        'run',
        '--config',
        join(ROOT, 'test', 'fixtures', 'reporter', 'vitest.config.ts'),
        ...files,
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CI: 'true' } },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

it('counts the tests of a suite whose beforeAll threw as failed', async () => {
  const r = await runVitest(['test/fixtures/reporter/broken-suite.fixture.ts', 'test/fixtures/reporter/passing.fixture.ts']);
  expect(r.code).not.toBe(0);
  expect(r.out).toMatch(/^tests: 1 passed, 1 failed$/m);
}, 60_000);
