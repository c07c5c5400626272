/**
 * markedSecrets reads the secret marks from the zod schema, along the value: it must find what
 * the configuration's JSON Schema marks `writeOnly`, no more and no less. The JSON Schema's walk
 * below is the reference (what the marks were read from before).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfigFile, loadFileWith } from '../../src/config/load.ts';
import { markedSecrets } from '../../src/config/marked-secrets.ts';
import { BridgeConfig, secretsOf } from '../../src/config/schema.ts';
import { RelayConfig } from '../../src/relay/config.ts';
import { secret } from '../../src/lib/validators.ts';
import { ROOT } from '../helpers.ts';

interface JsonSchema {
  writeOnly?: boolean;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  items?: JsonSchema;
}

/** The reference: the paths the JSON Schema marks writeOnly along the value. */
function jsonMarked(value: unknown, s: JsonSchema | boolean | undefined, path = ''): string[] {
  if (s === undefined || typeof s === 'boolean' || value === undefined) return [];
  if (s.writeOnly === true) return [path];
  const out = [...(s.anyOf ?? []), ...(s.oneOf ?? []), ...(s.allOf ?? [])].flatMap((b) => jsonMarked(value, b, path));
  if (Array.isArray(value)) value.forEach((x, i) => out.push(...jsonMarked(x, s.items, `${path}[${i}]`)));
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value))
      out.push(...jsonMarked(v, s.properties?.[k] ?? s.additionalProperties, path === '' ? k : `${path}.${k}`));
  return out;
}

const paths = (schema: z.ZodType, value: unknown) =>
  markedSecrets(schema, value)
    .map((m) => m.path)
    .sort();
const reference = (schema: z.ZodType, value: unknown) =>
  [...new Set(jsonMarked(value, z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema))].sort();

// the shipped examples, every variable left unset: each secret holds a placeholder of its shape
const bridge = loadConfigFile(join(ROOT, 'config', 'bridge.example.yaml'), {}, { needs: () => false });
const relay = loadFileWith(RelayConfig, join(ROOT, 'config', 'relay.example.yaml'), {}, { needs: () => false });

describe('markedSecrets', () => {
  it("finds in the bridge's example what its JSON Schema marks, sink by sink", () => {
    const found = paths(BridgeConfig, bridge);
    expect(found).toEqual(reference(BridgeConfig, bridge));
    for (const p of ['approval.secret', 'approval.slack.signingSecret']) expect(found).toContain(p);
    // secrets of several sink types, under the union of sinks
    const sinks = new Set(
      found.filter((p) => p.startsWith('sinks[')).map((p) => bridge.sinks[Number(/^sinks\[(\d+)\]/.exec(p)![1])]!.type),
    );
    expect(sinks.size).toBeGreaterThanOrEqual(4);
  });

  it("finds in the relay's example what its JSON Schema marks", () => {
    const found = paths(RelayConfig, relay);
    expect(found).toEqual(reference(RelayConfig, relay));
    expect(found.length).toBeGreaterThanOrEqual(2);
  });

  it('follows arrays, records, unions, wrappers and lazy schemas, and skips what is absent', () => {
    const Node: z.ZodType = z.lazy(() => z.object({ key: secret(z.string()).optional(), next: Node.optional() }));
    const schema = z.object({
      list: z.array(z.object({ token: secret(z.string()) })),
      byName: z.record(z.string(), secret(z.string())),
      either: z.union([z.object({ a: secret(z.string()) }), z.object({ b: z.string() })]),
      later: secret(z.string()).default('x').describe('a secret described after it was marked'),
      chain: Node,
      plain: z.string(),
    });
    const value = {
      list: [{ token: 't0' }, { token: 't1' }],
      byName: { one: 'r1' },
      either: { b: 'not secret' },
      later: 'l',
      chain: { next: { key: 'deep' } },
      plain: 'p',
    };
    expect(markedSecrets(schema, value)).toEqual(
      expect.arrayContaining([
        { path: 'list[0].token', value: 't0' },
        { path: 'list[1].token', value: 't1' },
        { path: 'byName.one', value: 'r1' },
        { path: 'later', value: 'l' },
        { path: 'chain.next.key', value: 'deep' },
      ]),
    );
    expect(paths(schema, value)).toEqual(['byName.one', 'chain.next.key', 'later', 'list[0].token', 'list[1].token']);
  });

  it('what secretsOf scrubs includes every marked value of the example', () => {
    const scrubbed = secretsOf(bridge);
    for (const m of markedSecrets(BridgeConfig, bridge))
      if (typeof m.value === 'string' && m.value.length >= 6) expect(scrubbed).toContain(m.value);
  });
});
