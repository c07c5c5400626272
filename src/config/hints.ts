/**
 * What a configuration problem says beyond "wrong": the values a key accepts (also when it takes
 * one value or a list of them), and, for a key nobody knows, the known key it is nearest to.
 */
import type { z } from 'zod';

/** acceptedValues: the values a union's branches would take (`eventType: must be one of …`), or null. */
export function acceptedValues(issue: z.core.$ZodIssue): string[] | null {
  if (issue.code !== 'invalid_union' || !('errors' in issue)) return null;
  const values = new Set<string>();
  const walk = (issues: readonly z.core.$ZodIssue[]) => {
    for (const i of issues) {
      if (i.code === 'invalid_value') for (const v of i.values) values.add(String(v));
      if (i.code === 'invalid_union' && 'errors' in i) for (const branch of i.errors) walk(branch);
    }
  };
  for (const branch of issue.errors) walk(branch);
  return values.size === 0 ? null : [...values];
}

/**
 * fittingBranch: for a union that took no branch (one check or a list of them, a number or a
 * percentage), the issues of the one branch whose shape the value has, with their full paths: what
 * is wrong in the value given, rather than "Invalid input". Null when no branch, or several, fit.
 */
export function fittingBranch(issue: z.core.$ZodIssue): z.core.$ZodIssue[] | null {
  if (issue.code !== 'invalid_union' || !('errors' in issue) || 'discriminator' in issue) return null;
  const fitting = issue.errors.filter((branch) => !branch.some(wrongShape));
  if (fitting.length !== 1) return null;
  return fitting[0]!.map((i) => ({ ...i, path: [...issue.path, ...i.path] }));
}

/**
 * shapesOf: the types of a union's branches the value is not of (`object`, `array`), and whether
 * it is of none of them (a value of no branch's type).
 */
export function shapesOf(issue: z.core.$ZodIssue): { readonly other: string[]; readonly none: boolean } {
  if (issue.code !== 'invalid_union' || !('errors' in issue)) return { other: [], none: false };
  const types = issue.errors.map((branch) => branch.find(wrongShape)).map((i) => (i?.code === 'invalid_type' ? i.expected : null));
  return { other: [...new Set(types.filter((t) => t !== null))], none: types.every((t) => t !== null) };
}

/** wrongShape: the value itself is not of the branch's type (not a problem inside it): a list where a name is taken. */
const wrongShape = (i: z.core.$ZodIssue): boolean =>
  i.path.length === 0 &&
  (i.code === 'invalid_type' || (i.code === 'invalid_value' && 'input' in i && i.values.every((v) => typeof v !== typeof i.input)));

/**
 * knownKeys: the keys the schema knows at `path` of the input, from its JSON Schema: a union's
 * branch is the one whose constant `type` the input names (a sink), else every branch's keys.
 */
export function knownKeys(schema: unknown, input: unknown, path: readonly PropertyKey[]): string[] {
  let nodes: unknown[] = [schema];
  let value = input;
  for (const key of path) {
    nodes = nodes
      .flatMap((n) => branches(n, value))
      .flatMap((n) => {
        const s = n as { properties?: Record<string, unknown>; items?: unknown };
        return typeof key === 'number'
          ? s.items === undefined
            ? []
            : [s.items]
          : s.properties?.[String(key)] === undefined
            ? []
            : [s.properties[String(key)]];
      });
    value = value !== null && typeof value === 'object' ? (value as Record<PropertyKey, unknown>)[key as string] : undefined;
  }
  return [
    ...new Set(nodes.flatMap((n) => branches(n, value)).flatMap((n) => Object.keys((n as { properties?: object }).properties ?? {}))),
  ];
}

function branches(node: unknown, value: unknown): unknown[] {
  if (node === null || typeof node !== 'object') return [];
  const s = node as { anyOf?: unknown[]; oneOf?: unknown[] };
  const options = [...(s.anyOf ?? []), ...(s.oneOf ?? [])];
  if (options.length === 0) return [node];
  const all = options.flatMap((o) => branches(o, value));
  const type = (value as { type?: unknown } | null)?.type;
  const named = all.filter((o) => (o as { properties?: { type?: { const?: unknown } } }).properties?.type?.const === type);
  return named.length > 0 ? named : all;
}

/** nearest: the known key `unknown` most likely meant (a typo, or another case), or null when none is near. */
export function nearest(unknown: string, known: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = k.toLowerCase() === unknown.toLowerCase() ? 0 : distance(unknown.toLowerCase(), k.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  return best !== null && bestDistance <= Math.max(1, Math.floor(unknown.length / 4)) + 1 ? best : null;
}

/** distance: the Levenshtein distance, the number of edits from one text to the other. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}
