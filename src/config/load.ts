/**
 * loadConfig reads a YAML file, expands `${NAME}` from the environment, applies the
 * documented environment overrides and validates the result against the schema. Every
 * problem is collected and reported at once, each with its path, as a ConfigError.
 *
 * Expansion: `${NAME}` is replaced by the variable's value (an unset variable is an error
 * naming it); `${NAME:-fallback}` uses the fallback when NAME is unset or empty; `$${` is a
 * literal `${`.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { BridgeError, messageOf } from '../lib/errors.ts';
import { loadExternalSink, SinkModuleError, validateSinkConfig } from '../registry/external.ts';
import { sinkProblems } from '../registry/sinks.ts';
import { BridgeConfig } from './schema.ts';
import { crossProblems } from './cross.ts';
import { publishedSecretProblems } from './published-secrets.ts';
import { formatIssues } from './issues.ts';
import { expandVariables, withPlaceholders, type Expanded, type Needs } from './expand.ts';

export type { Needs } from './expand.ts';

export class ConfigError extends BridgeError<'CONFIG_INVALID'> {
  readonly problems: readonly string[];
  /** The configuration as read and expanded, when it got that far: what is left to check. */
  readonly input: unknown;
  constructor(source: string, problems: readonly string[], input?: unknown) {
    super(
      'CONFIG_INVALID',
      `${source}: ${problems.length} configuration problem${problems.length === 1 ? '' : 's'}:\n  ${problems.join('\n  ')}`,
    );
    this.problems = problems;
    this.input = input;
  }
}

/** Where a command looks for its configuration file when --config names none, after $`variable`. */
export interface ConfigPlaces {
  /** The environment variable that names the file. */
  readonly variable: string;
  /** The file in the working directory. */
  readonly local: string;
  /** The installed service's file, when there is one to look for. */
  readonly installed: string | null;
}

/** The bridge's: $SE_BRIDGE_CONFIG, config/bridge.yaml, then the installed service's (on Windows under %ProgramData%). */
export function bridgePlaces(env: NodeJS.ProcessEnv = process.env): ConfigPlaces {
  const installed =
    process.platform === 'win32'
      ? env.ProgramData === undefined
        ? null
        : join(env.ProgramData, 'se-bridge', 'bridge.yaml')
      : '/etc/se-bridge/bridge.yaml';
  return { variable: 'SE_BRIDGE_CONFIG', local: 'config/bridge.yaml', installed };
}

/** The relay's: $SE_BRIDGE_RELAY_CONFIG, then config/relay.yaml. */
export const RELAY_PLACES: ConfigPlaces = { variable: 'SE_BRIDGE_RELAY_CONFIG', local: 'config/relay.yaml', installed: null };

/** NoConfigFile: there is no configuration file in any place a command looks; it names each, in order. */
export class NoConfigFile extends BridgeError<'CONFIG_INVALID'> {
  constructor(places: ConfigPlaces, cwd: string) {
    const looked = [
      '--config FILE: not given',
      `$${places.variable}: not set`,
      `${places.local}: not found (in ${cwd})`,
      ...(places.installed === null ? [] : [`${places.installed}: not found`]),
    ];
    super(
      'CONFIG_INVALID',
      `no configuration file; looked, in order, at:\n  ${looked.join('\n  ')}\nName one with --config FILE or $${places.variable}.`,
    );
  }
}

/**
 * resolveConfigPath: `--config`, else the variable (`$SE_BRIDGE_CONFIG`), else the file in the
 * working directory (`config/bridge.yaml`), else the installed service's (/etc/se-bridge/bridge.yaml):
 * on a VM a command finds the daemon's configuration. A file named by the flag or the variable is
 * taken as it is (reading it says when it is missing); with none, and no file in either place,
 * NoConfigFile names every place looked at.
 */
