import { readdirSync, writeFileSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Store, StoreError, type PendingEvent } from '../../src/store/store.ts';
import { StateLock } from '../../src/store/lock.ts';
import { fixtureDocument, tempDir } from '../helpers.ts';

const dirs: { cleanup(): void }[] = [];
afterEach(() => {
  while (dirs.length) dirs.pop()!.cleanup();
});
function freshPath(): string {
  const d = tempDir();
  dirs.push(d);
  return join(d.path, 'nested', 'state.db');
}
const pe = (id: string, eventId: string, sinks: string[], transition = 'scheduled'): PendingEvent => ({
  id,
  eventId,
  transition,
  json: JSON.stringify({ id, specversion: '1.0', type: `azure.scheduledevent.${transition}`, source: 'urn:x', subject: eventId }),
  sinks,
});

describe('Store (real SQLite on disk)', () => {
  it('creates its directory, and reloads the last document and the outbox after reopening', () => {
    const path = freshPath();
    const doc = fixtureDocument('live-migration-2.json');
    let s = Store.open(path);
    expect(s.journal.loadDocument()).toBeNull();
    s.journal.commit({
      document: doc,
      etag: '"e1"',
      observedAt: '2026-01-01T00:00:00Z',
      events: [pe('A/scheduled', 'A', ['x', 'y'])],
      now: 1000,
    });
    s.close();
    s = Store.open(path);
    const loaded = s.journal.loadDocument()!;
    expect(loaded.document).toEqual(doc);
    expect(loaded.etag).toBe('"e1"');
    expect(Object.isFrozen(loaded.document.events[0])).toBe(true);
    expect(s.outbox.depth()).toEqual(
      new Map([
        ['x', 1],
        ['y', 1],
      ]),
    );
    expect(s.outbox.due('x', 1000, 10).map((r) => r.ceId)).toEqual(['A/scheduled']);
    s.close();
  });

  it('commits a document with its events atomically: a failure leaves nothing behind', () => {
    const s = Store.open(freshPath());
    const d1 = fixtureDocument('live-migration-1.json');
    s.journal.commit({ document: d1, etag: null, observedAt: 't', events: [] });
    const bad = { ...pe('B/scheduled', 'B', ['x']), json: null as unknown as string };
    expect(() =>
      s.journal.commit({
        document: fixtureDocument('live-migration-2.json'),
        etag: null,
        observedAt: 't',
        events: [pe('A/scheduled', 'A', ['x']), bad],
      }),
    ).toThrow(StoreError);
    expect(s.journal.loadDocument()!.document.incarnation).toBe(1);
    expect(s.outbox.depth().size).toBe(0);
    expect(s.journal.all()).toHaveLength(0);
    s.close();
  });

  it('keeps a deferred row of a sink until its time, and lets it go sooner when the window opens, the event is approved or Started', () => {
    const s = Store.open(freshPath());
    const doc = fixtureDocument('live-migration-1.json');
    const deferred = (id: string, eventId: string) => ({
      ...pe(id, eventId, ['drain', 'audit']),
      deferred: { sinks: ['drain'], until: 9000 },
    });
    s.journal.commit({
      document: doc,
      etag: null,
      observedAt: 't',
      events: [deferred('A/scheduled', 'A'), deferred('B/scheduled', 'B')],
      now: 100,
    });
    s.journal.appendEvents([deferred('C/scheduled', 'C')], undefined, 100);
    // the other sink has it at once; the preparation waits
    expect(s.outbox.due('audit', 200, 10).map((r) => r.ceId)).toEqual(['A/scheduled', 'B/scheduled', 'C/scheduled']);
    expect(s.outbox.due('drain', 200, 10)).toEqual([]);
    expect(s.outbox.nextDueAt('drain')).toBe(9000);
    // approved: A's goes now; Started: B's; the window opens for C (Outbox.release)
    s.journal.appendEvents([pe('A/approved/x', 'A', ['audit'], 'approved')], undefined, 300);
    expect(s.outbox.due('drain', 300, 10).map((r) => r.ceId)).toEqual(['A/scheduled']);
    s.journal.commit({ document: doc, etag: null, observedAt: 't', events: [pe('B/started', 'B', ['drain'], 'started')], now: 400 });
    expect(s.outbox.due('drain', 400, 10).map((r) => r.ceId)).toEqual(['A/scheduled', 'B/scheduled']);
    expect(s.outbox.release('C', 500)).toBe(1);
    expect(s.outbox.release('C', 500)).toBe(0);
    expect(s.outbox.due('drain', 500, 10).map((r) => r.ceId)).toEqual(['A/scheduled', 'B/scheduled', 'C/scheduled']);
    s.close();
  });

  it('hands out one row per EventId at a time, oldest first, and only when due', () => {
    const s = Store.open(freshPath());
    const doc = fixtureDocument('live-migration-1.json');
    s.journal.commit({
      document: doc,
      etag: null,
      observedAt: 't',
      events: [pe('A/scheduled', 'A', ['x']), pe('B/scheduled', 'B', ['x'])],
      now: 100,
    });
    s.journal.commit({ document: doc, etag: null, observedAt: 't', events: [pe('A/started', 'A', ['x'], 'started')], now: 200 });
    expect(s.outbox.due('x', 300, 10).map((r) => r.ceId)).toEqual(['A/scheduled', 'B/scheduled']);
    expect(s.outbox.due('x', 300, 1).map((r) => r.ceId)).toEqual(['A/scheduled']);
    const [a] = s.outbox.due('x', 300, 1);
    s.outbox.reschedule(a!.rowId, 1, 5000, 'boom');
    // A/started waits behind its own scheduled; B is unaffected
    expect(s.outbox.due('x', 300, 10).map((r) => r.ceId)).toEqual(['B/scheduled']);
    expect(s.outbox.nextDueAt('x')).toBe(100);
    s.outbox.markDelivered([s.outbox.due('x', 300, 10)[0]!.rowId]);
    expect(s.outbox.nextDueAt('x')).toBe(5000);
    expect(s.outbox.due('x', 5000, 10).map((r) => [r.ceId, r.attempts])).toEqual([['A/scheduled', 1]]);
    s.outbox.markDelivered([s.outbox.due('x', 5000, 10)[0]!.rowId]);
    expect(s.outbox.due('x', 5000, 10).map((r) => r.ceId)).toEqual(['A/started']);
    s.close();
  });

  it('moves rows to the dead letters with their last error, and replays them', () => {
    const s = Store.open(freshPath());
    s.journal.commit({
      document: fixtureDocument('live-migration-1.json'),
      etag: null,
      observedAt: 't',
      events: [pe('A/scheduled', 'A', ['x', 'y'])],
      now: 1,
    });
    const [row] = s.outbox.due('x', 10, 10);
    s.outbox.deadLetter(row!.rowId, 3, 'HTTP 400', 50);
    expect(s.outbox.deadLetters()).toEqual([
      expect.objectContaining({
        sink: 'x',
        ceId: 'A/scheduled',
        eventId: 'A',
        transition: 'scheduled',
        attempts: 3,
        lastError: 'HTTP 400',
        createdAt: 1,
        deadAt: 50,
      }),
    ]);
    expect(s.outbox.deadLetters('y')).toEqual([]);
    expect(s.outbox.due('x', 10, 10)).toEqual([]);
    expect(s.outbox.replayDeadLetters('x', 60)).toBe(1);
    expect(s.outbox.deadLetters()).toEqual([]);
    expect(s.outbox.due('x', 60, 10).map((r) => [r.ceId, r.attempts])).toEqual([['A/scheduled', 0]]);
    s.close();
  });

  it('dead-letters the rows of a sink that is no longer configured', () => {
    const s = Store.open(freshPath());
    s.journal.commit({
      document: fixtureDocument('live-migration-1.json'),
      etag: null,
      observedAt: 't',
      events: [pe('A/scheduled', 'A', ['gone', 'kept'])],
    });
    expect(s.outbox.sinks().sort()).toEqual(['gone', 'kept']);
    expect(s.outbox.deadLetterSink('gone', 'sink "gone" is no longer configured')).toBe(1);
    expect(s.outbox.sinks()).toEqual(['kept']);
    expect(s.outbox.deadLetters()[0]!.lastError).toMatch(/no longer configured/);
    s.close();
  });

  it('prunes only delivered journal entries older than the retention', () => {
    const s = Store.open(freshPath());
    const doc = fixtureDocument('live-migration-1.json');
    s.journal.commit({
      document: doc,
      etag: null,
      observedAt: 't',
      events: [pe('old/delivered', 'O', ['x']), pe('old/pending', 'P', ['y'])],
      now: 1000,
    });
    s.journal.commit({ document: doc, etag: null, observedAt: 't', events: [pe('new/delivered', 'N', [])], now: 9000 });
    s.outbox.markDelivered(s.outbox.due('x', 10_000, 10).map((r) => r.rowId));
    expect(s.prune(5000, 10_000)).toBe(1);
    expect(s.journal.all().map((j) => j.id)).toEqual(['old/pending', 'new/delivered']);
    s.close();
  });

  it('reports a state directory it cannot create with a clear, typed error', () => {
    const d = tempDir();
    dirs.push(d);
    const file = join(d.path, 'a-file');
    writeFileSync(file, 'not a directory');
    const target = join(file, 'sub', 'state.db');
    let caught: unknown;
    try {
      Store.open(target);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(StoreError);
    expect((caught as StoreError).code).toBe('STORE_OPEN_FAILED');
    expect((caught as StoreError).message).toBe(
      `cannot open state database ${target} (ENOTDIR: a part of ${join(file, 'sub')} is not a directory)`,
    );
  });

  it('refuses a database written by a newer version', () => {
    const path = freshPath();
    Store.open(path).close();
    const db = new DatabaseSync(path);
    db.exec("UPDATE meta SET value = '99' WHERE key = 'schema_version'");
    db.close();
    expect(() => Store.open(path)).toThrow(/schema version 99 is newer/);
  });

  it('folds the preparation results of a schema 6 database into the one preparations table', () => {
    const path = freshPath();
    let s = Store.open(path);
    s.journal.commit({
      document: fixtureDocument('live-migration-1.json'),
      etag: null,
      observedAt: 't',
      events: [pe('E/scheduled', 'E', ['hook'])],
    });
    s.preparations.set('E', 'probe', 'pending', 'draining');
    s.close();
    // the database as schema 6 left it: successes in preparation_results, no ce_id on preparations
    const db = new DatabaseSync(path);
    db.exec(`ALTER TABLE preparations DROP COLUMN ce_id;
      CREATE TABLE preparation_results (event_id TEXT NOT NULL, sink TEXT NOT NULL, ce_id TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (event_id, sink));
      INSERT INTO preparation_results VALUES ('E', 'hook', 'E/scheduled', 5), ('E', 'probe', 'E/scheduled', 6);
      UPDATE meta SET value = '6' WHERE key = 'schema_version';`);
    db.close();
    s = Store.open(path);
    expect(s.preparations.counted('E')).toEqual(new Set(['hook', 'probe']));
    expect(s.preparations.of('E')).toEqual([
      { sink: 'hook', state: 'done', detail: null, at: 5 },
      { sink: 'probe', state: 'pending', detail: 'draining', at: expect.any(Number) },
    ]);
    s.close();
    const after = new DatabaseSync(path);
    const tables = after.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'preparation%'").all();
    const version = after.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get();
    after.close();
    expect(tables).toEqual([{ name: 'preparations' }]);
    expect(version).toEqual({ value: '7' });
  });

  it("counts a preparation's success only while its occurrence is current", () => {
    const s = Store.open(freshPath());
    const doc = fixtureDocument('live-migration-1.json');
    s.journal.commit({ document: doc, etag: null, observedAt: 't', events: [pe('E/scheduled', 'E', ['hook'])] });
    expect(s.preparations.succeeded('E', 'hook', 'E/scheduled', 'ok')).toBe(true);
    expect(s.preparations.counted('E')).toEqual(new Set(['hook']));
    s.journal.commit({ document: doc, etag: null, observedAt: 't', events: [pe('E/canceled', 'E', [], 'canceled')] });
    expect(s.preparations.counted('E')).toEqual(new Set());
    expect(s.preparations.succeeded('E', 'hook', 'E/scheduled', 'late')).toBe(false);
    expect(s.preparations.of('E')).toMatchObject([{ sink: 'hook', state: 'done', detail: 'ok' }]);
    s.close();
  });
});

describe('StateLock', () => {
  it('leaves nothing in the shared temporary folder once released, and the next daemon takes the lock again', () => {
    const dir = tempDir();
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = join(dir.path, 'tmp');
    try {
      const state = join(dir.path, 'state.db');
      const shared = join(dir.path, 'tmp', 'se-bridge-locks');
      const lock = StateLock.acquire(state);
      expect(readdirSync(shared)).toHaveLength(1);
      expect(() => StateLock.acquire(state)).toThrow(/another se-bridge daemon is using the state database/);
      lock.release();
      expect(readdirSync(shared)).toEqual([]);
      StateLock.acquire(state).release();
      expect(readdirSync(shared)).toEqual([]);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
      dir.cleanup();
    }
  });
});
