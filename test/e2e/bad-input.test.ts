/**
 * Broken state files and hostile configuration files, through the real CLI: each gets a clear
 * message and the documented exit code (1 for state, 2 for configuration), never a stack trace
 * or a generic SQLite code.
 */
import { openSync, closeSync, writeFileSync, writeSync, statSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/store.ts';
import { tempDir } from '../helpers.ts';
import { cli } from './process.ts';

let dir: ReturnType<typeof tempDir>;
beforeAll(() => {
  dir = tempDir();
});
afterAll(() => dir.cleanup());

function config(name: string, statePath: string): string {
  const path = join(dir.path, `${name}.yaml`);
  writeFileSync(
    path,
    [`imds: { endpoint: "http://127.0.0.1:9" }`, `state: { path: ${JSON.stringify(statePath)} }`, `observability: { listen: "off" }`].join(
      '\n',
    ),
  );
  return path;
}

/** a real state database with enough rows to span many pages, checkpointed into the main file */
function stateWithPages(path: string): void {
  const s = Store.open(path);
  const events = Array.from({ length: 400 }, (_, i) => ({
    id: `E${i}/scheduled`,
    eventId: `E${i}`,
    transition: 'scheduled',
    json: JSON.stringify({ pad: 'x'.repeat(200), i }),
    sinks: ['f'],
  }));
  s.journal.commit({ document: { incarnation: 2, events: [] }, etag: null, observedAt: 'now', events });
  s.close();
  const db = new DatabaseSync(path);
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  db.close();
}

describe('a state database that cannot be used', () => {
  it("not a database at all: exit 1 with SQLite's reason and what to do", async () => {
    const state = join(dir.path, 'garbage.db');
    writeFileSync(state, Buffer.alloc(8192, 0x5a));
    const r = await cli(['run', '--config', config('garbage', state)]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`state database ${state} is damaged (file is not a database); move it aside`);
    expect(r.stderr).not.toContain('ERR_SQLITE_ERROR');
    expect(r.stderr).not.toMatch(/^\s+at /m);
  });

  it('damaged pages: found at start by quick_check, exit 1', async () => {
    const state = join(dir.path, 'pages.db');
    stateWithPages(state);
    const size = statSync(state).size;
    expect(size).toBeGreaterThan(20 * 4096);
    const fd = openSync(state, 'r+');
    for (let page = 3; page * 4096 < size - 4096; page += 2) writeSync(fd, Buffer.alloc(4096, 0xa5), 0, 4096, page * 4096);
    closeSync(fd);
    const r = await cli(['run', '--config', config('pages', state)]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      new RegExp(`state database ${state.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is damaged \\(.+\\); move it aside`),
    );
    expect(r.stderr).not.toMatch(/^\s+at /m);
  });

  it('an unreadable last document: exit 1, named as damage', async () => {
    const state = join(dir.path, 'doc.db');
    stateWithPages(state);
    const db = new DatabaseSync(state);
    db.exec("UPDATE document SET body = '{not json'");
    db.close();
    const r = await cli(['run', '--config', config('doc', state)]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('is damaged (the last document is unreadable');
  });
});

describe('a hostile configuration file', () => {
  it('a YAML alias bomb: exit 2, named', async () => {
    const lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 12; i++)
      lines.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(10)
          .fill(`*${String.fromCharCode(96 + i)}`)
          .join(',')}]`,
      );
    lines.push('imds: { endpoint: *l }');
    const path = join(dir.path, 'bomb.yaml');
    writeFileSync(path, lines.join('\n'));
    for (const verb of ['validate', 'run']) {
      const r = await cli([verb, '--config', path]);
      expect(r.code, verb).toBe(2);
      expect(r.stderr).toMatch(/\(yaml\): .*alias/i);
    }
  });

  it('a 50 MB file: exit 2 before it is parsed', async () => {
    const path = join(dir.path, 'huge.yaml');
    writeFileSync(path, `# ${'x'.repeat(50 * 1024 * 1024)}\n`);
    const r = await cli(['validate', '--config', path]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`(file): is ${50 * 1024 * 1024 + 3} bytes; a configuration file may have at most 1048576`);
  });
});
