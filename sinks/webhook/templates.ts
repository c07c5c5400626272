/**
 * Payload templates: JSONata expressions (jsonata.org) that shape a webhook's body, URL and
 * headers from the CloudEvent, so any JSON API can be fed without code. JSONata is declarative
 * and has no access to the process: no file, no network, no environment. A sink's templates are
 * compiled once at `create`, rendered per event into a request (body, URL, headers), and
 * compiled at `validate`, so one that does not compile is a configuration problem that names its
 * key and position. A sink without templates renders each event to the plain request.
 *
 * The input is the CloudEvent in its JSON format (`id`, `type`, `source`, `subject`, `time`,
 * `data`, ...). Every expression can call the helpers the chat sinks use, bound to the event:
 * `$summary()` (the stdout sink's line), `$headline()` ("web-vm-0 will be rebooted"),
 * `$countdown()` (time left until NotBefore when the change was seen, or null) and
 * `$approvalUrl()` (the signed approval link, or null), plus `$transition()`.
 *
 * An evaluation runs in a worker thread (template-runner.ts) with a limit on its CPU time
 * (`templateTimeoutMs`, 100 ms unless configured), a 128 MiB heap and a bounded stack: past any
 * of them it is stopped and fails like any evaluation error, and the daemon's own thread never
 * waits on it. One that a busy machine did not give its CPU time in time is stopped too, and its
 * event is tried again (a retry, TEMPLATE_DELAYED), never dead-lettered for it. jsonata loads in
 * that worker on the first compile, so a bridge without templates never holds it.
 */
import { BridgeError, type BridgeEvent, deliveredWith, type Outcome, reject, retry, transitionOf } from '../../src/api.ts';
import { formatEventLine, toChatMessage } from '../../src/kit.ts';
import { headerValueProblem, renderedUrl } from './request-checks.ts';
import { type Failure, runner } from './template-runner.ts';

/** How long one evaluation may run unless the sink says otherwise. */
export const TEMPLATE_TIMEOUT_MS = 100;
/** How deep an evaluation may recurse. */
const TEMPLATE_STACK = 500;

/** An expression that does not compile or fails on an event, in JSONata's words. */
export class TemplateError extends BridgeError<'TEMPLATE_FAILED'> {
  readonly position: number | null;
  /** It ran past a limit (CPU time, memory, recursion, result size) and was stopped. */
  readonly limit: boolean;
  /** It was stopped before it was given its CPU time (a busy machine): it may pass when tried again. */
  readonly delayed: boolean;
  constructor(message: string, position: number | null, limit = false, delayed = false) {
    super('TEMPLATE_FAILED', message);
    this.position = position;
    this.limit = limit;
    this.delayed = delayed;
  }
  get described(): string {
    return this.position === null ? this.message : `${this.message} at position ${this.position}`;
  }
}

function templateError(f: Failure): TemplateError {
  if (f.code === 'TEMPLATE_LIMIT') return new TemplateError(`the template ${f.message}`, null, true);
  if (f.code === 'TEMPLATE_DELAYED') return new TemplateError(`the template ${f.message}`, null, false, true);
  if (f.code === 'D1011')
    return new TemplateError(`the template recursed deeper than ${TEMPLATE_STACK} levels and was stopped`, null, true);
  return new TemplateError(f.message, f.position);
}

/** What a template may call, bound to one event. */
export interface TemplateContext {
  /** The signed approval link for the event, or null. */
  approvalUrl(event: BridgeEvent): string | null;
}

/** The helpers an expression names, so that only those are worked out for each event. */
const HELPERS = ['summary', 'headline', 'countdown', 'approvalUrl', 'transition'] as const;

export class Template {
  readonly #id: number;
  readonly #timeoutMs: number;
  readonly #helpers: readonly (typeof HELPERS)[number][];

  private constructor(id: number, timeoutMs: number, text: string) {
    this.#id = id;
    this.#timeoutMs = timeoutMs;
    this.#helpers = HELPERS.filter((h) => text.includes(`$${h}`));
  }

