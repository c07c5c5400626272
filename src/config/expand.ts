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
  const expanded = expand(raw, [], env, (path, name) => {
    if (needs === undefined || needs(path, raw)) {
      problems.push(`${formatPath(path)}: environment variable ${name} is not set`);
      return;
    }
    const known = unresolved.find((u) => formatPath(u.path) === formatPath(path));
    if (known === undefined) unresolved.push({ path: [...path], names: [name] });
    else known.names.push(name);
  });
  return { expanded, problems, unresolved };
}

/**
 * PLACEHOLDERS stand in for a value whose variable is not set where the command does not need it,
 * tried in turn until the schema takes one: a Standard Webhooks secret, an https URL on a name
 * that never resolves (RFC 2606), a connection string, and plain text.
 */
const PLACEHOLDERS = [
  'unresolved',
  'https://unresolved.invalid/unresolved',
  `whsec_${Buffer.alloc(32).toString('base64')}`,
  `Endpoint=sb://unresolved.invalid/;SharedAccessKeyName=unresolved;SharedAccessKey=${Buffer.alloc(32).toString('base64')}`,
];

/** withPlaceholders fills the values left unresolved with placeholders the schema accepts; those it accepts none for are problems. */
export function withPlaceholders(schema: z.ZodType, input: Expanded): void {
  if (input.unresolved.length === 0) return;
  const tries = new Map(input.unresolved.map((u) => [u, 0]));
  for (let round = 0; round < PLACEHOLDERS.length; round++) {
    for (const [u, i] of tries) setAt(input.expanded, u.path, PLACEHOLDERS[i]);
    const result = schema.safeParse(input.expanded);
    const refused = new Set(result.success ? [] : result.error.issues.map((issue) => formatPath(issue.path)));
    const next = [...tries].filter(([u]) => [...refused].some((p) => p === formatPath(u.path)));
    if (next.length === 0) return;
    for (const [u, i] of next) {
      if (i + 1 < PLACEHOLDERS.length) tries.set(u, i + 1);
      else {
        tries.delete(u);
        input.problems.push(...u.names.map((n) => `${formatPath(u.path)}: environment variable ${n} is not set`));
      }
    }
  }
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
