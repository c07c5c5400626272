/**
 * TemplateRunner evaluates JSONata in a worker thread with a hard deadline and a memory limit.
 *
 * JSONata's own `timeout` is checked between evaluation steps only: one built-in ($match with a
 * catastrophic regular expression, $pad to 200 million characters, $string of a ten-million item
 * range) runs to its end and blocks the thread that runs it for seconds. Here that thread is a
 * worker: the daemon's own thread (IMDS polls, every other sink, the approval server, /livez, the
 * probe, SIGTERM) never runs an expression. An evaluation that has not answered by its deadline
 * gets its worker terminated (V8 interrupts even a regular expression that backtracks), one that
 * runs out of the worker's heap ends it the same way, and the next evaluation starts a new
 * worker. Evaluations go one at a time; each one's deadline starts when the worker takes it.
 *
 * A heap limit stops a template that grows its memory step by step, but not one call of a
 * built-in that makes a huge string at once (V8 gives a worker past its limit only 16 MiB more,
 * then ends the whole process). So the built-ins that do that ($pad, $string, $join), and the
 * result itself, are measured first, by a walk that stops at the limit, and refused past
 * `MAX_RESULT_CHARS`.
 *
 * One runner serves the whole process (every webhook sink, `validate`, `template test`) and
 * stops its worker when the last template is closed. jsonata loads in the worker only.
 */
import { Worker } from 'node:worker_threads';
import { type Bindings, type Evaluated, type Failure, type Reply, type Request, workerMain } from './template-worker.ts';

export type { Bindings, Evaluated, Failure } from './template-worker.ts';

/** The worker's heap (MiB): a template's input is one CloudEvent, its output one request. */
const HEAP_MB = 128;
/** The largest result a template may make (a request body, a URL, a header), in characters of JSON. */
export const MAX_RESULT_CHARS = 1024 * 1024;
/** How long parsing one expression may take. */
const COMPILE_DEADLINE_MS = 5000;
/** How long a new worker may take to load jsonata before the evaluation fails. */
const START_DEADLINE_MS = 15_000;

interface Job {
  readonly request: Request;
  readonly deadlineMs: number;
  readonly resolve: (r: Evaluated[]) => void;
}

class TemplateRunner {
  #worker: Worker | null = null;
  #ready = false;
  readonly #queue: Job[] = [];
  #current: { job: Job; timer: NodeJS.Timeout } | null = null;
  #seq = 0;
  #nextId = 1;
  /** Every compiled expression, so that a new worker can compile them again. */
  readonly #compiled = new Map<number, { text: string; timeoutMs: number; stack: number }>();
  #users = 0;

  /** compile registers an expression; its failure (a syntax error) comes back in JSONata's words. */
  async compile(text: string, timeoutMs: number, stack: number): Promise<{ id: number } | { failure: Failure }> {
    const id = this.#nextId++;
    this.#users += 1;
    const [r] = await this.#run({ op: 'compile', seq: 0, id, text, timeoutMs, stack }, COMPILE_DEADLINE_MS);
    if (!r!.ok) {
      this.release();
      return { failure: r!.failure };
    }
    this.#compiled.set(id, { text, timeoutMs, stack });
    return { id };
  }

  /**
   * evaluate runs expressions on several inputs (each its own bindings) in one trip to the
   * worker, `deadlineMs` for each input: one result per input, one per expression within it.
   * When the worker is stopped during a trip of several, each input is evaluated again alone,
   * so that only the one that ran away fails.
   */
  async evaluate(
    ids: readonly number[],
    items: readonly { input: unknown; bindings: Bindings }[],
    deadlineMs: number,
  ): Promise<Evaluated[][]> {
    const flat = await this.#run({ op: 'evaluate', seq: 0, ids, items }, deadlineMs * items.length);
    if (items.length > 1 && flat.some((r) => !r.ok && r.failure.stopped === true)) {
      return Promise.all(items.map(async (item) => (await this.evaluate(ids, [item], deadlineMs))[0]!));
    }
    return items.map((_, i) => flat.slice(i * ids.length, (i + 1) * ids.length));
  }