  /** compile parses an expression; a TemplateError says what is wrong and where. Close it when done. */
  static async compile(text: string, timeoutMs: number = TEMPLATE_TIMEOUT_MS): Promise<Template> {
    const r = await runner.compile(text, TEMPLATE_STACK);
    if ('failure' in r) throw templateError(r.failure);
    return new Template(r.id, timeoutMs, text);
  }

  /**
   * renderAll evaluates templates on events, each event within its own deadline (the first
   * template's), in one trip to the worker: per event, per template, a plain JSON value (null
   * for no result) or the TemplateError it failed with.
   */
  static async renderAll(
    templates: readonly Template[],
    events: readonly BridgeEvent[],
    context: TemplateContext,
  ): Promise<(unknown | TemplateError)[][]> {
    if (templates.length === 0 || events.length === 0) return events.map(() => []);
    const wanted = new Set(templates.flatMap((t) => t.#helpers));
    const items = events.map((event) => {
      let chat: ReturnType<typeof toChatMessage> | null = null;
      const message = () => (chat ??= toChatMessage(event));
      const values: Record<(typeof HELPERS)[number], () => string | null> = {
        summary: () => formatEventLine(event),
        headline: () => message().title,
        countdown: () => message().notBefore?.timeLeft ?? null,
        approvalUrl: () => context.approvalUrl(event),
        transition: () => transitionOf(event),
      };
      const bindings: Record<string, string | null> = {};
      for (const h of wanted) bindings[h] = values[h]();
      return { input: event, bindings };
    });
    const timeoutMs = templates[0]!.#timeoutMs;
    const results = await runner.evaluate(
      templates.map((t) => t.#id),
      items,
      timeoutMs,
    );
    return results.map((one) =>
      one.map((r) => (r.ok ? (r.json === null ? null : (JSON.parse(r.json) as unknown)) : templateError(r.failure))),
    );
  }

  /** render evaluates the expression for one event; `undefined` (no result) comes back as null. */
  async render(event: BridgeEvent, context: TemplateContext): Promise<unknown> {
    const [r] = (await Template.renderAll([this], [event], context))[0]!;
    if (r instanceof TemplateError) throw r;
    return r;
  }
  close(): void {
    runner.release(this.#id);
  }
}

export interface TemplateKeys {
  readonly url: string;
  readonly template?: string | undefined;
  readonly urlTemplate?: string | undefined;
  readonly headerTemplates?: Readonly<Record<string, string>> | undefined;
  /** How long rendering one event's request may take. */
  readonly templateTimeoutMs?: number | undefined;
}

export interface Templates {
  readonly body: Template | null;
  readonly url: Template | null;
  readonly headers: readonly (readonly [string, Template])[];
}

/** What a template made of one event: a request to send (a body of null: the CloudEvents binding's), or already an outcome. */
export type Rendered =
  | { readonly outcome: Outcome; readonly limit?: { readonly key: string; readonly message: string } }
  | { readonly body: string | null; readonly url: string; readonly headers: Readonly<Record<string, string>> };

export const SKIPPED = 'skipped: the template gave null';

/** templatesOf compiles a sink's templates, or gives null when it has none. */
export async function templatesOf(c: TemplateKeys): Promise<Templates | null> {
  if (c.template === undefined && c.urlTemplate === undefined && c.headerTemplates === undefined) return null;
  const ms = c.templateTimeoutMs;
  return {
    body: c.template === undefined ? null : await Template.compile(c.template, ms),
    url: c.urlTemplate === undefined ? null : await Template.compile(c.urlTemplate, ms),
    headers: await Promise.all(
      Object.entries(c.headerTemplates ?? {}).map(async ([name, text]) => [name, await Template.compile(text, ms)] as const),
    ),
  };
}

/** closeTemplates lets the template worker go once no sink needs it. */
export function closeTemplates(t: Templates | null): void {
  if (t === null) return;
  for (const x of [t.body, t.url, ...t.headers.map(([, h]) => h)]) x?.close();
}

/** templateProblems compiles the templates of one webhook sink's raw configuration, each problem by its key. */
export async function templateProblems(s: Readonly<Record<string, unknown>>): Promise<string[]> {
  const problems: string[] = [];
  const headers = s.headerTemplates !== null && typeof s.headerTemplates === 'object' ? s.headerTemplates : {};
  const each: [string, unknown][] = [
    ['template', s.template],
    ['urlTemplate', s.urlTemplate],
    ...Object.entries(headers).map(([h, v]) => [`headerTemplates.${h}`, v] as [string, unknown]),
  ];
  for (const [key, text] of each) {
    if (typeof text !== 'string' || text === '') continue;
    try {
      (await Template.compile(text)).close();
    } catch (err) {
      if (!(err instanceof TemplateError)) throw err;
      problems.push(`${key}: ${err.described}`);
    }
  }
  return problems;
}

/** renderRequest renders one event's request (renderRequests). */
export async function renderRequest(
  t: Templates,
  c: TemplateKeys,
  event: BridgeEvent,
  approvalUrl: (e: BridgeEvent) => string | null,
): Promise<Rendered> {
  return (await renderRequests(t, c, [event], approvalUrl))[0]!;
}

/**
 * renderRequests renders the requests of several events in one trip to the template worker, one
 * Rendered each. Without templates (`t` null) each event's request is the plain one: the sink's
 * URL, no extra headers, and the CloudEvents binding's body (null).
 */
export async function renderRequests(
  t: Templates | null,
  c: TemplateKeys,
  events: readonly BridgeEvent[],
  approvalUrl: (e: BridgeEvent) => string | null,
): Promise<Rendered[]> {
  if (t === null) return events.map(() => ({ body: null, url: c.url, headers: {} }));
  const all = [...(t.body === null ? [] : [t.body]), ...(t.url === null ? [] : [t.url]), ...t.headers.map(([, h]) => h)];
  const where = [
    ...(t.body === null ? [] : ['template']),
    ...(t.url === null ? [] : ['urlTemplate']),
    ...t.headers.map(([name]) => `headerTemplates.${name}`),
  ];
  const rendered = await Template.renderAll(all, events, { approvalUrl });
  return rendered.map((results) => requestOf(t, c, results, where));
}

/** requestOf makes one event's request of what its templates gave. */
function requestOf(t: Templates, c: TemplateKeys, results: readonly unknown[], where: readonly string[]): Rendered {
  let i = 0;
  try {
    let body: string | null = null;
    if (t.body !== null) {
      const made = value(results[i]);
      if (made === null) return { outcome: deliveredWith(SKIPPED) };
      body = typeof made === 'string' ? made : JSON.stringify(made);
      i += 1;
    }
    let url = c.url;
    if (t.url !== null) {
      url = urlOf(value(results[i]), c.url);
      i += 1;
    }
    const headers: Record<string, string> = {};
    for (const [name] of t.headers) {
      const v = value(results[i]);
      if (v !== null) {
        const text = typeof v === 'string' ? v : JSON.stringify(v);
        const problem = headerValueProblem(text);
        if (problem !== null) throw new TemplateError(problem, null);
        headers[name] = text;
      }
      i += 1;
    }
    return { body, url, headers };
  } catch (err) {
    if (!(err instanceof TemplateError)) throw err;
    if (err.delayed) return { outcome: retry(`TEMPLATE_DELAYED: ${where[i]}: ${err.described}`) };
    const outcome = reject(`TEMPLATE_FAILED: ${where[i]}: ${err.described}`);
    return err.limit ? { outcome, limit: { key: where[i]!, message: err.described } } : { outcome };
  }
}

const value = (r: unknown): unknown => {
  if (r instanceof TemplateError) throw r;
  return r;
};

/** urlOf: the rendered URL, checked (request-checks.ts). */
function urlOf(made: unknown, base: string): string {
  const r = renderedUrl(made, base);
  if ('problem' in r) throw new TemplateError(r.problem, null);
  return r.url;
}
