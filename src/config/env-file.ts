/**
 * The service's environment file, as the CLI reads it. On a VM the secrets that `${NAME}` expands
 * live in /etc/se-bridge/se-bridge.env, which only systemd reads for the daemon (the unit's
 * `EnvironmentFile=`): a command typed in a shell reads it too, so that it sees what the daemon sees.
 *
 * The format is systemd's: `KEY=VALUE` lines; blank lines and lines starting with `#` or `;` are
 * skipped; whitespace around the key and the value is dropped; a value in double quotes may hold
 * `\"`, `\\`, `\n`, `\t` and `\$`, one in single quotes is taken as it is. The caller's own
 * environment wins over the file, so one variable can be tried out without editing it.
 * https://www.freedesktop.org/software/systemd/man/latest/systemd.exec.html#EnvironmentFile=
 */
import { readFileSync } from 'node:fs';
import { BridgeError } from '../lib/errors.ts';

/** The environment file the installed unit names (scripts/install-linux.sh, config/systemd/se-bridge.service). */
export const INSTALLED_ENV_FILE = '/etc/se-bridge/se-bridge.env';

/** The most an environment file may hold: a few KiB of secrets; past this it is a mistake. */
const MAX_ENV_FILE_BYTES = 256 * 1024;

export class EnvFileError extends BridgeError<'USAGE'> {
  constructor(message: string) {
    super('USAGE', message);
  }
}

/** What the CLI's environment came to: the variables, and what it said of the file. */
export interface CliEnvironment {
  readonly env: NodeJS.ProcessEnv;
  /** The file read; null when none was read. */
  readonly read: { readonly path: string } | null;
  /** Why the default file, which exists, could not be read (e.g. EACCES): said when a variable is then missing. */
  readonly unreadable: string | null;
}

/**
 * cliEnvironment: the caller's environment with the service's environment file under it.
 * `flag` (--env-file) must be readable; the default (`$SE_BRIDGE_ENV_FILE`, else the installed
 * unit's, on Linux) is read only when it exists, and its being unreadable is remembered, not fatal.
 */
export function cliEnvironment(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): CliEnvironment {
  const explicit = flag;
  const path = explicit ?? (env.SE_BRIDGE_ENV_FILE || undefined) ?? (process.platform === 'linux' ? INSTALLED_ENV_FILE : undefined);
  if (path === undefined) return { env, read: null, unreadable: null };
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    if (explicit !== undefined) throw new EnvFileError(`--env-file ${path}: cannot read: ${code}`);
    return { env, read: null, unreadable: code === 'ENOENT' ? null : `${path}: ${code}` };
  }
  if (text.length > MAX_ENV_FILE_BYTES) throw new EnvFileError(`${path}: is over ${MAX_ENV_FILE_BYTES} bytes; not an environment file`);
  const fromFile = parseEnvFile(text, path);
  return { env: { ...fromFile, ...env }, read: { path }, unreadable: null };
}

/** parseEnvFile reads systemd's EnvironmentFile format; a line that is not `KEY=VALUE` is an error naming it. */
export function parseEnvFile(text: string, source: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split(/\r?\n/);
  lines.forEach((line, i) => {
    const t = line.trim();
    if (t === '' || t.startsWith('#') || t.startsWith(';')) return;
    const m = /^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(t);
    if (m === null) throw new EnvFileError(`${source}, line ${i + 1}: expected KEY=VALUE`);
    out[m[1]!] = unquote(m[2]!, `${source}, line ${i + 1}`);
  });
  return out;
}

function unquote(value: string, where: string): string {
  const q = value[0];
  if (q !== '"' && q !== "'") return value;
  if (value.length < 2 || value.at(-1) !== q) throw new EnvFileError(`${where}: a quote is not closed`);
  const inner = value.slice(1, -1);
  if (q === "'") return inner;
  return inner.replace(/\\(.)/g, (_m, c: string) => (c === 'n' ? '\n' : c === 't' ? '\t' : c));
}
