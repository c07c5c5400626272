/**
 * Expanding `${NAME}` in a configuration as read: `${NAME}` is replaced by the variable's value
 * (an unset variable is a problem naming it and its path); `${NAME:-fallback}` uses the fallback
 * when NAME is unset or empty; `$${` is a literal `${`. A command that does not need a value (see
 * Needs) gets a placeholder there instead of a problem.
 */
import type { z } from 'zod';

/**
 * Needs: which values a command uses, by path (`['sinks', 2, 'url']`) and the whole configuration
 * as read. A variable that is not set where a command does not need it is no problem for that
 * command: the value is replaced by a placeholder the schema accepts, which the command never
 * uses. `run` and `validate` need everything (the default).
 */
export type Needs = (path: readonly (string | number)[], raw: unknown) => boolean;

/** Expanded: the configuration with its variables expanded, the problems found, and the values left unresolved where not needed. */
export interface Expanded {
  readonly expanded: unknown;
  readonly problems: string[];
  readonly unresolved: Unresolved[];
  /** Whether the command needs the value at a path (every one, without Needs). */
  readonly needed: (path: readonly (string | number)[]) => boolean;
}

/** Unresolved: a value whose variable is not set, at a path the command does not need. */
interface Unresolved {
  readonly path: (string | number)[];
  readonly names: string[];
}

/** expandVariables expands `${NAME}` everywhere; an unset one is a problem where `needs` says it is needed, else left to a placeholder. */
export function expandVariables(raw: unknown, env: NodeJS.ProcessEnv, needs?: Needs): Expanded {
  const problems: string[] = [];
  const unresolved: Unresolved[] = [];
  const needed = (path: readonly (string | number)[]) => needs === undefined || needs(path, raw);
  const expanded = expand(raw, [], env, (path, name) => {
    if (needed(path)) {
      problems.push(`${formatPath(path)}: environment variable ${name} is not set`);
      return;
    }
    const known = unresolved.find((u) => formatPath(u.path) === formatPath(path));
    if (known === undefined) unresolved.push({ path: [...path], names: [name] });
    else known.names.push(name);
  });
  return { expanded, problems, unresolved, needed };
}

/**
 * PLACEHOLDERS stand in for a value whose variable is not set where the command does not need it,
 * tried in turn until the schema takes one: one of each shape the configuration's values take
 * (plain text, an https URL on a name that never resolves (RFC 2606), a Standard Webhooks secret,
 * a Service Bus and a storage connection string, a Slack token, an Ed25519 private and public key
 * (of a seed of zeros), a GUID, HOST:PORT). A test holds that every secret of the schemas takes one.
 */
export const PLACEHOLDERS: readonly string[] = [
  'unresolved',
  'https://unresolved.invalid/unresolved',
  `whsec_${Buffer.alloc(32).toString('base64')}`,
  `Endpoint=sb://unresolved.invalid/;SharedAccessKeyName=unresolved;SharedAccessKey=${Buffer.alloc(32).toString('base64')}`,
  `AccountName=unresolved;AccountKey=${Buffer.alloc(64).toString('base64')};EndpointSuffix=unresolved.invalid`,
  'xoxb-unresolved',
  Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.alloc(32)]).toString('base64'),
  'MCowBQYDK2VwAyEAO2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik=',
  '00000000-0000-0000-0000-000000000000',
  'unresolved.invalid:1',
];

/**
 * withPlaceholders fills the values left unresolved with placeholders the schema accepts; those it
 * accepts none for are problems. A value the command does not need either, which a rule compares
 * with one left unresolved (readsUnresolved), is not checked against it: it gets a placeholder too.
 */
export function withPlaceholders(schema: z.ZodType, input: Expanded): void {
  if (input.unresolved.length === 0) return;
  const tries = new Map(input.unresolved.map((u) => [u, 0]));
  // each round moves a value on to its next placeholder or adds a compared one: bounded by both
  for (let round = 0; round < PLACEHOLDERS.length * 4 + input.unresolved.length; round++) {
    for (const [u, i] of tries) setAt(input.expanded, u.path, PLACEHOLDERS[i]);
    const result = schema.safeParse(input.expanded);
    const issues = result.success ? [] : result.error.issues;
    const refused = new Set(issues.flatMap(issuePaths));
    const next = [...tries].filter(([u]) => refused.has(formatPath(u.path)));
    if (next.length === 0) {
      const compared = issues
        .filter((i) => readsUnresolved(i, input) && !input.needed(i.path as (string | number)[]))
        .map((i) => i.path as (string | number)[])
        .filter((p) => !input.unresolved.some((u) => formatPath(u.path) === formatPath(p)));
      if (compared.length === 0) return;
      for (const path of compared) {
        const u = { path, names: [] };
        input.unresolved.push(u);
        tries.set(u, 0);
      }
      continue;
    }
    for (const [u, i] of next) {
      if (i + 1 < PLACEHOLDERS.length) tries.set(u, i + 1);
      else {
        tries.delete(u);
        input.problems.push(...u.names.map((n) => `${formatPath(u.path)}: environment variable ${n} is not set`));
      }
    }
  }
}

/** issuePaths: where an issue is, and for a union that took no branch, where each branch's own issues are. */
function issuePaths(issue: z.core.$ZodIssue): string[] {
  const nested = issue.code === 'invalid_union' && 'errors' in issue ? issue.errors.flat() : [];
  return [formatPath(issue.path), ...nested.flatMap((n) => issuePaths({ ...n, path: [...issue.path, ...n.path] }))];
}

/**
 * readsUnresolved: the issue comes from a rule between keys (`params.reads`: the keys beside its
 * own that it compares it with) that read a value left unresolved: a rule that cannot be checked
 * without the value, so it is not.
 */
function readsUnresolved(issue: z.core.$ZodIssue, input: Expanded): boolean {
  const reads = issue.code === 'custom' ? (issue.params as { reads?: unknown } | undefined)?.reads : undefined;
  if (!Array.isArray(reads) || input.unresolved.length === 0) return false;
  const parent = issue.path.slice(0, -1);
  const unresolved = input.unresolved.map((u) => formatPath(u.path));
  return reads.some((key) => {
    const at = formatPath([...parent, String(key)]);
    return unresolved.some((u) => u === at || u.startsWith(`${at}.`) || u.startsWith(`${at}[`));
  });
}

function setAt(root: unknown, path: readonly (string | number)[], value: unknown): void {
  let node = root as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  node[path.at(-1)!] = value;
}

const VAR = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

function expand(
  value: unknown,
  path: (string | number)[],
  env: NodeJS.ProcessEnv,
  unset: (path: (string | number)[], name: string) => void,
): unknown {
  if (typeof value === 'string') {
    return value.replace(VAR, (match, name: string | undefined, fallback: string | undefined) => {
      if (name === undefined) return '${';
      const v = env[name];
      if (v !== undefined && (v !== '' || fallback === undefined)) return v;
      if (fallback !== undefined) return fallback;
      unset(path, name);
      return match;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => expand(v, [...path, i], env, unset));
  if (value !== null && typeof value === 'object') {
    // A key written with no value (`identity:` followed only by comments) counts as absent.
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== null)
        .map(([k, v]) => [k, expand(v, [...path, k], env, unset)]),
    );
  }
  return value;
}

export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out === '' ? String(p) : `.${String(p)}`;
  }
  return out === '' ? '(root)' : out;
}
