/**
 * `se-bridge schema` and `se-bridge validate` agree: every shipped configuration (the examples,
 * the installer's minimal file, the demo's, the ones embedded in the Kubernetes and cloud-init
 * files) is valid for the JSON Schema, checked with a JSON Schema validator of its own (Ajv,
 * draft 2020-12), as an editor would; and a file the loader refuses, the schema refuses too.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse, parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { RelayConfig } from '../../src/relay/config.ts';
import { parseConfigText } from '../../src/config/load.ts';
import { jsonSchema } from '../../src/config/schema.ts';
import { EXAMPLE_ENV, ROOT } from '../helpers.ts';

function validator(schema: Record<string, unknown>) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  return ajv.compile(schema);
}

/** What an editor sees: the YAML as written, `${NAME}` left as text (valid wherever a string is). */
const asWritten = (text: string) => parse(text) as unknown;

const bridge = validator(jsonSchema());

describe('the JSON Schema and validate agree', () => {
  const shipped: [string, string][] = [
    ['config/bridge.example.yaml', readFileSync(join(ROOT, 'config', 'bridge.example.yaml'), 'utf8')],
    ['config/bridge.minimal.yaml', readFileSync(join(ROOT, 'config', 'bridge.minimal.yaml'), 'utf8')],
    ['config/demo.yaml', readFileSync(join(ROOT, 'config', 'demo.yaml'), 'utf8')],
    [
      'config/kubernetes/daemonset.yaml (ConfigMap)',
      (
        parseAllDocuments(readFileSync(join(ROOT, 'config', 'kubernetes', 'daemonset.yaml'), 'utf8'))[1]!.toJS() as {
          data: Record<string, string>;
        }
      ).data['bridge.yaml']!,
    ],
    [
      'config/kubernetes/daemonset.yaml (ConfigMap, its fleet block uncommented)',
      (
        parseAllDocuments(readFileSync(join(ROOT, 'config', 'kubernetes', 'daemonset.yaml'), 'utf8'))[1]!.toJS() as {
          data: Record<string, string>;
        }
      ).data['bridge.yaml']!.replace(/^# (?=fleet:| {2}\S)/gm, ''),
    ],
    [
      'config/cloud-init.yaml (bridge.yaml)',
      (
        parse(readFileSync(join(ROOT, 'config', 'cloud-init.yaml'), 'utf8')) as { write_files: { path: string; content: string }[] }
      ).write_files.find((f) => f.path.endsWith('bridge.yaml'))!.content,
    ],
  ];
  it.each(shipped)('%s: valid for validate and for the schema', (name, text) => {
    expect(() => parseConfigText(text, name, { ...EXAMPLE_ENV, OPS_WEBHOOK_URL: 'https://ops.example.com/hook' })).not.toThrow();
    expect(bridge(asWritten(text)) ? [] : bridge.errors).toEqual([]);
  });

  it('the relay example: valid for the relay schema too', () => {
    const check = validator(z.toJSONSchema(RelayConfig, { io: 'input', unrepresentable: 'any' }));
    const text = readFileSync(join(ROOT, 'config', 'relay.example.yaml'), 'utf8');
    expect(check(asWritten(text)) ? [] : check.errors).toEqual([]);
  });

  it('a key written with no value is absent for both; what validate refuses, the schema refuses', () => {
    const text = 'identity:\nlog:\nobservability:\n';
    expect(parseConfigText(text, 'x', {}).log.level).toBe('info');
    expect(bridge(asWritten(text))).toBe(true);
    for (const bad of ['imds: { pollIntervalMs: 10 }', 'sinks: [{ name: a, type: carrier-pigeon }]', 'wat: 1', 'sinks: [null]']) {
      expect(() => parseConfigText(bad, 'x', {}), bad).toThrow();
      expect(bridge(asWritten(bad)), bad).toBe(false);
    }
  });
});
