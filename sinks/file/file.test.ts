/** The file sink on the real file system: JSON Lines appended and flushed, a rotation followed, and each failure classified. */
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BridgeEvent } from '../../src/pipeline/cloudevent.ts';
import { bridgeEvents, silentLogger, tempDir } from '../../test/helpers.ts';
import { configSchema, fileSink } from './index.ts';

let dir: ReturnType<typeof tempDir>;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => dir.cleanup());

async function sendTo(path: string, events: BridgeEvent[], more: Record<string, unknown> = {}) {
  const sink = await fileSink.create(configSchema.parse({ type: 'file', name: 'f', path, ...more }), {
    logger: silentLogger,
    stdout: process.stdout,
  });
  try {
    return await sink.send(events, { signal: new AbortController().signal });
  } finally {
    await sink.close();
  }
}

const lines = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as BridgeEvent);

describe('file sink', () => {
  it('appends one CloudEvent per line, batch after batch, in a file only its owner and group read', async () => {
    const path = join(dir.path, 'events.jsonl');
    const [a, b, c] = bridgeEvents(3);
    expect(await sendTo(path, [a!, b!])).toEqual([{ status: 'delivered' }, { status: 'delivered' }]);
    expect(await sendTo(path, [c!])).toEqual([{ status: 'delivered' }]);
    expect(lines(path)).toEqual([a, b, c].map((e) => JSON.parse(JSON.stringify(e)) as BridgeEvent));
    expect(lines(path).map((e) => e.specversion)).toEqual(['1.0', '1.0', '1.0']);
    expect(statSync(path).mode & 0o777).toBe(0o640);
  });

  it('follows a rotation: the next batch starts a new file where the old one was', async () => {
    const path = join(dir.path, 'events.jsonl');
    const [a, b] = bridgeEvents(2);
    await sendTo(path, [a!]);
    renameSync(path, `${path}.1`);
    await sendTo(path, [b!]);
    expect(lines(`${path}.1`).map((e) => e.id)).toEqual([a!.id]);
    expect(lines(path).map((e) => e.id)).toEqual([b!.id]);
  });

  it('makes missing folders by default; without mkdir a missing folder is retried (it may be mounted later)', async () => {
    const [a] = bridgeEvents(1);
    const deep = join(dir.path, 'x', 'y', 'events.jsonl');
    expect(await sendTo(deep, [a!])).toEqual([{ status: 'delivered' }]);
    expect(lines(deep)).toHaveLength(1);
    const missing = join(dir.path, 'later', 'events.jsonl');
    expect(await sendTo(missing, [a!], { mkdir: false })).toEqual([{ status: 'retry', reason: `ENOENT: cannot append to ${missing}` }]);
  });

  it('rejects a path that is a folder (retrying cannot help), and retries one it may not write (an operator can fix it)', async () => {
    const [a] = bridgeEvents(1);
    const folder = join(dir.path, 'a-folder');
    mkdirSync(folder);
    expect(await sendTo(folder, [a!])).toEqual([{ status: 'reject', reason: `EISDIR: cannot append to ${folder}` }]);
    if (process.getuid?.() === 0) return; // root writes anywhere: the permission case cannot be made
    const locked = join(dir.path, 'locked');
    mkdirSync(locked);
    chmodSync(locked, 0o500);
    const path = join(locked, 'events.jsonl');
    expect(await sendTo(path, [a!])).toEqual([{ status: 'retry', reason: `EACCES: cannot append to ${path}` }]);
  });
});
