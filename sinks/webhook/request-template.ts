/**
 * The webhook sink's templates (shared/template.ts): compiled once at `create`, rendered per
 * event into a request (body, URL, headers), and compiled at `validate` so that one that does not
 * compile is a configuration problem that names its key and position.
 */
import { type BridgeEvent, deliveredWith, type Outcome, reject } from '../../src/api.ts';
import { Template, TemplateError } from './template.ts';

/** The template keys of a webhook sink's configuration. */
export interface TemplateKeys {
  readonly url: string;
  readonly template?: string | undefined;
  readonly urlTemplate?: string | undefined;
  readonly headerTemplates?: Readonly<Record<string, string>> | undefined;
}

export interface Templates {
  readonly body: Template | null;
  readonly url: Template | null;
  readonly headers: readonly (readonly [string, Template])[];
}

/** What a template made of one event: a request to send (a body of null: the CloudEvents binding's), or already an outcome. */
export type Rendered =
  | { readonly outcome: Outcome }
  | { readonly body: string | null; readonly url: string; readonly headers: Readonly<Record<string, string>> };

export const SKIPPED = 'skipped: the template gave null';

/** templatesOf compiles a sink's templates, or gives null when it has none. */
export async function templatesOf(c: TemplateKeys): Promise<Templates | null> {
  if (c.template === undefined && c.urlTemplate === undefined && c.headerTemplates === undefined) return null;
  return {
    body: c.template === undefined ? null : await Template.compile(c.template),
    url: c.urlTemplate === undefined ? null : await Template.compile(c.urlTemplate),
    headers: await Promise.all(
      Object.entries(c.headerTemplates ?? {}).map(async ([name, text]) => [name, await Template.compile(text)] as const),
    ),
  };
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
      await Template.compile(text);
    } catch (err) {
      if (!(err instanceof TemplateError)) throw err;
      problems.push(`${key}: ${err.described}`);
    }
  }
  return problems;
}

/** renderRequest renders one event's request; a failure rejects the event with JSONata's words, a null body skips it. */
export async function renderRequest(
  t: Templates,
  c: TemplateKeys,
  event: BridgeEvent,
  approvalUrl: (e: BridgeEvent) => string | null,
): Promise<Rendered> {
  const ctx = { approvalUrl };
  let where = 'template';
  try {
    let body: string | null = null;
    if (t.body !== null) {
      const made = await t.body.render(event, ctx);
      if (made === null) return { outcome: deliveredWith(SKIPPED) };
      body = typeof made === 'string' ? made : JSON.stringify(made);
    }
    where = 'urlTemplate';
    const url = t.url === null ? c.url : await renderUrl(t.url, c.url, event, approvalUrl);
    const headers: Record<string, string> = {};
    for (const [name, h] of t.headers) {
      where = `headerTemplates.${name}`;
      const v = await h.render(event, ctx);
      if (v === null) continue;
      const text = typeof v === 'string' ? v : JSON.stringify(v);
      if (/[\r\n\0]/.test(text)) throw new TemplateError('a header value cannot hold a line break or NUL', null);
      headers[name] = text;
    }
    return { body, url, headers };
  } catch (err) {
    if (!(err instanceof TemplateError)) throw err;
    return { outcome: reject(`TEMPLATE_FAILED: ${where}: ${err.described}`) };
  }
}

/** renderUrl renders the URL and keeps it on the origin of `url` (where the sink's credentials and client go). */
async function renderUrl(t: Template, base: string, event: BridgeEvent, approvalUrl: (e: BridgeEvent) => string | null): Promise<string> {
  const made = await t.render(event, { approvalUrl });
  if (typeof made !== 'string') throw new TemplateError(`gave ${made === null ? 'null' : typeof made}, not a URL`, null);
  let u: URL;
  try {
    u = new URL(made, base);
  } catch {
    throw new TemplateError(`gave ${JSON.stringify(made.slice(0, 80))}, not a URL`, null);
  }
  if (u.origin !== new URL(base).origin)
    throw new TemplateError(`gave a URL on ${u.origin}, not on the origin of url (${new URL(base).origin})`, null);
  return u.href;
}
