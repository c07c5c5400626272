/**
 * npm run docs: writes docs/sinks.md (sinks-page.ts) and docs/reference/configuration.md, the reference of every configuration key
 * (the bridge's and the relay's), generated from the zod schemas: each key's type, default,
 * limits and description. A test renders it again and fails when the committed page differs, so
 * a schema change without `npm run docs` does not land.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { BridgeConfig } from '../src/config/schema.ts';
import { RelayConfig } from '../src/relay/config.ts';
import { SINKS_PAGE_PATH, sinksPage } from './sinks-page.ts';

export const REFERENCE_PATH = fileURLToPath(new URL('../docs/reference/configuration.md', import.meta.url));

type Json = Record<string, unknown>;

/** One key of the reference. */
export interface Row {
  readonly key: string;
  readonly type: string;
  readonly default: string;
  readonly limits: string;
  readonly description: string;
}

const code = (v: string) => `\`${v.replace(/\|/g, '\\|')}\``;
const cell = (v: string) => v.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The alternatives of a union, or the schema itself. */
const variants = (s: Json): Json[] => ((s.anyOf ?? s.oneOf) as Json[] | undefined) ?? [s];
const isObject = (s: Json) => s.type === 'object' && s.properties !== undefined;

function typeOf(s: Json): string {
  if (s.const !== undefined) return code(JSON.stringify(s.const));
  if (Array.isArray(s.enum)) return (s.enum as unknown[]).map((v) => code(JSON.stringify(v))).join(' \\| ');
  if (s.anyOf !== undefined || s.oneOf !== undefined) return [...new Set(variants(s).map(typeOf))].join(' or ');
  if (s.type === 'array') return `list of ${typeOf((s.items ?? {}) as Json)}`;
  if (s.type === 'object')
    return s.additionalProperties !== undefined && s.properties === undefined
      ? `map of ${typeOf(s.additionalProperties as Json)}`
      : 'object';
  if (typeof s.type === 'string') return s.type;
  return 'any';
}

function limitsOf(s: Json, required: boolean): string {
  const out: string[] = [];
  if (required) out.push('required');
  const range = (lo: unknown, hi: unknown, unit = '') => {
    if (lo !== undefined && hi !== undefined) out.push(`${String(lo)}..${String(hi)}${unit}`);
    else if (lo !== undefined) out.push(`at least ${String(lo)}${unit}`);
    else if (hi !== undefined) out.push(`at most ${String(hi)}${unit}`);
  };
  if (s.writeOnly === true) out.push('secret');
  for (const v of variants(s)) {
    range(v.minimum ?? v.exclusiveMinimum, v.maximum ?? v.exclusiveMaximum);
    range(v.minLength, v.maxLength, ' characters');
    range(v.minItems, v.maxItems, ' items');
    if (typeof v.pattern === 'string') out.push(`matches ${code(v.pattern)}`);
    if (typeof v.format === 'string') out.push(v.format);
    if (v.writeOnly === true) out.push('secret');
    if (v.type === 'array' && (v.items as Json | undefined)?.writeOnly === true) out.push('secret');
    if (v.type === 'object' && (v.additionalProperties as Json | undefined)?.writeOnly === true) out.push('secret values');
  }
  return [...new Set(out)].join('; ');
}

function defaultOf(s: Json): string {
  const d = s.default ?? variants(s).find((v) => v.default !== undefined)?.default;
  if (d === undefined) return '';
  if (typeof d === 'object' && d !== null && Object.keys(d).length === 0) return '';
  return code(JSON.stringify(d));
}

/** rows flattens a schema into one row per key; objects are walked into, lists of objects as `key[]`. */
export function rows(schema: Json, prefix = ''): Row[] {
  const out: Row[] = [];
  const required = new Set((schema.required as string[] | undefined) ?? []);
  for (const [name, prop] of Object.entries((schema.properties ?? {}) as Record<string, Json>)) {
    const key = prefix === '' ? name : `${prefix}.${name}`;
    const objects = variants(prop).filter(isObject);
    const lists = variants(prop).filter((v) => v.type === 'array' && isObject((v.items ?? {}) as Json));
    const description = String(prop.description ?? variants(prop).find((v) => v.description !== undefined)?.description ?? '');
    if (objects.length === 1 && variants(prop).length === 1) {
      if (description !== '') out.push({ key, type: 'object', default: '', limits: required.has(name) ? 'required' : '', description });
      out.push(...rows(objects[0]!, key));
      continue;
    }
    out.push({ key, type: typeOf(prop), default: defaultOf(prop), limits: limitsOf(prop, required.has(name)), description });
    if (objects.length > 1) for (const o of objects) out.push(...rows(o, `${key} (${formOf(o)})`));
    else if (objects.length === 1) out.push(...rows(objects[0]!, key));
    for (const l of lists) out.push(...rows(l.items as Json, `${key}[]`));
  }
  return out;
}

