/**
 * The import graph of the project's sources, and the layer rule checked against it
 * (docs/architecture.md, "Layers"): every import points down the list of layers, and no files
 * import each other in a circle, type-only and dynamic imports included.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

/**
 * The layers, bottom first: the folders of src/ (and its two top files, the public entries
 * `api` and `kit`), with the built-in sinks (the top-level sinks/ folder) between the public
 * entries they are written against and the registry that names them. A file may import files of
 * its own layer or of layers below.
 */
export const LAYERS = [
  'lib',
  'calendar',
  'imds',
  'pipeline',
  'cloudevents',
  'store',
  'present',
  'azure',
  'kube',
  'sinks',
  'health',
  'api',
  'kit',
  'builtin-sinks',
  'registry',
  'delivery',
  'observability',
  'approval',
  'control',
  'drill',
  'calendar/watch',
  'fleet',
  'fleet/inbox',
  'fleet/budget/stores',
  'fleet/budget',
  'fleet/view',
  'config',
  'daemon',
  'relay',
  'simulator',
  'simulator/servicebus',
  'commands',
] as const;

/** The files of src/ the built-in sinks may import: the two public entries. */
export const PUBLIC_API = ['src/api.ts', 'src/kit.ts'];

/** Graph maps each file (a path relative to the root, with /) to the project files it imports. */
export type Graph = Map<string, string[]>;

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}\/[^'"]+)\1/g;

/** importsOf lists the relative specifiers a source text imports or re-exports. */
export function importsOf(text: string): string[] {
  const withoutComments = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  return [...withoutComments.matchAll(SPECIFIER)].map((m) => m[2]!);
}

function walk(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) walk(path, out);
    // a sink's tests sit beside it (sinks/<type>/*.test.ts) but are not part of what ships
    else if (/\.(ts|js)$/.test(entry.name) && !/\.test\.ts$/.test(entry.name)) out.push(path);
  }
  return out;
}

/** readGraph reads every .ts/.js file under `dirs` (relative to `root`), tests and their kits left out. */
export function readGraph(root: string, dirs: readonly string[]): Graph {
  const graph: Graph = new Map();
  for (const dir of dirs) {
    for (const file of walk(join(root, dir))) {
      const from = relative(root, file).split('\\').join('/');
      // data (package.json for the version) is not code and has no layer
      const code = importsOf(readFileSync(file, 'utf8')).filter((s) => !s.endsWith('.json'));
      const targets = code.map((s) =>
        normalize(join(dirname(from), s))
          .split('\\')
          .join('/'),
      );
      graph.set(from, targets);
    }
  }
  return graph;
}

/** layerOf names the layer of a file under src/ (its folder, `fleet/budget` for src/fleet/budget/x.ts, or `api` for src/api.ts) or sinks/ (`builtin-sinks`), or null. */
export function layerOf(file: string): string | null {
  if (file.startsWith('sinks/')) return 'builtin-sinks';
  const m = /^src\/(?:(.+)\/[^/]+$|([^/]+)\.ts$)/.exec(file);
  if (m === null) return null;
  return m[1] ?? m[2]!.replace(/\.ts$/, '');
}

/** privateImports lists every import from a built-in sink (sinks/) into src/ other than through the public entries. */
export function privateImports(graph: Graph): Violation[] {
  return [...graph].flatMap(([from, targets]) =>
    from.startsWith('sinks/')
      ? targets
          .filter((to) => !to.startsWith('sinks/') && !PUBLIC_API.includes(to))
          .map((to) => ({ from, to, why: 'a sink imports src/ other than through src/api.ts and src/kit.ts' }))
      : [],
  );
}

export interface Violation {
  readonly from: string;
  readonly to: string;
  readonly why: string;
}

/** upwardImports lists every import from a file of src/ into a higher layer, or into no layer at all. */
export function upwardImports(graph: Graph, layers: readonly string[] = LAYERS): Violation[] {
  const out: Violation[] = [];
  for (const [from, targets] of graph) {
    const fromLayer = layerOf(from);
    if (fromLayer === null) continue;
    const rank = layers.indexOf(fromLayer);
    for (const to of targets) {
      const toLayer = layerOf(to);
      if (rank < 0) out.push({ from, to, why: `${fromLayer} is not a layer` });
      else if (toLayer === null) out.push({ from, to, why: 'src/ imports from outside src/ and sinks/' });
      else if (layers.indexOf(toLayer) < 0) out.push({ from, to, why: `${toLayer} is not a layer` });
      else if (layers.indexOf(toLayer) > rank) out.push({ from, to, why: `${fromLayer} imports ${toLayer}, a higher layer` });
    }
  }
  return out;
}

/** cycles lists every set of files that import each other in a circle (Tarjan's strongly connected components). */
export function cycles(graph: Graph): string[][] {
  let index = 0;
  const stack: string[] = [];
  const on = new Set<string>();
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
}

/** folderOf is the folder of a file (`src/daemon`, `sinks/webhook`), or `src` for a file at the top of src/. */
export const folderOf = (file: string): string => file.slice(0, Math.max(0, file.lastIndexOf('/')));

/** subtreeOf is the top folder of a file under src/ or sinks/ (`src/fleet` for src/fleet/budget/stores/blob.ts), the whole subtree as one. */
export const subtreeOf = (file: string): string => /^[^/]+\/[^/]+(?=\/)/.exec(file)?.[0] ?? folderOf(file);

/** folderGraph is the graph of folders: one folder imports another when any of its files imports one of the other's. */
export function folderGraph(graph: Graph, of: (file: string) => string = folderOf): Graph {
  const out = new Map<string, Set<string>>();
  for (const [from, targets] of graph) {
    const a = of(from);
    const set = out.get(a) ?? new Set<string>();
    out.set(a, set);
    for (const to of targets) if (of(to) !== a) set.add(of(to));
  }
  return new Map([...out].map(([k, v]) => [k, [...v].sort()]));
}
