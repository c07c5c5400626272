/**
 * docs/sinks.md, assembled from the sinks' own pages: sinks/README.md (the overview and its
 * table, then how to write a sink of your own), with each built-in sink's README.md in the
 * order of that table and sinks/shared/README.md (what several share) where it says. Each page
 * is written to be read where it lives; their links are rewritten to work from docs/, and a link
 * into another sink's page becomes a link into this one. `npm run docs` writes it; a test fails
 * when the committed page differs.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const SINKS_PAGE_PATH = join(ROOT, 'docs', 'sinks.md');
const MARKER = /^<!-- The sinks: .*-->\n/m;
const GENERATED = '<!-- Assembled by `npm run docs` from sinks/README.md and each sinks/<type>/README.md: edit those. -->\n';

const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

/** tableTypes: the sink types of the overview's table, in its order. */
export function tableTypes(index: string = read('sinks/README.md')): string[] {
  return [...index.matchAll(/^\| `([a-z]+)` \|/gm)].map((m) => m[1]!);
}

/** relink rewrites the relative links of a page that lives in `from` (a folder under the root) to work from docs/. */
function relink(markdown: string, from: string): string {
  let fenced = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (line.startsWith('```')) fenced = !fenced;
      if (fenced) return line;
      return line.replace(/(!?\[[^\]]*\])\(([^)\s#][^)\s]*|#[^)\s]*)\)/g, (whole, text: string, target: string) => {
        if (/^[a-z]+:/.test(target) || target.startsWith('#')) return whole;
        const [path = '', fragment] = target.split('#');
        const resolved = normalize(join(from, path)).split('\\').join('/');
        const anchor = fragment === undefined ? '' : `#${fragment}`;
        if (/^sinks\/([a-z]+\/)?README\.md$/.test(resolved) && anchor !== '') return `${text}(${anchor})`;
        return `${text}(${relative('docs', resolved).split('\\').join('/')}${anchor})`;
      });
    })
    .join('\n');
}

/** sinksPage: docs/sinks.md as the sinks' pages make it today. */
export function sinksPage(): string {
  const index = read('sinks/README.md');
  if (!MARKER.test(index)) throw new Error('sinks/README.md has lost its marker line (<!-- The sinks: ... -->)');
  const pages = [...tableTypes(index).filter((t) => existsSync(join(ROOT, 'sinks', t, 'README.md'))), 'shared'].map(
    (t) => `sinks/${t}/README.md`,
  );
  const body = pages.map((p) => `${relink(read(p), dirname(p)).trimEnd()}\n`).join('\n');
  const [title, ...rest] = relink(index, 'sinks')
    .replace(MARKER, () => body)
    .split('\n');
  return `${[title, GENERATED.trimEnd(), ...rest].join('\n').trimEnd()}\n`;
}
