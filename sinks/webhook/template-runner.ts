/**
 * TemplateRunner evaluates JSONata in a worker thread with a limit on its CPU time and its memory.
 *
 * JSONata's own `timeout` is checked between evaluation steps only, and on the wall clock: one
 * built-in ($match with a catastrophic regular expression, $pad to 200 million characters,
 * $string of a ten-million item range) runs to its end and blocks the thread that runs it for
 * seconds, and a machine busy with other work makes a template that needs 5 ms of CPU take 100 ms.
 * So an expression runs in a worker: the daemon's own thread (IMDS polls, every other sink, the
 * approval server, /livez, the probe, SIGTERM) never runs one. Its limit is the CPU time the
 * worker's thread spends on it (Worker.cpuUsage), not the time that passes: an evaluation that has
 * used its CPU time gets its worker terminated (V8 interrupts even a regular expression that
 * backtracks) and fails for good (TEMPLATE_LIMIT), one that runs out of the worker's heap ends it
 * the same way, and the next evaluation starts a new worker. One that waits WALL_FACTOR times its
 * limit without being given that CPU time is stopped too, as delayed (TEMPLATE_DELAYED): the
 * machine was busy, and its event is tried again. Evaluations go one at a time; each one's limit
 * counts from when the worker takes it.
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
import { cpuSpent, processCpu, type Taken } from './template-cpu.ts';
import { type Bindings, type Evaluated, type Failure, type Reply, type Request, workerMain } from './template-worker.ts';

export type { Bindings, Evaluated, Failure } from './template-worker.ts';

/** The worker's heap (MiB): a template's input is one CloudEvent, its output one request. */
const HEAP_MB = 128;
/** The largest result a template may make (a request body, a URL, a header), in characters of JSON. */
export const MAX_RESULT_CHARS = 1024 * 1024;
/** How much CPU time parsing one expression may take. */
const COMPILE_CPU_MS = 5000;
/** How long a new worker may take to load jsonata before the evaluation is tried again. */
const START_DEADLINE_MS = 15_000;
/** How many times its limit of CPU time an evaluation may wait to be given it (at least MIN_WAIT_MS) before it is stopped as delayed. */
const WALL_FACTOR = 50;
const MIN_WAIT_MS = 5000;
/** The shortest wait between two looks at an evaluation's CPU time. */
const MIN_LOOK_MS = 5;

interface Job {
  readonly request: Request;
  /** The CPU time the worker may spend on it. */
  readonly cpuMs: number;
  readonly resolve: (r: Evaluated[]) => void;
}

interface Current extends Taken {
  readonly job: Job;
  readonly seq: number;
  /** When it was posted to the worker (performance.now()). */
  readonly posted: number;
  timer: NodeJS.Timeout | undefined;
}

class TemplateRunner {
  #worker: Worker | null = null;
  #ready = false;
  readonly #queue: Job[] = [];
  #current: Current | null = null;
  #seq = 0;
  #nextId = 1;
  /** Every compiled expression, so that a new worker can compile them again. */
  readonly #compiled = new Map<number, { text: string; stack: number }>();
  #users = 0;

  /** compile registers an expression; its failure (a syntax error) comes back in JSONata's words. */
  async compile(text: string, stack: number): Promise<{ id: number } | { failure: Failure }> {
    const id = this.#nextId++;
    this.#users += 1;
    const [r] = await this.#run({ op: 'compile', seq: 0, id, text, stack }, COMPILE_CPU_MS);
    if (!r!.ok) {
      this.release();
      return { failure: r!.failure };
    }
    this.#compiled.set(id, { text, stack });
    return { id };
  }

  /**
   * evaluate runs expressions on several inputs (each its own bindings) in one trip to the
   * worker, `cpuMs` of CPU time for each input: one result per input, one per expression within
   * it. When the worker is stopped at its limit during a trip of several, each input is evaluated
   * again alone, so that only the one that ran away fails.
   */
  async evaluate(ids: readonly number[], items: readonly { input: unknown; bindings: Bindings }[], cpuMs: number): Promise<Evaluated[][]> {
    const flat = await this.#run({ op: 'evaluate', seq: 0, ids, items }, cpuMs * items.length);
    if (items.length > 1 && flat.some((r) => !r.ok && r.failure.code === 'TEMPLATE_LIMIT' && r.failure.stopped === true)) {
      return Promise.all(items.map(async (item) => (await this.evaluate(ids, [item], cpuMs))[0]!));
    }
    return items.map((_, i) => flat.slice(i * ids.length, (i + 1) * ids.length));
  }

