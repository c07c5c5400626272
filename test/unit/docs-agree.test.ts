/**
 * What the commands say of themselves and what the documentation says agree. For every verb:
 * the options its parser takes, its --help (with its sub-verbs'), the top-level help's line for it
 * and docs/commands.md's rows for it name the same options, each of them in every other; the
 * defaults and the exit codes its rows state are those its --help states, and the other way round.
 * Also: the scenarios the demo plays are all described in docs/simulator.md, and README counts
 * them right.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { USAGES } from '../../src/commands/usage.ts';
import { SCENARIOS } from '../../src/simulator/scenarios.ts';
import { CLI, ROOT } from '../helpers.ts';

const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const optionsOf = (text: string) =>
  [...new Set([...text.matchAll(/(?<![\w-])--[a-z][a-z-]*/g)].map((m) => m[0]))].filter((o) => o !== '--help');

describe('the help and the documentation', () => {
  const top = spawnSync(process.execPath, [CLI, '--help'], { encoding: 'utf8', timeout: 30_000 }).stdout;
  const commands = read('docs/commands.md');
  const verbs = Object.keys(USAGES).filter((v) => !v.includes(' '));

  /** helpOf: the verb's --help, with its sub-verbs' (`fleet status`, `dead-letters list`). */
  const helpOf = (verb: string) =>
    Object.entries(USAGES)
      .filter(([v]) => v === verb || v.startsWith(`${verb} `))
      .map(([, text]) => text)
      .join('\n');
  /** topOf: the top-level help's lines for the verb (a long one goes on, indented, on the next line). */
  const topOf = (verb: string) => {
    const lines = top.split('\n');
    return lines
      .map((l, i) => (l.startsWith(`  ${verb} `) || l === `  ${verb}` ? [l, /^ +\[/.test(lines[i + 1] ?? '') ? lines[i + 1]! : ''] : []))
      .flat()
      .join('\n');
  };
  /** rowsOf: the rows for the verb of docs/commands.md's table of commands. */
  const table = commands.slice(commands.indexOf('| command | what it does |')).split('\n\n')[0]!;
  const rowsOf = (verb: string) =>
    table
      .split('\n')
      .filter((l) => l.startsWith(`| \`${verb}`) && /^\| `[a-z-]+/.exec(l)?.[0] === `| \`${verb}`)
      .join('\n');
  /** parsedBy: the options the verb's module gives its argument parser. */
  const parsedBy = (verb: string) => {
    const source = read(`src/commands/${verb}.ts`);
    const own = [...source.matchAll(/'?([a-z][a-z-]*)'?: \{ type: '(?:string|boolean)'/g)].map((m) => `--${m[1]!}`);
    const config = /\bCONFIG_OPTIONS\b/.test(source) ? ['--config', '--env-file'] : [];
    return [...new Set([...own, ...config])];
  };
  /** defaultsOf: the values a text says are defaults ("(default 14)", "Reboot (default)"). */
  const defaultsOf = (text: string) =>
    new Set(
      [...text.matchAll(/\(default:? ([^;),]+)|\b([\w.:-]+) \(default\)/g)].map((m) =>
        (m[1] ?? m[2]!).replace(/[`.:]+$/, '').replace(/^`/, ''),
      ),
    );
  /** exitsOf: the exit codes a text names ("exit 2 without", "exits 1", "1 when something would"). */
  const exitsOf = (text: string) => new Set([...text.matchAll(/\bexits? (\d)\b|\b(\d) when\b/gi)].map((m) => m[1] ?? m[2]!));

  it.each(verbs)('%s: its parser, its --help, the top-level help and docs/commands.md name the same options', (verb) => {
    const help = optionsOf(helpOf(verb)).sort();
    const mine = topOf(verb);
    const rows = rowsOf(verb);
    expect(mine, `the top-level help has a line for ${verb}`).not.toBe('');
    expect(rows, `docs/commands.md has a row for ${verb}`).not.toBe('');
    expect(help.length, `${verb} --help names an option, or the verb takes none`).toBe(parsedBy(verb).length);
    expect({ verb, options: help }).toEqual({ verb, options: parsedBy(verb).sort() });
    expect({ verb, options: optionsOf(mine).sort() }).toEqual({ verb, options: help });
    expect({ verb, options: optionsOf(rows).sort() }).toEqual({ verb, options: help });
  });

  it("every verb that reads a configuration, the bridge's or the relay's, takes --env-file", () => {
    const readers = verbs.filter((v) => parsedBy(v).some((o) => o === '--config' || o === '--relay-config'));
    expect(readers.length).toBeGreaterThan(8);
    expect(readers.filter((v) => !parsedBy(v).includes('--env-file'))).toEqual([]);
  });

  it.each(verbs)('%s: its --help and docs/commands.md state the same defaults and exit codes', (verb) => {
    const help = helpOf(verb);
    const rows = rowsOf(verb);
    expect({ verb, defaults: [...defaultsOf(rows)].sort() }).toEqual({ verb, defaults: [...defaultsOf(help)].sort() });
    expect({ verb, exits: [...exitsOf(rows)].sort() }).toEqual({ verb, exits: [...exitsOf(help)].sort() });
  });

  it('the checks see what they look for: options, defaults and exit codes in a text', () => {
    expect(optionsOf('`status [--config FILE] [--json]`; `--help`')).toEqual(['--config', '--json']);
    expect(
      [...defaultsOf('--days N (default 14); Reboot (default), (default: a new folder) or (default `degraded-hardware`)')].sort(),
    ).toEqual(['14', 'Reboot', 'a new folder', 'degraded-hardware']);
    expect([...exitsOf('Exit 1 when it fails; exits 2 without one; exit 0 when nothing would, 1 when something would')].sort()).toEqual([
      '0',
      '1',
      '2',
    ]);
    expect(parsedBy('calendar')).toEqual(['--json', '--days', '--from', '--config', '--env-file']);
  });

  it('names every scenario in docs/simulator.md, and README counts them right', () => {
    const simulator = read('docs/simulator.md');
    for (const s of SCENARIOS) expect(simulator, s.name).toContain(`\`${s.name}\``);
    const words = [
      'zero',
      'one',
      'two',
      'three',
      'four',
      'five',
      'six',
      'seven',
      'eight',
      'nine',
      'ten',
      'eleven',
      'twelve',
      'thirteen',
      'fourteen',
      'fifteen',
      'sixteen',
      'seventeen',
      'eighteen',
      'nineteen',
      'twenty',
    ];
    const said = /plays all (\w+) scenarios/.exec(read('README.md'))?.[1];
    expect(said).toBe(words[SCENARIOS.length]);
  });
});
