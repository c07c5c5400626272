import { BridgeError, type BridgeEvent, formatEventLine, toChatMessage, transitionOf } from '../../src/api.ts';
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
 * An evaluation has 100 ms and a bounded stack; then it fails, like any evaluation error.
 * jsonata loads on the first compile, so a bridge without templates never holds it.
 */

/** How long one evaluation may run. */
export const TEMPLATE_TIMEOUT_MS = 100;
/** How deep an evaluation may recurse. */
const TEMPLATE_STACK = 500;

type Jsonata = typeof import('jsonata');
type Expression = ReturnType<Jsonata>;

let loaded: Promise<Jsonata> | null = null;
const jsonata = (): Promise<Jsonata> => (loaded ??= import('jsonata').then((m) => ((m as { default?: Jsonata }).default ?? m) as Jsonata));

/** TemplateError: an expression that does not compile or fails on an event, in JSONata's words. */
export class TemplateError extends BridgeError<'TEMPLATE_FAILED'> {
  readonly position: number | null;
  constructor(message: string, position: number | null) {
    super('TEMPLATE_FAILED', message);
    this.position = position;
  }
  /** "<JSONata's message> at position N". */
  get described(): string {
    return this.position === null ? this.message : `${this.message} at position ${this.position}`;
  }
}

function templateError(err: unknown): TemplateError {
  if (err instanceof TemplateError) return err;
  const e = err as { message?: unknown; position?: unknown; code?: unknown; value?: unknown };
  let message = typeof e.message === 'string' ? e.message : String(err);
  if (e.code === 'D1012') message = `the template ran longer than ${TEMPLATE_TIMEOUT_MS} ms and was stopped`;
  if (e.code === 'D1011') message = `the template recursed deeper than ${TEMPLATE_STACK} levels and was stopped`;
  return new TemplateError(message, typeof e.position === 'number' && e.code !== 'D1012' && e.code !== 'D1011' ? e.position : null);
}

/** What a template may call, bound to one event. */
export interface TemplateContext {
  /** The signed approval link for the event, or null. */
  approvalUrl(event: BridgeEvent): string | null;
}

export class Template {
  readonly #expression: Expression;

  private constructor(expression: Expression) {
    this.#expression = expression;
  }

  /** compile parses an expression; a TemplateError says what is wrong and where. */
  static async compile(text: string): Promise<Template> {
    const j = await jsonata();
    try {
      return new Template(j(text, { timeout: TEMPLATE_TIMEOUT_MS, stack: TEMPLATE_STACK }));
    } catch (err) {
      throw templateError(err);
    }
  }

  /** render evaluates the expression for one event; `undefined` (no result) comes back as null. */
  async render(event: BridgeEvent, context: TemplateContext): Promise<unknown> {
    let chat: ReturnType<typeof toChatMessage> | null = null;
    const message = () => (chat ??= toChatMessage(event));
    const bindings = {
      summary: () => formatEventLine(event),
      headline: () => message().title,
      countdown: () => message().notBefore?.timeLeft ?? null,
      approvalUrl: () => context.approvalUrl(event),
      transition: () => transitionOf(event),
    };
    try {
      const out: unknown = await this.#expression.evaluate(event, bindings);
      return out === undefined ? null : plain(out);
    } catch (err) {
      throw templateError(err);
    }
  }
}

/** plain turns JSONata's results (sequences are arrays with extra flags) into plain JSON values. */
function plain(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v) ?? 'null') as unknown;
}