  /** release drops one user's hold; the worker stops with the last. */
  release(id?: number): void {
    if (id !== undefined) this.#compiled.delete(id);
    this.#users = Math.max(0, this.#users - 1);
    if (this.#users === 0 && this.#queue.length === 0 && this.#current === null) this.#stop();
  }

  #run(request: Request, cpuMs: number): Promise<Evaluated[]> {
    return new Promise((resolve) => {
      this.#queue.push({ request, cpuMs, resolve });
      this.#next();
    });
  }

  #next(): void {
    if (this.#current !== null || this.#queue.length === 0) return;
    const worker = this.#start();
    if (!this.#ready) return;
    const job = this.#queue.shift()!;
    const current: Current = { job, seq: ++this.#seq, posted: performance.now(), process: processCpu(), took: undefined, timer: undefined };
    this.#current = current;
    // the process waits for an evaluation under way (an idle worker never holds it)
    worker.ref();
    worker.postMessage({ ...job.request, seq: current.seq });
    current.timer = setTimeout(() => void this.#look(current, worker), job.cpuMs);
  }

  /**
   * look stops the job once the worker has spent its CPU time on it (it runs away: final), or
   * once it has waited WALL_FACTOR times that long without being given it (the machine is busy:
   * tried again); else it looks again when the rest of its CPU time could be spent. A CPU time
   * is never more than the time that passed, so no look comes before the job could be over.
   */
  async #look(current: Current, worker: Worker): Promise<void> {
    const { cpuMs } = current.job;
    const used = await cpuSpent(current, worker, MIN_WAIT_MS);
    if (this.#current !== current) return;
    const waited = performance.now() - current.posted;
    if (used === null)
      return this.#fail(limitFailure(`did not let its worker say its CPU time for ${MIN_WAIT_MS / 1000} s and was stopped`));
    if (used >= cpuMs) return this.#fail(limitFailure(`ran for more than ${cpuMs} ms of CPU time and was stopped`));
    if (waited >= Math.max(cpuMs * WALL_FACTOR, MIN_WAIT_MS))
      return this.#fail(
        delayedFailure(`was given ${Math.round(used)} of its ${cpuMs} ms of CPU time in ${(waited / 1000).toFixed(1)} s (a busy machine)`),
      );
    current.timer = setTimeout(() => void this.#look(current, worker), Math.max(MIN_LOOK_MS, cpuMs - used));
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
    const startTimer = setTimeout(
      () => this.#fail(delayedFailure(`could not start its worker within ${START_DEADLINE_MS / 1000} s (a busy machine)`)),
      START_DEADLINE_MS,
    );
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
      if (cur === null || m.seq !== cur.seq) return;
      // the worker's own reading of its CPU time as it took the job
      if ('took' in m) return void (cur.took = m.took);
      clearTimeout(cur.timer);
      this.#current = null;
      worker.unref();
      cur.job.resolve(m.results);
      this.#next();
    });
    worker.on('error', (err: Error & { code?: string }) => {
      if (worker !== this.#worker) return;
      clearTimeout(startTimer);
      this.#fail(
        limitFailure(
          err.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? `ran out of memory (the limit is ${HEAP_MB} MiB) and was stopped`
            : `failed: ${err.message}`,
        ),
      );
    });
    worker.on('exit', () => {
      if (worker !== this.#worker) return;
      clearTimeout(startTimer);
      this.#fail(limitFailure('stopped unexpectedly'));
    });
    // after the listeners, which would hold the process open again: the worker never keeps it alive
    worker.unref();
    return worker;
  }

  /** fail answers the evaluation under way (or every waiting one when the worker never started) and drops the worker. */
  #fail(failure: Evaluated): void {
    const worker = this.#worker;
    this.#worker = null;
    this.#ready = false;
    if (worker !== null) void worker.terminate();
    const cur = this.#current;
    this.#current = null;
    if (cur !== null) {
      clearTimeout(cur.timer);
      cur.job.resolve(resultsOf(cur.job.request, failure));
    } else {
      for (const job of this.#queue.splice(0)) job.resolve(resultsOf(job.request, failure));
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

/** limitFailure: the template ran past a limit (its CPU time, its memory) and was stopped: it would again. */
const limitFailure = (message: string): Evaluated => ({
  ok: false,
  failure: { message, position: null, code: 'TEMPLATE_LIMIT', stopped: true },
});
/** delayedFailure: the template was stopped before it was given its CPU time (the machine is busy): it may pass when tried again. */
const delayedFailure = (message: string): Evaluated => ({
  ok: false,
  failure: { message, position: null, code: 'TEMPLATE_DELAYED', stopped: true },
});
const resultsOf = (r: Request, one: Evaluated): Evaluated[] => (r.op === 'compile' ? [one] : r.items.flatMap(() => r.ids.map(() => one)));

/** The process's one runner. */
export const runner = new TemplateRunner();