  /** release drops one user's hold; the worker stops with the last. */
  release(id?: number): void {
    if (id !== undefined) this.#compiled.delete(id);
    this.#users = Math.max(0, this.#users - 1);
    if (this.#users === 0 && this.#queue.length === 0 && this.#current === null) this.#stop();
  }

  #run(request: Request, deadlineMs: number): Promise<Evaluated[]> {
    return new Promise((resolve) => {
      this.#queue.push({ request, deadlineMs, resolve });
      this.#next();
    });
  }

  #next(): void {
    if (this.#current !== null || this.#queue.length === 0) return;
    const worker = this.#start();
    if (!this.#ready) return;
    const job = this.#queue.shift()!;
    const seq = ++this.#seq;
    const timer = setTimeout(() => this.#fail(`ran longer than ${job.deadlineMs} ms and was stopped`), job.deadlineMs);
    this.#current = { job, timer };
    worker.postMessage({ ...job.request, seq });
  }

  /** start gives the worker, starting one (and compiling every expression again) when there is none. */
  #start(): Worker {
    if (this.#worker !== null) return this.#worker;
    const worker = new Worker(`(${workerMain.toString()})()`, {
      eval: true,
      workerData: { from: import.meta.url, maxChars: MAX_RESULT_CHARS },
      resourceLimits: { maxOldGenerationSizeMb: HEAP_MB, maxYoungGenerationSizeMb: 8, stackSizeMb: 4 },
    });
    this.#worker = worker;
    this.#ready = false;
    const startTimer = setTimeout(() => this.#fail('could not start the template worker in time'), START_DEADLINE_MS);
    worker.on('message', (m: Reply) => {
      if (worker !== this.#worker) return;
      if ('ready' in m) {
        clearTimeout(startTimer);
        this.#ready = true;
        // a new worker compiles every live expression first, in the order they came
        for (const [id, c] of this.#compiled) worker.postMessage({ op: 'compile', seq: -1, id, ...c });
        this.#next();
        return;
      }
      const cur = this.#current;
      if (cur === null || m.seq !== this.#seq) return;
      clearTimeout(cur.timer);
      this.#current = null;
      cur.job.resolve(m.results);
      this.#next();
    });
    worker.on('error', (err: Error & { code?: string }) => {
      if (worker !== this.#worker) return;
      clearTimeout(startTimer);
      this.#fail(
        err.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? `ran out of memory (the limit is ${HEAP_MB} MiB) and was stopped`
          : `failed: ${err.message}`,
      );
    });
    worker.on('exit', () => {
      if (worker !== this.#worker) return;
      clearTimeout(startTimer);
      this.#fail('stopped unexpectedly');
    });
    // after the listeners, which would hold the process open again: the worker never keeps it alive
    worker.unref();
    return worker;
  }

  /** fail answers the evaluation under way (or every waiting one when the worker never started) and drops the worker. */
  #fail(why: string): void {
    const worker = this.#worker;
    this.#worker = null;
    this.#ready = false;
    if (worker !== null) void worker.terminate();
    const cur = this.#current;
    this.#current = null;
    if (cur !== null) {
      clearTimeout(cur.timer);
      cur.job.resolve(resultsOf(cur.job.request, limitFailure(why)));
    } else {
      for (const job of this.#queue.splice(0)) job.resolve(resultsOf(job.request, limitFailure(why)));
    }
    if (this.#users > 0 || this.#queue.length > 0) setImmediate(() => this.#next());
  }

  #stop(): void {
    const worker = this.#worker;
    this.#worker = null;
    this.#ready = false;
    if (worker !== null) void worker.terminate();
  }
}

const limitFailure = (message: string): Evaluated => ({
  ok: false,
  failure: { message, position: null, code: 'TEMPLATE_LIMIT', stopped: true },
});
const resultsOf = (r: Request, one: Evaluated): Evaluated[] => (r.op === 'compile' ? [one] : r.items.flatMap(() => r.ids.map(() => one)));

/** The process's one runner. */
export const runner = new TemplateRunner();
