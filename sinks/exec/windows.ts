/**
 * How the exec sink starts a command on Windows. Node refuses to start a batch file (`.cmd`,
 * `.bat`) without a shell (since its April 2024 security release: EINVAL), and the way Windows
 * administrators write hooks is exactly a batch file. So a batch file is started through
 * cmd.exe, and its line is quoted by cmd's rules, not CommandLineToArgvW's (the "BatBadBut"
 * class of flaws: a batch file splits its own arguments, and cmd expands variables inside
 * quotes):
 *
 * - `cmd.exe /e:ON /v:OFF /d /s /c "<line>"`: no AutoRun, delayed expansion (`!VAR!`) off, the
 *   outer quotes stripped and the rest taken verbatim;
 * - every argument that is not plainly safe is put in double quotes, in which `&`, `|`, `<`, `>`,
 *   `^`, `(`, `)` and the separators are literal; a `"` inside is doubled (`""`), the only way a
 *   batch file can hold one, with the backslashes before it doubled; backslashes before the
 *   closing quote are doubled, so `"%~1"` passed on to a program reads back whole;
 * - `%` is written `%%cd:~,%`: cmd expands `%VAR%` even inside quotes, and this turns every
 *   percent sign into an empty substring of `%cd%` followed by a literal `%`, so no variable of the
 *   argument is ever expanded;
 * - a line break ends a cmd line whatever the quoting: an argument holding one is refused.
 *
 * The batch file reads its arguments with `%~1` (quotes removed). Anything else starts as is.
 */
import { BridgeError } from '../../src/api.ts';

export interface Launch {
  readonly file: string;
  readonly args: readonly string[];
  /** Pass `args` to Windows as written (windowsVerbatimArguments). */
  readonly verbatim: boolean;
}

/** UnquotableArgument: a batch file cannot be given this argument safely (a line break, a NUL). */
export class UnquotableArgument extends BridgeError<'EXEC_UNQUOTABLE'> {
  constructor(message: string) {
    super('EXEC_UNQUOTABLE', message);
  }
}

const BATCH = /\.(cmd|bat)$/i;
/** isBatchFile: Windows starts this through cmd.exe. */
export function isBatchFile(file: string): boolean {
  return BATCH.test(file);
}

/** Characters an argument may hold unquoted: letters, digits and a few symbols cmd never reads as syntax. */
const PLAIN = /^[A-Za-z0-9#$*+\-./:?@\\_]+$/;
/** What cmd cannot carry in a line, quoted or not. */
const UNQUOTABLE = /[\r\n\0]/;

/** windowsLaunch: how to start `command` on Windows. */
export function windowsLaunch(command: readonly string[], comspec: string = process.env.ComSpec ?? 'cmd.exe'): Launch {
  const [file, ...args] = command;
  if (file === undefined || !isBatchFile(file)) return { file: file ?? '', args, verbatim: false };
  if (file.includes('"')) throw new UnquotableArgument(`a batch file's path cannot hold a double quote: ${file}`);
  const line = [batchQuoted(file), ...args.map(batchQuoted)].join(' ');
  return { file: comspec, args: ['/e:ON', '/v:OFF', '/d', '/s', '/c', `"${line}"`], verbatim: true };
}

/** batchQuoted: one argument of a batch file's line, by cmd's rules (see the file's comment). */
export function batchQuoted(arg: string): string {
  if (UNQUOTABLE.test(arg)) throw new UnquotableArgument('a batch file cannot be given an argument holding a line break or a NUL');
  const quote = !PLAIN.test(arg) || arg.endsWith('\\');
  let out = '';
  let slashes = 0;
  for (const ch of arg) {
    if (ch === '\\') {
      slashes += 1;
      out += ch;
      continue;
    }
    if (ch === '"') out += `${'\\'.repeat(slashes)}"`;
    if (ch === '%') out += '%%cd:~,';
    out += ch;
    slashes = 0;
  }
  return quote ? `"${out}${'\\'.repeat(slashes)}"` : out;
}
