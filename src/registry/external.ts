/**
 * External sinks: a sink module from a file or a package (`type: module`, `module: ./x.js`),
 * declared with `defineSink` (src/api.ts). loadExternalSink imports it once, checks that it
 * keeps the contract, and wraps it as a SinkModule whose `create` first validates the sink's
 * `config` block with the module's own schema. Every problem names the key it is about,
 * relative to the sink: `module: ...` or `config.<path>: ...`.
 */
import { createRequire } from 'node:module';
import { isAbsolute, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BridgeError } from '../lib/errors.ts';
import { z } from 'zod';
import { sinkBase, type ExternalSink, type Sink, type SinkContext, type SinkModule, type StandardSchema } from '../sinks/contract.ts';

export const configSchema = z.strictObject({
  type: z.literal('module'),
  ...sinkBase,
  /** A file (absolute, or relative to the configuration file) or a package name. */
  module: z.string().min(1).describe('The sink module: a path (relative to the configuration file) or a package name.'),
  /** The sink's own settings, checked by the schema the module exports. */
  config: z.record(z.string(), z.unknown()).default({}).describe("The module's own settings, checked by its configSchema."),
});
export type ModuleSinkConfig = z.infer<typeof configSchema>;

/** SinkModuleError lists what is wrong with one external sink, each problem by its key. */
export class SinkModuleError extends BridgeError<'CONFIG_INVALID'> {
  readonly problems: readonly string[];
  constructor(problems: readonly string[], cause?: unknown) {
    super('CONFIG_INVALID', problems.join('; '), { cause });
    this.problems = problems;
  }
}

const loaded = new Map<string, Promise<ExternalSink>>();

/** importSink imports the module named by `specifier`: a path (absolute, or relative to `baseDir`) or a package name. */
async function importSink(specifier: string, baseDir: string): Promise<ExternalSink> {
  let url: string;
  try {
    url =
      specifier.startsWith('.') || isAbsolute(specifier)
        ? pathToFileURL(isAbsolute(specifier) ? specifier : join(baseDir, specifier)).href
        : pathToFileURL(createRequire(join(baseDir, 'noop.js')).resolve(specifier)).href;
  } catch (err) {
    throw new SinkModuleError(
      [`module: cannot find "${specifier}" (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`],
      err,
    );
  }
  let ns: Record<string, unknown>;
  try {
    ns = (await import(url)) as Record<string, unknown>;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'ERR_MODULE_NOT_FOUND' ? 'no such file or package' : `${e.code ?? e.name}: ${e.message.split('\n')[0]}`;
    throw new SinkModuleError([`module: cannot load "${specifier}" (${why})`], err);
  }
  const sink = (ns.default ?? ns.sink) as Partial<ExternalSink> | undefined;
  const problems: string[] = [];
  if (sink === null || typeof sink !== 'object') {
    problems.push(`module: "${specifier}" does not export a sink (export default defineSink({ name, configSchema, create }))`);
  } else {
    if (typeof sink.name !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(sink.name))
      problems.push(`module: the sink "${specifier}" exports has no valid name`);
    if (typeof sink.create !== 'function') problems.push(`module: the sink "${specifier}" exports has no create function`);
    if (typeof (sink.configSchema as Partial<StandardSchema> | undefined)?.['~standard']?.validate !== 'function') {
      problems.push(`module: the sink "${specifier}" exports has no configSchema (a Standard Schema such as a zod schema)`);
    }
    if (sink.maxBatchSize !== undefined && !(Number.isInteger(sink.maxBatchSize) && sink.maxBatchSize >= 1)) {
      problems.push(`module: the sink "${specifier}" exports a maxBatchSize that is not a positive integer`);
    }
  }
  if (problems.length > 0) throw new SinkModuleError(problems);
  return sink as ExternalSink;
}

export function loadExternalSink(specifier: string, baseDir: string = process.cwd()): Promise<ExternalSink> {
  const key = `${baseDir}\n${specifier}`;
  let p = loaded.get(key);
  if (p === undefined) {
    p = importSink(specifier, baseDir);
    loaded.set(key, p);
    p.catch(() => loaded.delete(key));
  }
  return p;
}

/** validateSinkConfig checks a sink's `config` block with the module's schema; problems are named `config.<path>`. */
export async function validateSinkConfig<C>(sink: ExternalSink<C>, config: unknown): Promise<C> {
  const result = await sink.configSchema['~standard'].validate(config);
  if (result.issues === undefined) return result.value;
  throw new SinkModuleError(
    result.issues.map((i) => {
      const path = (i.path ?? []).map((p) => (typeof p === 'object' ? p.key : p));
      const key = path.reduce<string>((out, p) => (typeof p === 'number' ? `${out}[${p}]` : `${out}.${String(p)}`), 'config');
      return `${key}: ${i.message}`;
    }),
  );
}

/**
 * moduleSink is the sink type `module`: its `create` loads the named module (once per process),
 * checks the sink's `config` block with the module's own schema, and creates the sink. The
 * module's maxBatchSize becomes the sink's.
 */
export const moduleSink: SinkModule<ModuleSinkConfig, typeof configSchema> = {
  type: 'module',
  configSchema,
  maxBatchSize: 1,
  async create(config: ModuleSinkConfig, context: SinkContext): Promise<Sink> {
    const external = await loadExternalSink(config.module);
    const sink = await external.create(await validateSinkConfig(external, config.config), context);
    return sink.maxBatchSize !== undefined || external.maxBatchSize === undefined ? sink : withBatch(sink, external.maxBatchSize);
  },
};

/** withBatch is the sink with the batch size its module declares. */
function withBatch(sink: Sink, maxBatchSize: number): Sink {
  return {
    maxBatchSize,
    ...(sink.attemptTimeoutMs === undefined ? {} : { attemptTimeoutMs: sink.attemptTimeoutMs }),
    send: (events, options) => sink.send(events, options),
    close: () => sink.close(),
  };
}
