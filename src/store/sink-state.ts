/** SinkStates: each sink's small key-value memory (Slack message ids), kept across restarts and pruned with the journal. */
import type { Db } from './db.ts';

/** One sink's memory (the shape of SinkState in the sink contract). */
export interface KeyValue {
  get(key: string): string | undefined;
  set(key: string, value: string): void;
}

export class SinkStates {
  readonly #s;

  constructor(db: Db) {
    this.#s = {
      get: db.prepare('SELECT value FROM sink_state WHERE sink = ? AND key = ?'),
      set: db.prepare(
        'INSERT INTO sink_state (sink, key, value, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (sink, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at',
      ),
      prune: db.prepare('DELETE FROM sink_state WHERE updated_at < ?'),
    };
  }

  /** of is the key-value memory of one sink. */
  of(sink: string): KeyValue {
    return {
      get: (key) => this.#s.get.get<{ value: string }>(sink, key)?.value,
      set: (key, value) => void this.#s.set.run(sink, key, value, Date.now()),
    };
  }

  prune(before: number): void {
    this.#s.prune.run(before);
  }
}
