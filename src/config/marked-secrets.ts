/**
 * markedSecrets walks a value beside the zod schema that validated it and returns every value the
 * schema marks as a secret (`secret(...)`: `writeOnly` in its metadata, as the JSON Schema says),
 * each with its path (`sinks[2].secret`). It follows only the branches the value takes, so it
 * costs a few hundred steps where building the whole JSON Schema to read the same marks took
 * some 15 ms at every start, under the package's V8 flags (docs/performance.md).
 */
import { z } from 'zod';

export interface Marked {
  readonly path: string;
  readonly value: unknown;
}

/** The parts of a zod 4 definition the walk reads (zod/v4/core's `$ZodTypeDef`s). */
interface Def {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  options?: z.ZodType[];
  left?: z.ZodType;
  right?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  catchall?: z.ZodType;
  valueType?: z.ZodType;
  element?: z.ZodType;
  items?: z.ZodType[];
  rest?: z.ZodType | null;
  getter?: () => z.ZodType;
}

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'catch', 'readonly', 'nonoptional', 'success']);
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const child = (path: string, key: string) => (path === '' ? key : `${path}.${key}`);

/** markedSecrets: the secrets of `value`, by path, as `schema` marks them (each path once). */
export function markedSecrets(schema: z.ZodType, value: unknown): Marked[] {
  const found = new Map<string, Marked>();
  // each schema once at each path: a union's shared parts, a lazy schema's own recursion
  const seen = new Map<z.ZodType, Set<string>>();
  const walk = (s: z.ZodType | null | undefined, v: unknown, path: string): void => {
    if (s === undefined || s === null || v === undefined) return;
    const paths = seen.get(s) ?? seen.set(s, new Set()).get(s)!;
    if (paths.has(path)) return;
    paths.add(path);
    if (z.globalRegistry.get(s)?.writeOnly === true) {
      found.set(path, { path, value: v });
      return;
    }
    const def = (s as unknown as { _zod: { def: Def } })._zod.def;
    if (WRAPPERS.has(def.type)) walk(def.innerType, v, path);
    else if (def.type === 'lazy') walk(def.getter?.(), v, path);
    else if (def.type === 'pipe') {
      walk(def.in, v, path);
      walk(def.out, v, path);
    } else if (def.type === 'union') for (const o of def.options ?? []) walk(o, v, path);
    else if (def.type === 'intersection') {
      walk(def.left, v, path);
      walk(def.right, v, path);
    } else if (def.type === 'object' && isObject(v)) {
      for (const [k, x] of Object.entries(v)) walk(Object.hasOwn(def.shape ?? {}, k) ? def.shape![k] : def.catchall, x, child(path, k));
    } else if (def.type === 'record' && isObject(v)) {
      for (const [k, x] of Object.entries(v)) walk(def.valueType, x, child(path, k));
    } else if (def.type === 'array' && Array.isArray(v)) {
      v.forEach((x, i) => walk(def.element, x, `${path}[${i}]`));
    } else if (def.type === 'tuple' && Array.isArray(v)) {
      v.forEach((x, i) => walk(def.items?.[i] ?? def.rest, x, `${path}[${i}]`));
    }
  };
  walk(schema, value, '');
  return [...found.values()];
}
