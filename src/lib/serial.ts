/** Serial runs work one piece at a time, in the order given; a piece that fails does not stop those after it. */
export class Serial {
  #last: Promise<unknown> = Promise.resolve();

  run<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#last.then(work, work);
    this.#last = run.catch(() => undefined);
    return run;
  }
}
