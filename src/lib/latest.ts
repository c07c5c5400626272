/**
 * Latest runs one piece of work at a time over the newest input: an input that arrives while the
 * work runs is kept (only the newest of them) and run next; the callers of both wait for it. For
 * a reader that must follow a document, where an old document run late would undo a newer one.
 */
export class Latest<T> {
  readonly #work: (input: T) => Promise<void>;
  #running: Promise<void> | null = null;
  #next: T | null = null;

  constructor(work: (input: T) => Promise<void>) {
    this.#work = work;
  }

  /** run runs the work on `input` now, or after the run under way when one is (the newest input only). */
  run(input: T): Promise<void> {
    if (this.#running !== null) {
      this.#next = input;
      return this.#running;
    }
    this.#running = (async () => {
      for (let next: T | null = input; next !== null; next = this.#next) {
        this.#next = null;
        await this.#work(next);
      }
    })().finally(() => {
      this.#running = null;
    });
    return this.#running;
  }
}
