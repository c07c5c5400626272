/**
 * ReadBroadcast tells the sinks that follow IMDS (the probe) about every successful read. A
 * listener that throws is logged and never stops the poll loop.
 */
import type { Logger } from 'pino';
import { errorFields } from '../lib/errors.ts';
import type { ImdsRead, ImdsReads } from '../sinks/contract.ts';

export class ReadBroadcast implements ImdsReads {
  readonly #listeners = new Set<(read: ImdsRead) => void>();
  readonly #logger: Logger;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  #last: ImdsRead | null = null;

  last(): ImdsRead | null {
    return this.#last;
  }

  subscribe(listener: (read: ImdsRead) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  publish(read: ImdsRead): void {
    this.#last = read;
    for (const listener of this.#listeners) {
      try {
        listener(read);
      } catch (err) {
        this.#logger.error({ ...errorFields(err) }, 'a sink failed to follow an IMDS read');
      }
    }
  }
}
