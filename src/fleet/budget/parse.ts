/**
 * Reading the records of a fleet store: each is parsed by its schema, never cast. A record of
 * another shape (another version's, edited by hand, not JSON, too large) is left out and named
 * once; it never makes the store look unreachable. Keys a newer version adds are dropped, not
 * refused, so members of two versions share a group.
 */
import type { Logger } from 'pino';
import { ASKING_PREFIX, asSlot, MEMBER_PREFIX, QUEUE_PREFIX, SLOT_PREFIX, WAVE_PREFIX, type MemberRecord } from './records.ts';
import { MemberSchema, QueueEntrySchema, SlotSchema, WaveNoticeSchema } from './schemas.ts';
import type { Versioned } from './stores/port.ts';
import type { z } from 'zod';
import { PAUSE_NAME, PauseSchema } from './pause.ts';
import { BREAKER_NAME, BreakerSchema } from './breaker.ts';

/** membersOf: the member records that read by their schema; the others are left out (RecordWarnings names them). */
export function membersOf(records: readonly Versioned[]): MemberRecord[] {
  return records.flatMap((r) => {
    const m = MemberSchema.safeParse(r.value);
    return m.success ? [m.data] : [];
  });
}

/** The group's brakes among its slots, each read by its own schema: one that does not read is no pause, and named. */
const BRAKES: Readonly<Record<string, z.ZodType>> = { [PAUSE_NAME]: PauseSchema, [BREAKER_NAME]: BreakerSchema };

/** A record left out, and why; a slot record that names a holder is not left out but counted as held (asSlot): `holder` names it. */
export interface Skipped {
  readonly key: string;
  readonly why: string;
  readonly holder?: string;
}

/** skippedOf: the records of this list that do not read by their schema (a slot's or a member's, by name), and why. */
export function skippedOf(records: readonly Versioned[]): Skipped[] {
  return records.flatMap((r) => {
    const schema = r.name.startsWith(MEMBER_PREFIX)
      ? MemberSchema
      : r.name.startsWith(WAVE_PREFIX)
        ? WaveNoticeSchema
        : r.name.startsWith(SLOT_PREFIX)
          ? (BRAKES[r.name] ?? SlotSchema)
          : r.name.startsWith(QUEUE_PREFIX) || r.name.startsWith(ASKING_PREFIX)
            ? QueueEntrySchema
            : null;
    if (schema === null) return [];
    if (r.unreadable !== undefined) return [{ key: r.name, why: r.unreadable }];
    const parsed = schema.safeParse(r.value);
    if (parsed.success) return [];
    const i = parsed.error.issues[0];
    const why = i === undefined ? 'not a record' : `${i.path.join('.') || '(record)'}: ${i.message}`;
    const held = schema === SlotSchema ? asSlot(r.value) : null;
    return [{ key: r.name, why, ...(held?.unread === undefined ? {} : { holder: held.vm ?? held.member! }) }];
  });
}

/** RecordWarnings says each record of another shape once (per key and version), however often it is read. */
export class RecordWarnings {
  readonly #logger: Logger;
  readonly #where: string;
  readonly #said = new Set<string>();

  constructor(logger: Logger, where: string) {
    this.#logger = logger;
    this.#where = where;
  }

  check(records: readonly Versioned[]): void {
    const byName = new Map(records.map((r) => [r.name, r.version]));
    for (const s of skippedOf(records)) {
      const id = `${s.key}@${byName.get(s.key) ?? ''}`;
      if (this.#said.has(id)) continue;
      if (this.#said.size >= 10_000) this.#said.clear();
      this.#said.add(id);
      this.#logger.warn(
        {
          code: 'FLEET_RECORD_SKIPPED',
          key: s.key,
          why: s.why,
          store: this.#where,
          ...(s.holder === undefined ? {} : { holder: s.holder }),
        },
        `fleet budget: the record ${s.key} is not one this version reads (${s.why}); ${s.holder === undefined ? 'it is left out' : countedText(s.holder)}`,
      );
    }
  }
}

/** countedText: what a slot record that does not read but names a holder counts as, in words. */
export const countedText = (holder: string): string =>
  `counted as held by ${holder}, with no end, until it is written whole again or removed from the store`;
