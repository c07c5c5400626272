import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ApprovalError } from '../../src/approval/service.ts';
import { ConfigError } from '../../src/config/load.ts';
import { ImdsError, noted, unanswered } from '../../src/imds/errors.ts';
import { BridgeError, CODES, errorFields, isCode } from '../../src/lib/errors.ts';
import { registerSinks } from '../../src/registry/register.ts';
import { ERROR_CODES, SINK_MODULES, SINKS } from '../../src/registry/sinks.ts';
import { stdoutSink } from '../../sinks/stdout/index.ts';
import { reject, sinkBase, type SinkModule } from '../../src/api.ts';
import { z } from 'zod';
import { MappingError } from '../../src/pipeline/cloudevent.ts';
import { StoreError } from '../../src/store/store.ts';

const src = fileURLToPath(new URL('../../src', import.meta.url));
const sinks = fileURLToPath(new URL('../../sinks', import.meta.url));
const files = [src, sinks].flatMap((dir) =>
  (readdirSync(dir, { recursive: true }) as string[])
    // the sources, not the sinks' tests beside them
    .filter((f) => f.endsWith('.ts') && !/\.test\.ts$/.test(f))
    .map((f) => join(dir, f)),
);

describe('the error catalogue', () => {
  it('every code the sources raise, log or answer with is in the catalogue', () => {
    const used = new Set<string>();
    for (const f of files) {
      const text = readFileSync(f, 'utf8');
      for (const m of text.matchAll(/(?:\bcode: |Error\(\s*|HttpError\(\s*\d+,\s*)'([A-Z][A-Z0-9_]+)'/g)) used.add(m[1]!);
    }
    expect(used.size).toBeGreaterThan(40);
    expect([...used].filter((c) => !Object.hasOwn(ERROR_CODES, c))).toEqual([]);
  });

  it('holds the core codes in src/lib/errors.ts and the codes of each sink type in its module', () => {
    expect(isCode('KUBE_DRAIN_BLOCKED')).toBe(false);
    expect(isCode('TEMPLATE_FAILED')).toBe(false);
    expect(SINKS.find('kubernetes')?.codes).toHaveProperty('KUBE_DRAIN_BLOCKED');
    expect(SINKS.find('webhook')?.codes).toHaveProperty('TEMPLATE_FAILED');
    expect(ERROR_CODES).toMatchObject({ USAGE: CODES.USAGE, KUBE_DRAIN_BLOCKED: expect.any(String), TEMPLATE_LIMIT: expect.any(String) });
    expect(Object.keys(ERROR_CODES).length).toBe(
      Object.keys(CODES).length + SINKS.modules.reduce((n, m) => n + Object.keys(m.codes ?? {}).length, 0),
    );
  });

  it('adds a sink type with one line in the list: its type, its schema and its codes', () => {
    const configSchema = z.strictObject({ type: z.literal('pager'), ...sinkBase, service: z.string() });
    const pager: SinkModule<z.infer<typeof configSchema>, typeof configSchema> = {
      type: 'pager',
      configSchema,
      codes: { PAGER_REFUSED: 'the pager service refused the page (dead-lettered)' },
      maxBatchSize: 1,
      create: () => ({ send: async (events) => events.map(() => reject('PAGER_REFUSED: no')), close: async () => undefined }),
    };
    const registry = registerSinks([...SINK_MODULES, pager] as const);
    expect(registry.types).toEqual([...SINKS.types, 'pager']);
    expect(registry.find('pager')).toBe(pager);
    expect(registry.codes.PAGER_REFUSED).toBe('the pager service refused the page (dead-lettered)');
    expect(registry.codes.KUBE_DRAIN_BLOCKED).toBe(ERROR_CODES.KUBE_DRAIN_BLOCKED);
    const union = z.discriminatedUnion('type', registry.schemas);
    expect(union.parse({ type: 'pager', name: 'p', service: 'ops' })).toMatchObject({ type: 'pager', service: 'ops' });
  });

  it('refuses a code declared twice and a type registered twice', () => {
    const clash: SinkModule = { ...stdoutSink, type: 'stdout2', codes: { USAGE: 'again' } };
    expect(() => registerSinks([stdoutSink, clash])).toThrow('error code USAGE of sink type "stdout2" is already declared by the core');
    expect(() => registerSinks([stdoutSink, stdoutSink])).toThrow('sink type "stdout" is registered twice');
  });

  it('every error class of the sources extends BridgeError', () => {
    const bare = files.flatMap((f) => [...readFileSync(f, 'utf8').matchAll(/class (\w+) extends Error\b/g)].map((m) => m[1]));
    expect(bare).toEqual([]);
  });

  it('keeps the code, the class name and the cause', () => {
    const cause = new Error('disk I/O error');
    const errors = [
      new ImdsError('IMDS_GONE', 'gone', { cause }),
      new StoreError('STORE_WRITE_FAILED', 'write failed', cause),
      new MappingError('cannot map', cause),
      new ApprovalError('IMDS_REFUSED', 'refused', cause),
    ];
    for (const e of errors) {
      expect(e).toBeInstanceOf(BridgeError);
      expect(e.cause).toBe(cause);
      expect(isCode(e.code)).toBe(true);
    }
    expect(errors.map((e) => e.name)).toEqual(['ImdsError', 'StoreError', 'MappingError', 'ApprovalError']);
    const config = new ConfigError('bridge.yaml', ['sinks.0.url: must be an absolute https or http URL']);
    expect(errorFields(config)).toEqual({ code: 'CONFIG_INVALID', err: config.message });
    expect(Object.values(CODES).every((meaning) => meaning.length > 10)).toBe(true);
  });

  it('an IMDS request is refused only by an answer with a status: one cut short or timed out may have been taken, across retries', async () => {
    const answered = new ImdsError('IMDS_BAD_REQUEST', 'IMDS answered 400', { status: 400 });
    const cut = [
      new ImdsError('IMDS_ABORTED', 'aborted'),
      new ImdsError('IMDS_TIMEOUT', 'timed out'),
      new ImdsError('IMDS_NETWORK', 'reset'),
    ];
    expect(unanswered(answered)).toBe(false);
    expect(cut.map(unanswered)).toEqual([true, true, true]);
    // a timed-out attempt, then one answered 400: it may have been taken all the same
    const asked = { unanswered: false };
    await expect(noted(asked, Promise.reject(answered))).rejects.toBe(answered);
    expect(asked.unanswered).toBe(false);
    await expect(noted(asked, Promise.reject(cut[1]!))).rejects.toBe(cut[1]);
    await expect(noted(asked, Promise.reject(answered))).rejects.toBe(answered);
    expect(asked.unanswered).toBe(true);
  });
});
