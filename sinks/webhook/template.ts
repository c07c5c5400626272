import { BridgeError, type BridgeEvent, formatEventLine, toChatMessage, transitionOf } from '../../src/api.ts';
import { type Failure, runner } from './template-runner.ts';
/**
 * Payload templates: JSONata expressions (jsonata.org) that shape a webhook's body, URL and
 * headers from the CloudEvent, so any JSON API can be fed without code. JSONata is declarative
 * and has no access to the process: no file, no network, no environment.
 *
 * The input is the CloudEvent in its JSON format (`id`, `type`, `source`, `subject`, `time`,
 * `data`, ...). Every expression can call the helpers the chat sinks use, bound to the event:
 * `$summary()` (the stdout sink's line), `$headline()` ("web-vm-0 will be rebooted"),
 * `$countdown()` (time left until NotBefore when the change was seen, or null) and
 * `$approvalUrl()` (the signed approval link, or null), plus `$transition()`.
 *
 * An evaluation runs in a worker thread (template-runner.ts) with a hard deadline (`templateTimeoutMs`,
 * 100 ms unless configured), a 64 MiB heap and a bounded stack: past any of them it is stopped
 * and fails like any evaluation error, and the daemon's own thread never waits on it. jsonata
 * loads in that worker on the first compile, so a bridge without templates never holds it.
 */

/** How long one evaluation may run unless the sink says otherwise. */
export const TEMPLATE_TIMEOUT_MS = 100;
/** How deep an evaluation may recurse. */
const TEMPLATE_STACK = 500;

/** TemplateError: an expression that does not compile or fails on an event, in JSONata's words. */
export class TemplateError extends BridgeError<'TEMPLATE_FAILED'> {
  readonly position: number | null;
  /** It ran past a limit (time, memory, recursion, result size) and was stopped. */
  readonly limit: boolean;
  constructor(message: string, position: number | null, limit = false) {
    super('TEMPLATE_FAILED', message);
    this.position = position;
    this.limit = limit;
  }
  /** "<JSONata's message> at position N". */
  get described(): string {
    return this.position === null ? this.message : `${this.message} at position ${this.position}`;
  }
}

function templateError(f: Failure, timeoutMs: number): TemplateError {
  if (f.code === 'D1012' || f.code === 'TEMPLATE_LIMIT') {
    const message = f.code === 'D1012' ? `ran longer than ${timeoutMs} ms and was stopped` : f.message;
    return new TemplateError(`the template ${message}`, null, true);
  }
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
    const r = await runner.compile(text, timeoutMs, TEMPLATE_STACK);
    if ('failure' in r) throw templateError(r.failure, timeoutMs);
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
      one.map((r) => (r.ok ? (r.json === null ? null : (JSON.parse(r.json) as unknown)) : templateError(r.failure, timeoutMs))),
    );
  }

  /** render evaluates the expression for one event; `undefined` (no result) comes back as null. */
  async render(event: BridgeEvent, context: TemplateContext): Promise<unknown> {
    const [r] = (await Template.renderAll([this], [event], context))[0]!;
    if (r instanceof TemplateError) throw r;
    return r;
  }
  /** close lets the worker go once no template is left. */
  close(): void {
    runner.release(this.#id);
  }
}
