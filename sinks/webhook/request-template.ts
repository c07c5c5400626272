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

/**
 * headerValueProblem: what makes a rendered value unfit for an HTTP field (RFC 9110 section 5.5:
 * visible ASCII, Latin-1 obs-text, spaces and tabs inside), or null.
 */
function headerValueProblem(text: string): string | null {
  if (/[\r\n\0]/.test(text)) return 'a header value cannot hold a line break or NUL';
  const bad = /[^\t\x20-\x7e\x80-\xff]/.exec(text);
  if (bad !== null) {
    const cp = bad[0].codePointAt(0)!;
    return `a header value holds U+${cp.toString(16).toUpperCase().padStart(4, '0')}, which HTTP does not allow (RFC 9110 field-value: visible ASCII, Latin-1, spaces and tabs); encode it, e.g. with $encodeUrlComponent`;
  }
  return null;
}

/** renderRequest renders one event's request: a failure rejects the event with JSONata's words, a null body skips it. */
export async function renderRequest(
  t: Templates,
  c: TemplateKeys,
  event: BridgeEvent,
  approvalUrl: (e: BridgeEvent) => string | null,
): Promise<Rendered> {
  return (await renderRequests(t, c, [event], approvalUrl))[0]!;
}

/** renderRequests renders the requests of several events in one trip to the template worker, one Rendered each. */
export async function renderRequests(
  t: Templates,
  c: TemplateKeys,
  events: readonly BridgeEvent[],
  approvalUrl: (e: BridgeEvent) => string | null,
): Promise<Rendered[]> {
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
    const outcome = reject(`TEMPLATE_FAILED: ${where[i]}: ${err.described}`);
    return err.limit ? { outcome, limit: { key: where[i]!, message: err.described } } : { outcome };
  }
}

const value = (r: unknown): unknown => {
  if (r instanceof TemplateError) throw r;
  return r;
};

/**
 * urlOf checks a rendered URL: it must stay on the origin of `url` (where the sink's credentials
 * and client go) and under its directory (its path up to the last `/`, as a relative URL
 * resolves), so that an EventId like `../../admin/x` cannot reach another endpoint of the host.
 */
function urlOf(made: unknown, base: string): string {
  if (typeof made !== 'string') throw new TemplateError(`gave ${made === null ? 'null' : typeof made}, not a URL`, null);
  let u: URL;
  try {
    u = new URL(made, base);
  } catch {
    throw new TemplateError(`gave ${JSON.stringify(made.slice(0, 80))}, not a URL`, null);
  }
  const b = new URL(base);
  if (u.origin !== b.origin) throw new TemplateError(`gave a URL on ${u.origin}, not on the origin of url (${b.origin})`, null);
  if (u.username !== '' || u.password !== '') throw new TemplateError('gave a URL with a user name or password', null);
  const dir = b.pathname.slice(0, b.pathname.lastIndexOf('/') + 1);
  if (!u.pathname.startsWith(dir))
    throw new TemplateError(`gave a URL whose path (${u.pathname.slice(0, 80)}) is not under ${dir}, the directory of url`, null);
  return u.href;
}