/** formOf names one form of a union of objects by its constant key (`kind: managedIdentity`), or by its keys. */
function formOf(o: Json): string {
  const props = (o.properties ?? {}) as Record<string, Json>;
  const constant = Object.entries(props).find(([, p]) => variants(p).some((v) => v.const !== undefined));
  if (constant !== undefined) return `${constant[0]}: ${String(variants(constant[1]).find((v) => v.const !== undefined)!.const)}`;
  return `with ${Object.keys(props).join(', ')}`;
}

function table(list: readonly Row[]): string {
  const lines = ['| key | type | default | limits | description |', '|---|---|---|---|---|'];
  for (const r of list) lines.push(`| ${code(r.key)} | ${r.type} | ${r.default} | ${r.limits} | ${cell(r.description)} |`);
  return lines.join('\n');
}

const jsonOf = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Json;

/** The sink forms of the configuration, by type. */
function sinkForms(config: Json): [string, Json][] {
  const sinks = variants((config.properties as Record<string, Json>).sinks!).find((v) => v.type === 'array')!;
  return variants(sinks.items as Json).map((form) => [String(variants((form.properties as Record<string, Json>).type!)[0]!.const), form]);
}

/** configurationReference renders the whole page, from the bridge's and the relay's schemas. */
export function configurationReference(
  schemas: { bridge: z.ZodType; relay: z.ZodType } = { bridge: BridgeConfig, relay: RelayConfig },
): string {
  const bridge = jsonOf(schemas.bridge);
  const forms = sinkForms(bridge);
  const all = rows(bridge).filter((r) => !r.key.startsWith('sinks'));
  const sections = [...new Set(all.map((r) => r.key.split(/[.[ ]/)[0]!))];
  const common = new Set(['type', 'name', 'filter', 'delivery']);
  const commonRows = rows(forms[0]![1]).filter((r) => common.has(r.key.split(/[.[ ]/)[0]!) && r.key !== 'type');
  const out = [
    '# Configuration reference',
    '',
    "Every key of the bridge's configuration file (`bridge.yaml`) and of the relay's (`relay.yaml`),",
    'with its type, default, limits and what it does. This page is generated from the schema by',
    '`npm run docs`; a test fails when it is out of date. [Configuration](../configuration.md)',
    'explains the format, environment variables and secrets, and',
    '[`config/bridge.example.yaml`](../../config/bridge.example.yaml) shows the keys in use.',
    '',
    'A key in `a.b` form is `b` inside the object `a`; `a[]` is a list of objects. "secret" marks',
    'a credential: it never reaches a log line, and `validate` refuses a published example value.',
    '',
    '## The bridge (bridge.yaml)',
    '',
  ];
  for (const s of sections) out.push(`### ${s}`, '', table(all.filter((r) => r.key.split(/[.[ ]/)[0] === s)), '');
  out.push(
    '### sinks',
    '',
    'A list of sinks, each an object with a unique `name` and a `type`. These keys are the same for every type:',
    '',
    table(commonRows),
    '',
  );
  for (const [type, form] of forms) {
    // its own keys, and the common ones it sets differently (a preparation's filter.scope is self)
    const differs = (r: Row) => JSON.stringify(commonRows.find((c) => c.key === r.key)) !== JSON.stringify(r);
    const own = rows(form).filter((r) => r.key !== 'type' && (!common.has(r.key.split(/[.[ ]/)[0]!) || differs(r)));
    out.push(`#### type: ${type}`, '', own.length === 0 ? 'No keys of its own.' : table(own), '');
  }
  out.push('## The relay (relay.yaml)', '', table(rows(jsonOf(schemas.relay))), '');
  return `${out.join('\n').trimEnd()}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(REFERENCE_PATH, configurationReference());
  writeFileSync(SINKS_PAGE_PATH, sinksPage());
  process.stdout.write(`wrote ${REFERENCE_PATH} and ${SINKS_PAGE_PATH}\n`);
}
