/**
 * Every failure of the store reaches its caller as a StoreError with a stable code, reads and
 * writes alike, whichever part of the store it comes from: the poll loop and the dispatcher
 * tell "the state database failed" from everything else by that class alone.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Store, StoreError } from '../../src/store/store.ts';
import { tempDir } from '../helpers.ts';

let dir: ReturnType<typeof tempDir>;
afterEach(() => dir.cleanup());

function failure(fn: () => unknown): StoreError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(StoreError);
    return err as StoreError;
  }
  throw new Error('expected a StoreError, got no error');
}

describe('store failures', () => {
  it("are StoreErrors from every part of the store, with SQLite's reason, once the database is unusable", () => {
    dir = tempDir();
    const path = join(dir.path, 'state.db');
    const store = Store.open(path);
    store.close();
    const writes = [
      () => store.journal.saveEtag('"e"'),
      () => store.outbox.reschedule(1, 1, 0, 'x'),
      () => store.preparations.succeeded('E', 'hook', 'E/scheduled', null),
      () => store.replay.spendToken('k', 1000),
      () => store.sinkStates.of('slack').set('k', 'v'),
      () =>
        store.journal.commit({ document: { incarnation: 1, events: [] }, etag: null, observedAt: new Date(0).toISOString(), events: [] }),
      () => store.outbox.markDelivered([1]),
      () => store.prune(1000),
    ];
    for (const w of writes) {
      const e = failure(w);
      expect(e.code).toBe('STORE_WRITE_FAILED');
      expect(e.message).toContain(`state database ${path}`);
      expect(e.cause).toBeDefined();
    }
    const reads = [
      () => store.outbox.due('hook', Date.now(), 10),
      () => store.approvals.of('E'),
      () => store.replay.tokenSpent('k'),
      () => store.sinkStates.of('slack').get('k'),
      () => store.journal.priorOccurrences('E/scheduled'),
    ];
    for (const r of reads) expect(failure(r).code).toBe('STORE_READ_FAILED');
  });
});
