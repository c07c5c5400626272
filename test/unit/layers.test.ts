import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  cycles,
  folderGraph,
  importsOf,
  layerOf,
  privateImports,
  readGraph,
  subtreeOf,
  upwardImports,
  type Graph,
} from '../../testkit/import-graph.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('the layer rule', () => {
  const graph = readGraph(root, ['src', 'sinks', 'testkit', 'bench', 'scripts']);

  it('reads the whole source tree', () => {
    const files = [...graph.keys()];
    expect(files).toContain('src/commands/cli.ts');
    expect(files).toContain('src/lib/time.ts');
    expect(files.filter((f) => f.startsWith('src/')).length).toBeGreaterThan(50);
  });

  it('has no import from src/ into a higher layer or outside src/', () => {
    expect(upwardImports(graph)).toEqual([]);
  });

  it('lets the built-in sinks reach src/ only through the public entries, and src/ reach them only through the registry', () => {
    expect([...graph.keys()].filter((f) => f.startsWith('sinks/')).length).toBeGreaterThan(10);
    expect(privateImports(graph)).toEqual([]);
    const intoSinks = [...graph].flatMap(([from, to]) =>
      from.startsWith('src/') && !from.startsWith('src/registry/')
        ? to.filter((t) => t.startsWith('sinks/')).map((t) => `${from} -> ${t}`)
        : [],
    );
    expect(intoSinks).toEqual([]);
  });

  it('keeps src/sinks/ to the contract, src/ to its two public entries, and the simulator free of approvals and fleet', () => {
    expect([...graph.keys()].filter((f) => f.startsWith('src/sinks/')).sort()).toEqual(['src/sinks/classify.ts', 'src/sinks/contract.ts']);
    expect([...graph.keys()].filter((f) => /^src\/[^/]+$/.test(f)).sort()).toEqual(['src/api.ts', 'src/kit.ts']);
    const simulator = [...graph].flatMap(([from, to]) =>
      from.startsWith('src/simulator/') ? to.filter((t) => /^src\/(approval|fleet)\//.test(t)) : [],
    );
    expect(simulator).toEqual([]);
  });

  it('keeps every file of src/, sinks/ and testkit/ at 300 lines or fewer', () => {
    const long = [...graph.keys()].filter(
      (f) => /^(src|sinks|testkit)\//.test(f) && readFileSync(join(root, f), 'utf8').split('\n').length > 301,
    );
    expect(long).toEqual([]);
  });

  it('has no import cycle, between files or between folders', () => {
    expect(cycles(graph)).toEqual([]);
    const folders = folderGraph(graph);
    expect(folders.size).toBeGreaterThan(20);
    expect(cycles(folders)).toEqual([]);
  });

  it('keeps src/fleet and src/config, each with all below it, to one direction: config reads the fleet, the relay reads both', () => {
    const subtrees = folderGraph(graph, subtreeOf);
    expect(subtrees.get('src/relay')).toEqual(expect.arrayContaining(['src/config', 'src/fleet']));
    expect(subtrees.get('src/config')).toContain('src/fleet');
    // calendar/watch, a feature, stands above the calendar's rules: the one subtree that spans layers
    const spanning = cycles(subtrees).filter((c) => c.some((f) => /^src\/(fleet|config|relay)$/.test(f)));
    expect(spanning).toEqual([]);
  });

  it('keeps lib/ free of project imports outside lib/', () => {
    const out = [...graph].flatMap(([from, to]) => (from.startsWith('src/lib/') ? to.filter((t) => !t.startsWith('src/lib/')) : []));
    expect(out).toEqual([]);
  });

  it('has docs/architecture.md name every folder of src/ (nested ones too) and sinks/shared/, and each top file of src/, in its layer table', () => {
    const doc = readFileSync(join(root, 'docs/architecture.md'), 'utf8');
    const table = doc.slice(doc.indexOf('## Layers'), doc.indexOf('## Errors'));
    // each sink's folder has its own page instead (sinks/<type>/README.md, checked by sinks-page.test.ts)
    const folders = [
      ...new Set([...graph.keys()].filter((f) => /^src\/.+\//.test(f)).map((f) => f.slice('src/'.length, f.lastIndexOf('/')))),
      'shared',
    ];
    const tops = [...graph.keys()].filter((f) => /^src\/[^/]+\.ts$/.test(f)).map((f) => f.slice('src/'.length));
    expect(folders.length).toBeGreaterThan(15);
    expect(folders.filter((d) => !table.includes(`\`${d}/\``) && !table.includes(`\`${d}/\`:`))).toEqual([]);
    expect(tops.filter((f) => !table.includes(`| \`${f}\` |`))).toEqual([]);
  });

  it('keeps test/ out of the testkit, the benchmarks and the scripts', () => {
    const out = [...graph].flatMap(([from, to]) => to.filter((t) => t.startsWith('test/')).map((t) => `${from} -> ${t}`));
    expect(out).toEqual([]);
  });
});

describe('the import graph checker', () => {
  it('reads static, type-only, re-exported and dynamic imports, not commented ones', () => {
    const text = [
      "import { a } from './a.ts';",
      "import type { B } from '../b.ts';",
      "export { c } from './c.ts';",
      "const d = () => import('./d.ts');",
      "import './e.ts';",
      "// import { x } from './x.ts';",
      "/* import { y } from './y.ts'; */",
      "import { z } from 'zod';",
    ].join('\n');
    expect(importsOf(text)).toEqual(['./a.ts', '../b.ts', './c.ts', './d.ts', './e.ts']);
  });

  it('finds an upward import and an import from outside src/', () => {
    const g: Graph = new Map([
      ['src/lib/time.ts', ['src/imds/wire.ts']],
      ['src/imds/wire.ts', ['src/lib/time.ts']],
      ['src/sinks/x.ts', ['test/helpers.ts']],
      ['src/commands/cli.ts', ['src/commands/run.ts']],
    ]);
    expect(upwardImports(g).map((v) => `${v.from} -> ${v.to}`)).toEqual([
      'src/lib/time.ts -> src/imds/wire.ts',
      'src/sinks/x.ts -> test/helpers.ts',
    ]);
    expect(layerOf('src/commands/cli.ts')).toBe('commands');
    expect(layerOf('src/kit.ts')).toBe('kit');
    expect(layerOf('test/helpers.ts')).toBeNull();
    expect(layerOf('sinks/webhook/index.ts')).toBe('builtin-sinks');
  });

  it('finds a built-in sink that reaches past the public API', () => {
    const g: Graph = new Map([
      ['sinks/a.ts', ['src/api.ts', 'sinks/shared/b.ts']],
      ['sinks/c.ts', ['src/lib/time.ts', 'src/kit.ts']],
    ]);
    expect(privateImports(g).map((v) => `${v.from} -> ${v.to}`)).toEqual(['sinks/c.ts -> src/lib/time.ts']);
  });

  it('finds a cycle, and a file that imports itself', () => {
    const g: Graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['d']],
      ['e', ['a']],
    ]);
    expect(cycles(g)).toEqual([['a', 'b', 'c'], ['d']]);
  });

  it('finds a cycle between folders whose files import each other in no circle', () => {
    const g: Graph = new Map([
      ['src/x/a.ts', ['src/y/b.ts']],
      ['src/y/b.ts', []],
      ['src/y/c.ts', ['src/x/d.ts']],
      ['src/x/d.ts', []],
    ]);
    expect(cycles(g)).toEqual([]);
    expect(folderGraph(g)).toEqual(
      new Map([
        ['src/x', ['src/y']],
        ['src/y', ['src/x']],
      ]),
    );
    expect(cycles(folderGraph(g))).toEqual([['src/x', 'src/y']]);
  });
});
