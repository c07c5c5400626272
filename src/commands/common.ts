/** Shared helpers of the CLI commands: exit codes, argument parsing, config loading. */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { cliEnvironment } from '../config/env-file.ts';
import { ConfigError, loadConfig, NoConfigFile, resolveConfigPath, type Needs } from '../config/load.ts';
import type { BridgeConfig } from '../config/schema.ts';
import { BridgeError, messageOf } from '../lib/errors.ts';

export { table } from '../lib/table.ts';

export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

export class UsageError extends BridgeError<'USAGE'> {
  constructor(message: string) {
    super('USAGE', message);
  }
}

export function parse<T extends NonNullable<ParseArgsConfig['options']>>(argv: string[], options: T, allowPositionals = false) {
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals });
  } catch (err) {
    throw new UsageError(messageOf(err));
  }
}

/** The options every verb that reads the configuration takes. */
export const CONFIG_OPTIONS = {
  config: { type: 'string', short: 'c' },
  'env-file': { type: 'string' },
} as const;

/** What a verb needs resolved of the configuration (see Needs): the sections it reads, or some sinks. */
export const needs = {
  /** The sections named (`approval`, `fleet`, or a key inside one: `fleet.calendar`). */
  sections:
    (...names: string[]): Needs =>
    (path) =>
      names.some((name) => name.split('.').every((key, i) => String(path[i]) === key)),
  /** The sinks `which` takes, and the sections named. */
  sinks:
    (which: (sink: { name?: unknown; type?: unknown }) => boolean, ...sections: string[]): Needs =>
    (path, raw) => {
      if (needs.sections(...sections)(path, raw)) return true;
      if (path[0] !== 'sinks' || typeof path[1] !== 'number') return false;
      const sink = (raw as { sinks?: unknown[] }).sinks?.[path[1]];
      return sink !== null && typeof sink === 'object' && which(sink);
    },
};

/** The options of a verb that reads a configuration, as parsed. */
export interface ConfigValues {
  readonly config?: string | undefined;
  readonly 'env-file'?: string | undefined;
}

/**
 * loadOrReport loads the bridge's configuration, resolving only what the verb `uses` (default:
 * everything); on problems it prints them all and returns null (exit 2). See reportProblems.
 */
export async function loadOrReport(values: ConfigValues, uses?: Needs): Promise<{ config: BridgeConfig; path: string } | null> {
  return reportProblems(values, async (env) => {
    const path = resolveConfigPath(values.config);
    return { config: await loadConfig(path, env, uses === undefined ? {} : { needs: uses }), path };
  });
}

/**
 * reportProblems runs `load` (which finds the file and reads it) with the service's environment
 * file under the caller's environment (`--env-file`, else $SE_BRIDGE_ENV_FILE, else the installed
 * unit's, when it exists: said on stderr); when there is no file, or it has problems, it prints
 * where it looked, or every problem, and returns null (exit 2).
 */
export async function reportProblems<T>(values: ConfigValues, load: (env: NodeJS.ProcessEnv) => T | Promise<T>): Promise<T | null> {
  const environment = cliEnvironment(values['env-file']);
  if (environment.read !== null) {
    process.stderr.write(`se-bridge: read ${environment.read.path}\n`);
  }
  try {
    return await load(environment.env);
  } catch (err) {
    if (err instanceof NoConfigFile) {
      process.stderr.write(`se-bridge: ${err.message}\n`);
      return null;
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      if (environment.unreadable !== null && err.problems.some((p) => p.includes(': environment variable ')))
        process.stderr.write(
          `(the service's environment file could not be read: ${environment.unreadable}; run as its owner, or name one with --env-file)\n`,
        );
      return null;
    }
    throw err;
  }
}

/** onShutdown calls `stop` on SIGINT/SIGTERM (and SIGBREAK on Windows); a second signal exits at once. */
export function onShutdown(stop: (signal: string) => void): () => void {
  let count = 0;
  const signals: NodeJS.Signals[] = process.platform === 'win32' ? ['SIGINT', 'SIGTERM', 'SIGBREAK'] : ['SIGINT', 'SIGTERM', 'SIGHUP'];
  const handler = (signal: NodeJS.Signals) => {
    count += 1;
    if (count > 1) {
      process.stderr.write(`se-bridge: second ${signal}; exiting now\n`);
      process.exit(130);
    }
    stop(signal);
  };
  for (const s of signals) process.on(s, handler);
  return () => {
    for (const s of signals) process.off(s, handler);
  };
}
