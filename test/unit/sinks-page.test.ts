/**
 * docs/sinks.md is what `npm run docs` assembles from the sinks' own pages today, and every sink
 * type has its page: a README.md in its folder that opens with its name, and a row in the
 * overview's table (so a new sink cannot land undocumented).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SINKS_PAGE_PATH, sinksPage, tableTypes } from '../../scripts/sinks-page.ts';
import { SINK_TYPES } from '../../src/registry/sinks.ts';
import { ROOT } from '../helpers.ts';

describe('the sinks page', () => {
  it('is assembled from the sinks’ READMEs: run npm run docs after editing one', () => {
    expect(sinksPage() === readFileSync(SINKS_PAGE_PATH, 'utf8'), 'docs/sinks.md is stale: run npm run docs').toBe(true);
  });

  it('has a page and a table row for every sink type, and nothing for a type that does not exist', () => {
    const builtIn = SINK_TYPES.filter((t) => t !== 'module');
    const missing = builtIn.filter((t) => !existsSync(join(ROOT, 'sinks', t, 'README.md')));
    expect(missing).toEqual([]);
    for (const t of builtIn) expect(readFileSync(join(ROOT, 'sinks', t, 'README.md'), 'utf8')).toMatch(new RegExp(`^## ${t}\\b`));
    expect([...tableTypes()].sort()).toEqual([...SINK_TYPES].sort());
  });

  it('rewrites a page’s links to work from docs/, and a link into another sink’s page into this one', () => {
    const page = sinksPage();
    expect(page).toContain('[eventhubs and servicebus](#eventhubs-and-servicebus)');
    expect(page).toContain('](approvals.md#approvals)');
    expect(page).toContain('](../examples/templates/discord.yaml)');
    expect(page).not.toContain('../../docs/');
    expect(page.indexOf('## webhook')).toBeLessThan(page.indexOf('## kubernetes'));
    expect(page.indexOf('## kubernetes')).toBeLessThan(page.indexOf('## Managed identity'));
    expect(page.indexOf('## Managed identity')).toBeLessThan(page.indexOf('## Your own sink'));
  });
});
