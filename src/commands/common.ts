/** Shared helpers of the CLI commands: exit codes, argument parsing, config loading. */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, loadConfig, resolveConfigPath } from '../config/load.ts';
import type { BridgeConfig } from '../config/schema.ts';
import { BridgeError } from '../lib/errors.ts';

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
    throw new UsageError((err as Error).message);
  }
}

/** loadOrReport loads the configuration; on problems it prints them all and returns null (exit 2). */
export async function loadOrReport(flag: string | undefined): Promise<{ config: BridgeConfig; path: string } | null> {
  const path = resolveConfigPath(flag);
  try {
    return { config: await loadConfig(path), path };
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
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
