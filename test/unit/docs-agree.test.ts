/**
 * What the commands say of themselves and what the documentation says agree: every option of
 * every verb's --help is in the top-level help's line for that verb and in docs/commands.md's
 * row for it; the scenarios the demo plays are all described in docs/simulator.md, and README
 * counts them right.
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

  it.each(verbs)('%s: every option of its --help is in the top-level help and in docs/commands.md', (verb) => {
    const options = optionsOf(USAGES[verb]!);
    // the top-level help's lines for the verb (a long one goes on, indented, on the next line)
    const lines = top.split('\n');
    const mine = lines
      .map((l, i) =>
        l.startsWith(`  ${verb} `) || l === `  ${verb}` ? [l, /^ {20,}\S/.test(lines[i + 1] ?? '') ? '' : (lines[i + 1] ?? '')] : [],
      )
      .flat()
      .join('\n');
    expect(mine, `the top-level help has a line for ${verb}`).not.toBe('');
    const rows = commands
      .split('\n')
      .filter((l) => l.startsWith(`| \`${verb}`))
      .join('\n');
    expect(rows, `docs/commands.md has a row for ${verb}`).not.toBe('');
    for (const o of options) {
      expect(mine, `se-bridge --help: ${verb} ${o}`).toContain(o);
      expect(rows, `docs/commands.md: ${verb} ${o}`).toContain(o);
    }
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
