/**
 * RecordSeal: Azure's records of the fleet's events live in the fleet's store, which every member
 * may write. The relay seals each record it writes with a key no member holds (an HMAC-SHA256 over
 * the record's name and its canonical JSON), and opens only records whose seal holds: a record a
 * member wrote, or edited, reads as none, so it can neither say Azure listed an event, nor end a
 * real one, nor claim it was approved or said.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { z } from 'zod';
import { AzureRecordSchema, type AzureRecord } from './azure.ts';

/** The key of Azure's records: the relay's own `azure.recordKey`, else derived from its fleet key (which no member holds). */
export function recordKeyOf(o: { readonly recordKey?: string | undefined; readonly fleetKey?: string | undefined }): Buffer | null {
  if (o.recordKey !== undefined) return Buffer.from(o.recordKey, 'base64');
  if (o.fleetKey === undefined) return null;
  return Buffer.from(
    hkdfSync('sha256', Buffer.from(o.fleetKey, 'base64'), Buffer.from('se-bridge fleet'), Buffer.from('azure records'), 32),
  );
}

/** canonical: JSON with every object's keys in order, so a seal reads the same whoever wrote the record. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

export class RecordSeal {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    this.#key = key;
  }

  #mac(name: string, record: object): Buffer {
    return createHmac('sha256', this.#key)
      .update(`${name}\n${canonical(record)}`)
      .digest();
  }

  /** seal: the record as it is written, with its seal. */
  seal<T extends object>(name: string, record: T): T & { readonly seal: string } {
    return { ...record, seal: this.#mac(name, record).toString('base64url') };
  }

  /** open: Azure's record stored under `name` when it reads by its schema and its seal holds, else null. */
  open(name: string, value: unknown): AzureRecord | null {
    return this.openAs(name, value, AzureRecordSchema);
  }

  /** openAs: the record stored under `name` when it reads by `schema` and its seal holds, else null. */
  openAs<T extends object>(name: string, value: unknown, schema: z.ZodType<T>): T | null {
    if (value === null || typeof value !== 'object') return null;
    const { seal, ...rest } = value as { seal?: unknown };
    if (typeof seal !== 'string') return null;
    const parsed = schema.safeParse(rest);
    if (!parsed.success) return null;
    const given = Buffer.from(seal, 'base64url');
    const want = this.#mac(name, parsed.data);
    return given.length === want.length && timingSafeEqual(given, want) ? parsed.data : null;
  }
}
