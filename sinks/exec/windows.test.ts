/**
 * How the exec sink starts a command on Windows (sinks/exec/windows.ts), checked here by reading
 * the command line back the way cmd.exe and a batch file do (no cmd.exe runs on this machine; the
 * model below follows cmd's documented phases, and `npm run test:windows` runs a real .cmd hook
 * under Wine):
 *
 * 1. `/s /c "<line>"`: the first and the last quote go, the rest is the line;
 * 2. percent expansion, inside quotes too: `%NAME%` of a defined variable is its value,
 *    `%cd:~,%` an empty substring of the current folder, an undefined one stays as written;
 * 3. quotes and carets: a `"` toggles quoting; outside quotes `^` escapes the next character and
 *    `&`, `|`, `<`, `>` end the command (here: the check fails); delayed expansion is off;
 * 4. the batch file splits what follows its name into %1, %2… at spaces, tabs, commas, semicolons
 *    and equals signs outside quotes, quotes kept; `%~1` removes one pair of surrounding quotes.
 */
import { describe, expect, it } from 'vitest';
import { batchQuoted, UnquotableArgument, windowsLaunch } from './windows.ts';
import { validateConfig } from '../../src/config/load.ts';

const ENV: Record<string, string> = { PATH: 'C:\\Windows\\system32', cd: 'C:\\hooks', calc: 'EXPANDED' };

/** expand: cmd's percent expansion of a command line (not a batch file's own lines). */
function expand(line: string): string {
  let out = '';
  let i = 0;
  while (i < line.length) {
    if (line[i] !== '%') {
      out += line[i++];
      continue;
    }
    const j = line.indexOf('%', i + 1);
    const name = j === -1 ? '' : line.slice(i + 1, j);
    const sub = /^([^:]+):~(-?\d*),(-?\d*)$/.exec(name);
    if (sub !== null && ENV[sub[1]!] !== undefined) {
      const v = ENV[sub[1]!]!;
      out += sub[3] === '' ? '' : v.slice(Number(sub[2] || 0), Number(sub[3]));
      i = j + 1;
    } else if (name !== '' && ENV[name] !== undefined) {
      out += ENV[name];
      i = j + 1;
    } else {
      out += '%';
      i += 1;
    }
  }
  return out;
}

/** unescape: cmd's caret and quote phase; throws on an operator outside quotes (it would run something else). */
function unescape(line: string): string {
  let out = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === '"') quoted = !quoted;
    else if (!quoted && c === '^') {
      out += line[++i] ?? '';
      continue;
    } else if (!quoted && /[&|<>]/.test(c)) throw new Error(`cmd would read ${c} as an operator at ${i} in ${line}`);
    out += c;
  }
  return out;
}

/** batchArgs: %~0, %~1… as the batch file reads them. */
function batchArgs(line: string): string[] {
  const out: string[] = [];
  let arg = '';
  let quoted = false;
  let has = false;
  for (const c of line) {
    if (c === '"') quoted = !quoted;
    if (!quoted && /[ \t,;=]/.test(c)) {
      if (has) out.push(arg);
      arg = '';
      has = false;
      continue;
    }
    arg += c;
    has = true;
  }
  if (has) out.push(arg);
  return out.map((a) => (a.length >= 2 && a.startsWith('"') && a.endsWith('"') ? a.slice(1, -1) : a));
}

/** readBack: what a batch file started by windowsLaunch sees as %~0, %~1… */
function readBack(args: readonly string[]): string[] {
  expect(args.slice(0, 5)).toEqual(['/e:ON', '/v:OFF', '/d', '/s', '/c']);
  const line = args[5]!;
  expect(line.startsWith('"') && line.endsWith('"')).toBe(true);
  return batchArgs(unescape(expand(line.slice(1, -1))));
}

describe('exec on Windows', () => {
  it('starts a program as is', () => {
    expect(windowsLaunch(['C:\\tools\\drain.exe', '--graceful'])).toEqual({
      file: 'C:\\tools\\drain.exe',
      args: ['--graceful'],
      verbatim: false,
    });
  });

  it('starts a batch file through cmd.exe with AutoRun and delayed expansion off, each argument read back whole, none read as cmd syntax', () => {
    const exact = [
      'plain',
      'two words',
      'a&b|c>d<e',
      'x" & calc & "'.replace(/"/g, ''),
      '50% (%PATH%) %calc%',
      '%cd:~0,2%',
      'C:\\dir with space\\x',
      '^caret!bang',
      '',
      'semi;colon,comma=equals',
      'tab\there',
    ];
    for (const file of ['C:\\hooks\\hook.cmd', 'C:\\hooks\\HOOK.BAT']) {
      const l = windowsLaunch([file, ...exact], 'C:\\Windows\\system32\\cmd.exe');
      expect(l.file).toBe('C:\\Windows\\system32\\cmd.exe');
      expect(l.verbatim).toBe(true);
      expect(readBack(l.args)).toEqual([file, ...exact]);
    }
  });

  it('"BatBadBut": a quote cannot end the quoting, a percent sign expands nothing, with the argument kept in one', () => {
    const hostile = 'x" & calc & "';
    const back = readBack(windowsLaunch(['C:\\hooks\\hook.cmd', hostile, 'next']).args);
    // one argument, the & literal, the quotes doubled (the only way a batch file holds one)
    expect(back).toEqual(['C:\\hooks\\hook.cmd', 'x"" & calc & ""', 'next']);
    expect(readBack(windowsLaunch(['h.cmd', '%calc%', '%PATH:x=y%']).args)).toEqual(['h.cmd', '%calc%', '%PATH:x=y%']);
  });

  it('doubles the backslashes before a quote and before the closing quote, so "%~1" passed on reads back whole', () => {
    expect(batchQuoted('C:\\dir with space\\')).toBe('"C:\\dir with space\\\\"');
    expect(batchQuoted('back\\"slash')).toBe('"back\\\\""slash"');
    expect(batchQuoted('C:\\plain\\path.txt')).toBe('C:\\plain\\path.txt');
    expect(batchQuoted('')).toBe('""');
  });

  it('refuses a line break or a NUL (cmd ends its line there), and so does the configuration of a batch hook', () => {
    for (const bad of ['one\ntwo', 'cr\rlf', 'nul\0']) {
      expect(() => windowsLaunch(['C:\\hooks\\hook.cmd', bad])).toThrow(UnquotableArgument);
    }
    expect(() => windowsLaunch(['C:\\hooks\\hook.exe', 'one\ntwo'])).not.toThrow();
    expect(() => validateConfig({ sinks: [{ name: 'h', type: 'exec', command: ['C:\\hooks\\hook.cmd', 'a\nb'] }] }, 't', {})).toThrow(
      /sinks\[0\]\.command\[1\]: a batch file \(\.cmd, \.bat\) cannot take a line break in an argument/,
    );
    expect(() => validateConfig({ sinks: [{ name: 'h', type: 'exec', command: ['/bin/hook.sh', 'a\nb'] }] }, 't', {})).not.toThrow();
  });
});
