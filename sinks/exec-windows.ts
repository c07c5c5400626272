/**
 * How the exec sink starts a command on Windows. Node refuses to start a batch file (`.cmd`,
 * `.bat`) without a shell (since its April 2024 security release: EINVAL), and the way Windows
 * administrators write hooks is exactly a batch file. So a batch file is started through
 * cmd.exe (`/d /s /c "<line>"`, the line passed verbatim), with every part of the line quoted as
 * CommandLineToArgvW reads it and every cmd.exe metacharacter escaped with `^`, so that no
 * argument (an EventId, a description) is ever read as cmd syntax. Anything else starts as is.
 */

export interface Launch {
  readonly file: string;
  readonly args: readonly string[];
  /** Pass `args` to Windows as written (windowsVerbatimArguments). */
  readonly verbatim: boolean;
}

const BATCH = /\.(cmd|bat)$/i;
/** What cmd.exe reads as syntax on a command line. */
const META = /[()[\]%!^"`<>&|;, *?]/g;

/** windowsLaunch: how to start `command` on Windows. */
export function windowsLaunch(command: readonly string[], comspec: string = process.env.ComSpec ?? 'cmd.exe'): Launch {
  const [file, ...args] = command;
  if (file === undefined || !BATCH.test(file)) return { file: file ?? '', args, verbatim: false };
  const line = [file.replace(META, '^$&'), ...args.map(quoted)].join(' ');
  return { file: comspec, args: ['/d', '/s', '/c', `"${line}"`], verbatim: true };
}

/** quoted: one argument as CommandLineToArgvW reads it back, then escaped for cmd.exe. */
function quoted(arg: string): string {
  let out = '"';
  let slashes = 0;
  for (const ch of arg) {
    if (ch === '\\') {
      slashes += 1;
      continue;
    }
    // backslashes before a quote are doubled, and the quote escaped
    out += ch === '"' ? `${'\\'.repeat(slashes * 2 + 1)}"` : `${'\\'.repeat(slashes)}${ch}`;
    slashes = 0;
  }
  // backslashes before the closing quote are doubled
  out += `${'\\'.repeat(slashes * 2)}"`;
  return out.replace(META, '^$&');
}