export function resolveConfigPath(
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  places: ConfigPlaces = bridgePlaces(env),
): string {
  const chosen = flag ?? (env[places.variable] || undefined);
  if (chosen !== undefined) return chosen;
  if (existsSync(places.local)) return places.local;
  if (places.installed !== null && existsSync(places.installed)) return places.installed;
  throw new NoConfigFile(places, process.cwd());
}

/** A configuration file is a few KiB; anything past this is a mistake or an attack, refused before it is parsed. */
const MAX_CONFIG_BYTES = 1024 * 1024;

export interface LoadOptions {
  readonly needs?: Needs;
}

export function loadConfigFile(path: string, env: NodeJS.ProcessEnv = process.env, options: LoadOptions = {}): BridgeConfig {
  return parseConfigText(readConfigText(path), path, env, options);
}

function readConfigText(path: string): string {
  let text: string;
  try {
    const size = statSync(path).size;
    if (size > MAX_CONFIG_BYTES)
      throw new ConfigError(path, [`(file): is ${size} bytes; a configuration file may have at most ${MAX_CONFIG_BYTES}`]);
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(path, [`(file): cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`]);
  }
  return text;
}

/**
 * loadFileWith reads another configuration file (the relay's) with the same rules: the size
 * limit, YAML without alias bombs, `${NAME}` expansion, LOG_LEVEL, every problem with its path.
 */
export function loadFileWith<S extends z.ZodType>(
  schema: S,
  path: string,
  env: NodeJS.ProcessEnv = process.env,
  options: LoadOptions = {},
): z.infer<S> {
  return validateWith(schema, readYaml(readConfigText(path), path, env, options.needs), path);
}

export function parseConfigText(
  text: string,
  source: string,
  env: NodeJS.ProcessEnv = process.env,
  options: LoadOptions = {},
): BridgeConfig {
  return validateExpanded(readYaml(text, source, env, options.needs), source);
}

/** readYaml parses a configuration text and expands it, applying the environment overrides. */
function readYaml(text: string, source: string, env: NodeJS.ProcessEnv, needs?: Needs): Expanded {
  if (text.length > MAX_CONFIG_BYTES)
    throw new ConfigError(source, [`(file): is ${text.length} characters; a configuration file may have at most ${MAX_CONFIG_BYTES}`]);
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      source,
      doc.errors.map(
        (e) =>
          `(yaml) line ${e.linePos?.[0]?.line ?? '?'}, column ${e.linePos?.[0]?.col ?? '?'}: ${e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '')}`,
      ),
    );
  }
  let raw: unknown;
  try {
    // yaml refuses documents whose aliases would expand past a sane size (an "alias bomb")
    raw = doc.toJS({ maxAliasCount: 100 }) ?? {};
  } catch (err) {
    throw new ConfigError(source, [`(yaml): ${messageOf(err)}`]);
  }
  return expandAll(raw, env, needs);
}

/** expandAll expands `${NAME}` and applies the overrides; its problems are reported with the schema's. */
function expandAll(raw: unknown, env: NodeJS.ProcessEnv, needs?: Needs): Expanded {
  const out = expandVariables(raw, env, needs);
  applyEnvOverrides(out.expanded, env);
  return out;
}

export function validateConfig(raw: unknown, source: string, env: NodeJS.ProcessEnv = process.env): BridgeConfig {
  return validateExpanded(expandAll(raw, env), source);
}

function validateWith<S extends z.ZodType>(schema: S, input: Expanded, source: string): z.infer<S> {
  withPlaceholders(schema, input);
  const { expanded, problems } = input;
  const result = schema.safeParse(expanded, { reportInput: true });
  // a key whose variable is not set is said once: not again as a value the schema refuses
  const unset = new Set(problems.map((p) => p.slice(0, p.indexOf(': '))));
  if (!result.success)
    problems.push(...formatIssues(result.error.issues, schema, expanded).filter((p) => !unset.has(p.slice(0, p.indexOf(': ')))));
  // a published secret is said with every other problem, not only once the rest is right
  problems.push(...publishedSecretProblems(schema, result.success ? result.data : expanded));
  if (problems.length > 0) throw new ConfigError(source, problems, expanded);
  return result.data as z.infer<S>;
}

