import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ApprovalError } from '../../src/approval/service.ts';
import { ConfigError } from '../../src/config/load.ts';
import { ImdsError } from '../../src/imds/errors.ts';
import { BridgeError, CODES, errorFields, isCode } from '../../src/lib/errors.ts';
import { MappingError } from '../../src/pipeline/cloudevent.ts';
import { StoreError } from '../../src/store/store.ts';

const src = fileURLToPath(new URL('../../src', import.meta.url));
const sinks = fileURLToPath(new URL('../../sinks', import.meta.url));
const files = [src, sinks].flatMap((dir) =>
  (readdirSync(dir, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts')).map((f) => join(dir, f)),
);

describe('the error catalogue', () => {
  it('every code the sources raise, log or answer with is in the catalogue', () => {
    const used = new Set<string>();
    for (const f of files) {
      const text = readFileSync(f, 'utf8');
      for (const m of text.matchAll(/(?:\bcode: |Error\(\s*|HttpError\(\s*\d+,\s*)'([A-Z][A-Z0-9_]+)'/g)) used.add(m[1]!);
    }
    expect(used.size).toBeGreaterThan(40);
    expect([...used].filter((c) => !isCode(c))).toEqual([]);
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
});
