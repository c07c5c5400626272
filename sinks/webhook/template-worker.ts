/**
 * The template worker's program and the messages it speaks (template-runner.ts starts it and
 * keeps its deadlines).
 */
// the worker requires jsonata itself (workerMain); this names what it gets
import type jsonataFn from 'jsonata';

/** What a template may read besides the event: the helpers' values for this event. */
export type Bindings = Readonly<Record<string, string | null>>;

export type Failure = {
  readonly message: string;
  readonly position: number | null;
  /** JSONata's error code (D1011: its recursion limit), TEMPLATE_LIMIT for the CPU time, the memory or a size limit, TEMPLATE_DELAYED for CPU time not given in time (a busy machine). */
  readonly code: string | null;
  /** The worker was stopped (its CPU time, its memory, a busy machine) while it evaluated this, with others. */
  readonly stopped?: boolean;
};
export type Evaluated = { readonly ok: true; readonly json: string | null } | { readonly ok: false; readonly failure: Failure };

export type Request =
  | { op: 'compile'; seq: number; id: number; text: string; stack: number }
  | { op: 'evaluate'; seq: number; ids: readonly number[]; items: readonly { input: unknown; bindings: Bindings }[] };
/** A job's results; before them, the worker thread's CPU time (µs) as it took the job (null: it cannot read it); `ready` once jsonata is loaded. */
export type Reply = { seq: number; results: Evaluated[] } | { seq: number; took: number | null } | { ready: true };

/**
 * workerMain is the worker's whole program. It is sent to the worker as source text
 * (`eval: true`), so it uses nothing from outside itself: built-in modules come through
 * `process.getBuiltinModule`, and jsonata from the package next to this file or, inside the
 * single executable, from its `templates.cjs` asset (scripts/build-binary.ts).
 */
export function workerMain(): void {
  type Expr = {
    evaluate(input: unknown, bindings: Record<string, () => unknown>): Promise<unknown>;
    registerFunction(name: string, f: (...args: unknown[]) => unknown, signature: string): void;
  };
  type Compile = (text: string, options: Parameters<typeof jsonataFn>[1]) => Expr;
  const builtin = process.getBuiltinModule;
  const { parentPort, workerData } = builtin('node:worker_threads');
  if (parentPort === null) throw new Error('the template worker runs in a worker thread');
  const port = parentPort;
  const sea = builtin('node:sea');
  const data = workerData as { from: string; maxChars: number };
  let jsonata: Compile;
  if (sea.isSea()) {
    const module = { exports: {} as { jsonata: Compile } };
    builtin('node:vm').compileFunction(sea.getAsset('templates.cjs', 'utf8'), ['exports', 'require', 'module'], {
      filename: 'templates.cjs',
    })(module.exports, builtin, module);
    jsonata = module.exports.jsonata;
  } else {
    const loaded = builtin('node:module').createRequire(data.from)('jsonata') as Compile | { default: Compile };
    jsonata = typeof loaded === 'function' ? loaded : loaded.default;
  }
  type Fn = { implementation: (...args: unknown[]) => unknown };
  const limit = (message: string) => Object.assign(new Error(message), { code: 'TEMPLATE_LIMIT' });
  /** size: about how many characters of JSON `v` makes, counted until `max` is passed. */
  const size = (v: unknown, max: number): number => {
    let n = 0;
    const todo: unknown[] = [v];
    while (todo.length > 0 && n <= max) {
      const x = todo.pop();
      if (typeof x === 'string') n += x.length + 2;
      else if (typeof x === 'number') n += 24;
      else if (Array.isArray(x)) {
        n += 1 + x.length;
        for (let i = 0; i < x.length && n <= max; i++) todo.push(x[i]);
      } else if (x !== null && typeof x === 'object') {
        for (const [k, y] of Object.entries(x)) {
          n += k.length + 4;
          todo.push(y);
          if (n > max) break;
        }
      } else n += 5;
    }
    return n;
  };
  const max = data.maxChars;
  const tooBig = (what: string) => limit(`${what} would make more than ${max} characters`);
  // the originals, as JSONata binds them (a registered function of the same name shadows them)
  const original = new Map<string, Promise<Fn>>();
  const builtinFn = (name: string) => {
    let fn = original.get(name);
    if (fn === undefined) {
      fn = jsonata(`$${name}`, { timeout: 1000, stack: 10 }).evaluate(null, {}) as Promise<Fn>;
      original.set(name, fn);
    }
    return fn;
  };
  const guarded: [string, string, (...a: unknown[]) => string | null][] = [
    ['pad', '<s-ns?:s>', (_s, width) => (Math.abs(Number(width)) > max ? '$pad' : null)],
    ['string', '<x-b?:s>', (v, pretty) => (size(v, max) * (pretty === true ? 4 : 1) > max ? '$string' : null)],
    [
      'join',
      '<a<s>s?:s>',
      (a, sep) => (Array.isArray(a) && size(a, max) + a.length * (typeof sep === 'string' ? sep.length : 0) > max ? '$join' : null),
    ],
  ];
  const exprs = new Map<number, Expr>();
  const failure = (err: unknown) => {
    const e = err as { message?: unknown; position?: unknown; code?: unknown };
    return {
      ok: false,
      failure: {
        message: typeof e.message === 'string' ? e.message : String(err),
        position: typeof e.position === 'number' ? e.position : null,
        code: typeof e.code === 'string' ? e.code : null,
      },
    };
  };
  const threadCpu = () => {
    const u = typeof process.threadCpuUsage === 'function' ? process.threadCpuUsage() : null;
    return u === null ? null : u.user + u.system;
  };
  port.on('message', (m: Request) => {
    // the runner counts the CPU time from here (template-cpu.ts)
    if (m.seq > 0) port.postMessage({ seq: m.seq, took: threadCpu() });
    if (m.op === 'compile') {
      try {
        // no timeout of JSONata's own: it counts the wall clock; the runner counts the CPU time
        const expr = jsonata(m.text, { stack: m.stack });
        for (const [name, signature, check] of guarded) {
          expr.registerFunction(
            name,
            async (...args: unknown[]) => {
              const refused = check(...args);
              if (refused !== null) throw tooBig(refused);
              return (await builtinFn(name)).implementation(...args);
            },
            signature,
          );
        }
        exprs.set(m.id, expr);
        port.postMessage({ seq: m.seq, results: [{ ok: true, json: null }] });
      } catch (err) {
        port.postMessage({ seq: m.seq, results: [failure(err)] });
      }
      return;
    }
    void (async () => {
      const results = [];
      for (const item of m.items) {
        const bindings = Object.fromEntries(Object.entries(item.bindings).map(([k, v]) => [k, () => v]));
        for (const id of m.ids) {
          try {
            const expr = exprs.get(id);
            if (expr === undefined) throw new Error(`no template ${id} was compiled`);
            const out = await expr.evaluate(item.input, bindings);
            if (size(out, max) > max) throw tooBig('its result');
            results.push({ ok: true, json: out === undefined ? null : (JSON.stringify(out) ?? null) });
          } catch (err) {
            results.push(failure(err));
          }
        }
      }
      port.postMessage({ seq: m.seq, results });
    })();
  });
  port.postMessage({ ready: true });
}