/** validateExpanded: the schema's problems and those between sections, all at once. */
function validateExpanded(input: Expanded, source: string): BridgeConfig {
  let config: BridgeConfig | null = null;
  let problems: readonly string[] = [];
  try {
    config = validateWith(BridgeConfig, input, source);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems = err.problems;
  }
  const paths = new Set(problems.map((p) => p.slice(0, p.indexOf(': '))));
  const all = [...problems, ...crossProblems(input.expanded, (path) => paths.has(path))];
  if (all.length > 0 || config === null) throw new ConfigError(source, all, input.expanded);
  return withModulesFrom(config, source);
}

function applyEnvOverrides(raw: unknown, env: NodeJS.ProcessEnv): void {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return;
  const root = raw as Record<string, unknown>;
  const section = (key: string): Record<string, unknown> | null => {
    const v = root[key];
    if (v === undefined) return (root[key] = {});
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  };
  if (env.SE_BRIDGE_IMDS_ENDPOINT) {
    const imds = section('imds');
    if (imds) imds.endpoint = env.SE_BRIDGE_IMDS_ENDPOINT;
  }
  if (env.LOG_LEVEL) {
    const log = section('log');
    if (log) log.level = env.LOG_LEVEL;
  }
}

/**
 * withModulesFrom makes the file of each external sink (`type: module`, `module: ./x.js`)
 * relative to the configuration file, as a reader of the file expects, not to the directory
 * the daemon happens to start in.
 */
function withModulesFrom(config: BridgeConfig, source: string): BridgeConfig {
  if (!existsSync(source)) return config;
  for (const sink of config.sinks) {
    if (sink.type === 'module' && sink.module.startsWith('.')) sink.module = resolve(dirname(source), sink.module);
  }
  return config;
}

/**
 * checkExternalSinks loads the module of every external sink (`type: module`) and checks its
 * `config` block with the module's own schema, reporting each problem by its path like every
 * other configuration problem: a missing module, a module without the sink contract, or
 * settings the module refuses.
 */
async function externalSinkProblems(sinks: readonly unknown[], source: string): Promise<string[]> {
  const problems: string[] = [];
  for (const [i, sink] of sinks.entries()) {
    const s = sink as { type?: unknown; module?: unknown; config?: unknown } | null;
    if (s?.type !== 'module' || typeof s.module !== 'string' || s.module === '') continue;
    const specifier = s.module.startsWith('.') && existsSync(source) ? resolve(dirname(source), s.module) : s.module;
    try {
      await validateSinkConfig(await loadExternalSink(specifier), s.config);
    } catch (err) {
      if (!(err instanceof SinkModuleError)) throw err;
      problems.push(...err.problems.map((p) => `sinks[${i}].${p}`));
    }
  }
  return problems;
}

/**
 * loadConfig reads, validates and completes a configuration file, external sinks and webhook
 * templates included. Every problem is reported at once: the modules of external sinks are
 * checked, and the templates compiled, even when the rest of the file has problems of its own.
 */
export async function loadConfig(path: string, env: NodeJS.ProcessEnv = process.env, options: LoadOptions = {}): Promise<BridgeConfig> {
  let config: BridgeConfig | null = null;
  let problems: string[] = [];
  let sinks: unknown = [];
  try {
    config = loadConfigFile(path, env, options);
    sinks = config.sinks;
  } catch (err) {
    if (!(err instanceof ConfigError) || err.input === undefined) throw err;
    problems = [...err.problems];
    sinks = typeof err.input === 'object' && err.input !== null ? (err.input as { sinks?: unknown }).sinks : undefined;
  }
  problems.push(...(await externalSinkProblems(Array.isArray(sinks) ? sinks : [], path)));
  problems.push(...(await sinkProblems(Array.isArray(sinks) ? sinks : [])));
  if (problems.length > 0 || config === null) throw new ConfigError(path, problems);
  return config;
}
