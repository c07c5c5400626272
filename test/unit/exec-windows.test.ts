/**
 * How the exec sink starts a command on Windows (sinks/exec-windows.ts), checked here by reading
 * the command line back the way Windows does: cmd.exe removes each `^` escape, then the batch
 * file's arguments are split as CommandLineToArgvW splits them. Run for real under Wine by
 * `npm run test:windows`.
 */
import { describe, expect, it } from 'vitest';
import { windowsLaunch } from '../../sinks/exec-windows.ts';

/** argv: the arguments Windows reads back from a command line (CommandLineToArgvW's rules). */
function argv(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < line.length) {
    while (line[i] === ' ') i += 1;
    if (i >= line.length) break;
    let arg = '';
    let quoted = false;
    for (; i < line.length && (quoted || line[i] !== ' '); i += 1) {
      if (line[i] === '\\') {
        let n = 0;
        while (line[i] === '\\') {
          n += 1;
          i += 1;
        }
        if (line[i] === '"') {
          arg += '\\'.repeat(Math.floor(n / 2));
          if (n % 2 === 1) arg += '"';
          else quoted = !quoted;
        } else {
          arg += '\\'.repeat(n);
          i -= 1;
        }
      } else if (line[i] === '"') quoted = !quoted;
      else arg += line[i];
    }
    out.push(arg);
  }
  return out;
}

/** cmd: what cmd.exe does to `/s /c "<line>"` before it runs the line: the outer quotes go, each ^ escape is undone. */
function cmd(args: readonly string[]): string {
  expect(args.slice(0, 3)).toEqual(['/d', '/s', '/c']);
  const line = args[3]!;
  expect(line.startsWith('"') && line.endsWith('"')).toBe(true);
  return line.slice(1, -1).replace(/\^(.)/g, '$1');
}

describe('exec on Windows', () => {
  it('starts a program as is', () => {
    expect(windowsLaunch(['C:\\tools\\drain.exe', '--graceful'])).toEqual({
      file: 'C:\\tools\\drain.exe',
      args: ['--graceful'],
      verbatim: false,
    });
  });

  it('starts a batch file through cmd.exe, every argument read back as it was, none read as cmd syntax', () => {
    const hostile = [
      'plain',
      'two words',
      'a&b|c>d<e',
      '50% (%PATH%)',
      'say "hi"',
      'C:\\dir with space\\',
      'trail\\\\',
      '^caret!bang',
      '',
      'semi;colon,comma=equals',
      'back\\"slash-quote',
    ];
    for (const file of ['C:\\hooks\\hook.cmd', 'C:\\hooks\\HOOK.BAT']) {
      const l = windowsLaunch([file, ...hostile], 'C:\\Windows\\system32\\cmd.exe');
      expect(l.file).toBe('C:\\Windows\\system32\\cmd.exe');
      expect(l.verbatim).toBe(true);
      const line = cmd(l.args);
      expect(argv(line)).toEqual([file, ...hostile]);
      // in the line cmd.exe parses, every metacharacter of an argument is escaped
      expect(l.args[3]).not.toMatch(/(^|[^^])[&|<>]/);
    }
  });
});
