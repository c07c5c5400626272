/**
 * registerSinks turns one list of sink modules into everything the core needs of them: the
 * module of each `type`, the config schemas (for the configuration's union), the type names, and
 * the error catalogue (the core's codes and every module's own). A code declared twice, or a
 * type registered twice, is a defect found at start-up, never a silent overwrite.
 */
import { CODES } from '../lib/errors.ts';
import type { SinkModule } from '../sinks/contract.ts';

export interface SinkRegistry<S> {
  /** The modules, in the order of the list. */
  readonly modules: readonly SinkModule[];
  /** Each module's config schema, in the order of the list (`type` tells them apart). */
  readonly schemas: readonly [S, ...S[]];
  readonly types: readonly string[];
  /** Every stable code and its meaning: the core's, then each module's. */
  readonly codes: Readonly<Record<string, string>>;
  /** find is the module of a sink type, or undefined. */
  find(type: unknown): SinkModule | undefined;
}

export function registerSinks<const T extends readonly [SinkModule, ...SinkModule[]]>(modules: T): SinkRegistry<T[number]['configSchema']> {
  const byType = new Map<string, SinkModule>();
  const codes: Record<string, string> = { ...CODES };
  const owner = new Map<string, string>(Object.keys(CODES).map((code) => [code, 'the core']));
  for (const m of modules) {
    if (byType.has(m.type)) throw new Error(`sink type "${m.type}" is registered twice`);
    byType.set(m.type, m);
    for (const [code, meaning] of Object.entries(m.codes ?? {})) {
      const first = owner.get(code);
      if (first !== undefined) throw new Error(`error code ${code} of sink type "${m.type}" is already declared by ${first}`);
      owner.set(code, `sink type "${m.type}"`);
      codes[code] = meaning;
    }
  }
  return {
    modules,
    schemas: [modules[0].configSchema, ...modules.slice(1).map((m: T[number]) => m.configSchema)],
    types: modules.map((m) => m.type),
    codes: Object.freeze(codes),
    find: (type) => (typeof type === 'string' ? byType.get(type) : undefined),
  };
}
