/**
 * docs/reference/configuration.md is what `npm run docs` makes of the schemas today: a schema
 * change (a key, a default, a limit, a description) without regenerating fails here. Every key
 * it lists has a description and is written in the example configuration, which the schema
 * accepts (schema-agrees.test.ts), so the reference and the example never disagree.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { configurationReference, REFERENCE_PATH, rows } from '../../scripts/docs.ts';
import { BridgeConfig } from '../../src/config/schema.ts';
import { RelayConfig } from '../../src/relay/config.ts';
import { SINK_TYPES } from '../../src/registry/sinks.ts';
import { ROOT } from '../helpers.ts';

const committed = readFileSync(REFERENCE_PATH, 'utf8');
const keysOf = (page: string) => [...page.matchAll(/^\| `([^`]+)` \| .* \| (.*) \|$/gm)].map((m) => ({ key: m[1]!, description: m[2]! }));
/** The last name of a reference key: `approval.inbox.credential (kind: default).clientId` is `clientId`. */
const lastName = (key: string) =>
  key
    .replace(/ \([^)]*\)/g, '')
    .replace(/\[\]/g, '')
    .split('.')
    .pop()!;

describe('the configuration reference', () => {
  it('is what npm run docs makes of the schemas now', () => {
    expect(configurationReference() === committed, 'docs/reference/configuration.md is stale: run npm run docs').toBe(true);
  });

  it('goes stale when a description changes', () => {
    const changed = BridgeConfig.extend({
      state: z.strictObject({ path: z.string().min(1).default('/x').describe('Where the state lives, said differently.') }).prefault({}),
    });
    const page = configurationReference({ bridge: changed, relay: RelayConfig });
    expect(page).not.toBe(committed);
    expect(page).toContain('Where the state lives, said differently.');
  });

  it('describes every key, each sink type and the relay', () => {
    const all = keysOf(committed);
    expect(all.length).toBeGreaterThan(150);
    expect(all.filter((k) => k.description.trim() === '').map((k) => k.key)).toEqual([]);
    // every folder of sinks/ is a type of its own (shared/ is what several share), and `module` is the one more
    const folders = readdirSync(join(ROOT, 'sinks'), { withFileTypes: true }).filter((d) => d.isDirectory() && d.name !== 'shared');
    expect([...SINK_TYPES].sort()).toEqual([...folders.map((d) => d.name), 'module'].sort());
    for (const type of SINK_TYPES) expect(committed).toContain(`#### type: ${type}`);
    expect(committed).toMatch(/\| `imds\.pollIntervalMs` \| integer \| `1000` \| 200\.\.60000 \| How often/);
    expect(committed).toMatch(/\| `approval\.secret` \| string \| {2}\| secret \|/);
  });

  it('lists no key that the example configurations leave out', () => {
    const [bridgePart, relayPart] = committed.split('## The relay (relay.yaml)') as [string, string];
    const example = readFileSync(join(ROOT, 'config', 'bridge.example.yaml'), 'utf8');
    const relayExample = readFileSync(join(ROOT, 'config', 'relay.example.yaml'), 'utf8');
    const missing = (part: string, text: string) =>
      keysOf(part)
        .map((k) => k.key)
        .filter((k) => !new RegExp(`\\b${lastName(k)}\\s*:`).test(text));
    expect(missing(bridgePart, example)).toEqual([]);
    expect(missing(relayPart, relayExample)).toEqual([]);
  });

  it('flattens nested objects, lists of objects and unions of objects', () => {
    const schema = z.toJSONSchema(
      z.strictObject({
        a: z.strictObject({ b: z.number().int().min(1).max(5).default(2).describe('B.') }).describe('A.'),
        list: z.array(z.strictObject({ c: z.string().describe('C.') })).describe('L.'),
        u: z
          .union([z.strictObject({ kind: z.literal('x'), d: z.boolean().describe('D.') }), z.strictObject({ kind: z.literal('y') })])
          .optional()
          .describe('U.'),
      }),
      { io: 'input' },
    ) as Record<string, unknown>;
    expect(rows(schema).map((r) => `${r.key}: ${r.type}; ${r.default}; ${r.limits}; ${r.description}`)).toEqual([
      'a: object; ; required; A.',
      'a.b: integer; `2`; 1..5; B.',
      'list: list of object; ; required; L.',
      'list[].c: string; ; required; C.',
      'u: object; ; ; U.',
      'u (kind: x).kind: `"x"`; ; required; ',
      'u (kind: x).d: boolean; ; required; D.',
      'u (kind: y).kind: `"y"`; ; required; ',
    ]);
  });
});
