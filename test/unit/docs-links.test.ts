/**
 * The documentation holds together: every relative link in README.md and docs/ names a file that
 * exists and, with a #fragment into a Markdown file, a heading that file has (GitHub's anchors);
 * README stays a front door of at most 300 lines that links every page of docs/.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.ts';
import { ROOT, tempDir } from '../helpers.ts';

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
export function anchorsOf(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of markdown.replace(/^```[\s\S]*?^```/gm, '').split('\n')) {
    const m = /^#{1,6} (.*)$/.exec(line);
    if (m === null) continue;
    const text = m[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/`/g, '');
    const slug = text
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\- _]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** The text with fenced code blocks and inline code spans blanked out (links in code are not links). */
function withoutCode(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '``');
}

/** The link targets of a Markdown text: inline links and images. */
export function linksOf(markdown: string): string[] {
  return [...withoutCode(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
}

const pages = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f)),
  // each sink's own page, read where it lives (docs/sinks.md is assembled from them)
  ...readdirSync(join(ROOT, 'sinks'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('README.md'))
    .map((f) => join('sinks', f)),
];

/** brokenLinks lists every relative link of `files` (paths under `root`) that does not resolve. */
export function brokenLinks(root: string, files: readonly string[]): string[] {
  const anchors = new Map<string, Set<string>>();
  const anchorsIn = (file: string) => {
    let a = anchors.get(file);
    if (a === undefined) anchors.set(file, (a = anchorsOf(readFileSync(join(root, file), 'utf8'))));
    return a;
  };
  const broken: string[] = [];
  for (const file of files) {
    for (const link of linksOf(readFileSync(join(root, file), 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue;
      const [path, fragment] = link.split('#', 2) as [string, string | undefined];
      const target =
        path === ''
          ? file
          : normalize(join(dirname(file), decodeURIComponent(path)))
              .split('\\')
              .join('/');
      if (target.startsWith('..') || !existsSync(join(root, target))) broken.push(`${file}: ${link} (no such file)`);
      else if (fragment !== undefined && target.endsWith('.md') && !anchorsIn(target).has(fragment))
        broken.push(`${file}: ${link} (no such heading in ${target})`);
    }
  }
  return broken;
}

describe('the documentation', () => {
  it('has no broken relative link or anchor in README.md and docs/', () => {
    expect(pages.length).toBeGreaterThan(10);
    expect(brokenLinks(ROOT, pages)).toEqual([]);
  });

  it('keeps README a front door: at most 300 lines, linking every page of docs/', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
    const linked = new Set(linksOf(readme).map((l) => l.split('#')[0]));
    const unlinked = pages.filter((p) => p.startsWith('docs') && !linked.has(relative(ROOT, join(ROOT, p)).split('\\').join('/')));
    expect(unlinked).toEqual([]);
  });

  it('holds configurations in README.md that validate as they are written', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const configs = [...readme.matchAll(/^```yaml\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
    expect(configs.length).toBeGreaterThanOrEqual(2);
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const env = {
      WEBHOOK_SECRET: secret,
      SE_BRIDGE_APPROVAL_SECRET: secret,
      SLACK_BOT_TOKEN: `xoxb-${randomBytes(8).toString('hex')}`,
      SLACK_SIGNING_SECRET: randomBytes(16).toString('hex'),
    };
    for (const text of configs) expect(() => parseConfigText(text, 'README.md', env)).not.toThrow();
  });

  it('holds health recipes in docs/fleet-budgets.md that validate as they are written', () => {
    const doc = readFileSync(join(ROOT, 'docs/fleet-budgets.md'), 'utf8');
    const recipes = doc.slice(doc.indexOf('### Recipes'), doc.indexOf('## Percentages'));
    const configs = [...recipes.matchAll(/^```yaml\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
    expect(configs.length).toBe(5);
    for (const text of configs) expect(parseConfigText(text, 'docs/fleet-budgets.md', {}).health).toBeDefined();
  });

  it('finds a missing file, a missing heading and a link in code that is not one', () => {
    expect(
      anchorsOf(
        '# Fleet approvals\n## Security model\n## Security model\n```\n# not a heading\n```\n## `se-bridge simulate`: what (it) does',
      ),
    ).toEqual(new Set(['fleet-approvals', 'security-model', 'security-model-1', 'se-bridge-simulate-what-it-does']));
    expect(linksOf('[a](x.md#y) `[b](z.md)` ![c](d.png)\n```\n[e](f.md)\n```')).toEqual(['x.md#y', 'd.png']);
    const dir = tempDir('se-bridge-links-');
    try {
      writeFileSync(
        join(dir.path, 'a.md'),
        '[gone](missing.md) [bad](b.md#nope) [good](b.md#real) [self](#a) [up](../outside.md) [web](https://example.com/x.md)\n# A\n',
      );
      writeFileSync(join(dir.path, 'b.md'), '# Real\n');
      expect(brokenLinks(dir.path, ['a.md'])).toEqual([
        'a.md: missing.md (no such file)',
        'a.md: b.md#nope (no such heading in b.md)',
        'a.md: ../outside.md (no such file)',
      ]);
    } finally {
      dir.cleanup();
    }
  });
});
