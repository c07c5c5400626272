/**
 * The schemas of the records a fleet store holds: what is read from a store is parsed, never cast
 * (parse.ts). Each text a member writes is bounded, so a record stays far below a store's limit.
 * What they parse is the records' shapes of records.ts (parse.ts and records.ts check it).
 */
import { z } from 'zod';
import { parseVmResourceId } from '../../azure/resource-id.ts';

/**
 * A VM's resource id as a record says it: kept only when it is a VM's or a scale-set instance's
 * id (azure/resource-id.ts); any other text reads as none, so nothing ever acts on it while the
 * member still counts in its group.
 */
const vmResourceId = z
  .string()
  .max(1024)
  .nullable()
  .transform((id) => (parseVmResourceId(id) === null ? null : id));

/** The most events a member record lists (a member writes no more): a record stays a few KiB, and the forecast's work bounded. */
export const MAX_MEMBER_EVENTS = 50;

/** A text a record holds: bounded, so a record stays far below a store's limit. */
export const text = z.string().max(1024);
/** A time as a member writes it (RFC 3339, as toISOString gives it); a record with a time that does not read is of another shape. */
export const time = text
  .regex(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/, 'not an RFC 3339 time of the years 0000 to 9999')
  .refine((t) => Number.isFinite(Date.parse(t)), 'not a time');

/** `maxUnavailable` as a configuration allows it: 1 to 100 members, or a percentage from "1%" to "100%". */
export const MaxUnavailable = z.union([
  z.number().int().min(1).max(100),
  z.string().regex(/^([1-9][0-9]?|100)%$/, 'a number from 1 to 100, or a percentage from "1%" to "100%"'),
]);

/** `heartbeatSeconds` as a configuration allows it. */
export const HeartbeatSeconds = z.number().int().min(5).max(3600);

export const SlotSchema = z.object({
  member: z.string().nullable(),
  vm: z.string().optional(),
  resourceId: vmResourceId.optional(),
  eventIds: z.array(z.string()).optional(),
  since: time.optional(),
  until: time.optional(),
  mode: z.enum(['early', 'forced', 'started']).optional(),
  by: z.string().optional(),
  reason: z.string().optional(),
  zone: z.string().nullable().optional(),
  // how many times the slot was taken, carried as it is given back (served.ts); one that does not read is none
  takes: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional().catch(undefined),
  // the early approvals within the group's rate window (rate.ts); a list that does not read is none (the slot still counts)
  approvals: z
    .array(z.object({ at: time, eventId: text }))
    .max(200)
    .optional()
    .catch(undefined),
});

export const MemberEventSchema = z.object({
  eventId: text,
  eventType: text,
  status: text,
  notBefore: text.nullable(),
  // IMDS says -1 or a few seconds to hours: a year either way is no duration of a maintenance
  durationInSeconds: z
    .number()
    .min(-366 * 86400)
    .max(366 * 86400),
  approved: z.boolean(),
  held: z
    .object({
      ...{ since: text, by: z.array(text), via: text.optional(), need: z.number().int().min(1).optional() },
      ...{
        unhealthy: z
          .array(z.object({ vm: text, since: text }))
          .max(100)
          .optional(),
        ahead: z.number().int().min(0).optional(),
        next: text.optional(),
      },
    })
    .optional(),
  approval: z.object({ by: text, via: text, at: text }).optional(),
  // when its member first saw it listed and Started; one that does not read is none (the event still counts)
  seen: z.object({ scheduled: text.optional(), started: text.optional() }).optional().catch(undefined),
  preparations: z
    .array(z.object({ sink: text, state: text }))
    .max(64)
    .optional(),
});

const wordTime = z
  .string()
  .max(40)
  .refine((s) => Number.isFinite(Date.parse(s)));

/**
 * WaveWordSchema: the last word a member said as the speaker of a collision wave (waves.ts), as its
 * record says it: the wave's id, the word's CloudEvent id, what it says, when, the wave's time
 * span as the speaker saw it (a collision whose windows overlap it is the same wave), and how
 * many members it says are due. Untrusted, as all of a record: a word that does not read is none.
 */
/** The most members a word names as due (its copy): a word stays within a record's limit with a thousand. */
export const MAX_WORD_DUE = 1000;

/**
 * What every member's copy of a word says of the wave, as its speaker saw it (the members due, the
 * budget, the group's size, the most down at once, the members not healthy), so a member that
 * never read the group says what the speaker said.
 */
export const WordCopySchema = z.object({
  maxUnavailable: z.number().int().min(0).max(100_000),
  members: z.number().int().min(0).max(1_000_000),
  from: wordTime,
  to: wordTime,
  atOnce: z.number().int().min(0).max(100_000),
  unhealthy: z.array(text).max(MAX_WORD_DUE).optional(),
  due: z.array(z.object({ vm: text, eventId: text, eventType: text, notBefore: time })).max(MAX_WORD_DUE),
});
export type WordCopy = z.infer<typeof WordCopySchema>;

const waveId = z.string().regex(/^[0-9a-f]{40}$/);
const wordId = z.string().regex(/^fleet\.collision\/[0-9a-f]{40}$/);
const wordKind = z.enum(['foreseen', 'updated', 'resolved']);

export const WaveWordSchema = z.object({
  wave: waveId,
  said: wordId,
  kind: wordKind,
  at: wordTime,
  from: wordTime,
  to: wordTime,
  due: z.number().int().min(0).max(100_000),
  // what a copy says (a word of an older version has none: it is repeated only by members that read the group)
  copy: WordCopySchema.optional().catch(undefined),
});
export type WaveWord = z.infer<typeof WaveWordSchema>;
/** What a word says of a wave: that it is foreseen, that the members due changed, or that it is within the budget now. */
export type WordKind = WaveWord['kind'];

/** The most ended events a member record lists (the console draws those of the last day). */
export const MAX_ENDED = 10;

/** An event of the member's that ended, as its journal says it: when, and how (Completed, Canceled). */
export const EndedEventSchema = z.object({
  ...{ eventId: text, eventType: text, status: z.enum(['Completed', 'Canceled']), at: time },
  ...{
    notBefore: text.nullable(),
    durationInSeconds: z
      .number()
      .min(-366 * 86400)
      .max(366 * 86400),
  },
});
export type EndedEvent = z.infer<typeof EndedEventSchema>;

export const MemberSchema = z.object({
  member: text,
  vm: text,
  resourceId: vmResourceId,
  heartbeatAt: time,
  // as a configuration allows it: a period that never goes stale (or no period at all) is no member's
  heartbeatSeconds: HeartbeatSeconds,
  events: z.array(MemberEventSchema).max(MAX_MEMBER_EVENTS),
  slot: text.nullable(),
  health: z.object({ healthy: z.boolean(), since: time, detail: z.string().optional() }).optional(),
  zone: text.nullable().optional(),
  calendar: z
    .object({
      ...{ digest: text, timeZone: text, open: z.boolean(), inWindow: z.boolean() },
      ...{ blackout: text.nullable(), until: text.nullable() },
    })
    .optional(),
  version: text.optional(),
  // as a configuration allows it; anything else (0, 1.5, "abc") states no budget, and the member still counts
  maxUnavailable: MaxUnavailable.optional().catch(undefined),
  // within the limits a configuration allows (fleet.unhealthyCountsForSeconds, health.settleSeconds)
  unhealthyCountsForSeconds: z
    .number()
    .int()
    .min(60)
    .max(30 * 86400)
    .optional(),
  settleSeconds: z.number().int().min(0).max(86400).optional(),
  // the collision wave this member speaks for; a word that does not read is no word (the record still counts)
  wave: WaveWordSchema.optional().catch(undefined),
  // what it drew as ended; a list that does not read is none (the record still counts)
  ended: z.array(EndedEventSchema).max(MAX_ENDED).optional().catch(undefined),
});

/**
 * A queue entry (queue-entries.ts): a waiting member's earliest maintenance, in a record named in
 * the queue's order. `since` null: not held yet (it may ask now); `need`: the slots it takes.
 */
export const QueueEntrySchema = z.object({
  member: text,
  vm: text,
  eventId: text,
  notBefore: time.nullable(),
  since: time.nullable(),
  need: z.number().int().min(1).max(100),
  heartbeatAt: time,
  heartbeatSeconds: HeartbeatSeconds,
});

/**
 * A wave's notice (wave-board.ts), `slot-wave-<wave id>`, listed with the slots every member reads
 * anyway: who speaks for the wave (a member key), its span, when the speaker last wrote it, and its
 * latest word, so a member learns of the wave and of each new word without reading the group.
 * `member: null`: a version that reads it as a slot reads a free one.
 */
export const WaveNoticeSchema = z.object({
  member: z.null(),
  wave: waveId,
  speaker: z.string().regex(/^[a-z0-9-]{1,64}$/),
  vm: text,
  from: wordTime,
  to: wordTime,
  beat: time,
  heartbeatSeconds: HeartbeatSeconds,
  // `by`: the member whose record holds the word (the speaker that said it, before the wave was handed on)
  word: z
    .object({
      said: wordId,
      kind: wordKind,
      at: wordTime,
      by: z
        .string()
        .regex(/^[a-z0-9-]{1,64}$/)
        .optional(),
    })
    .optional(),
});
export type WaveNotice = z.infer<typeof WaveNoticeSchema>;
