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

export const SlotSchema = z.object({
  member: z.string().nullable(),
  vm: z.string().optional(),
  resourceId: vmResourceId.optional(),
  eventIds: z.array(z.string()).optional(),
  since: z.string().optional(),
  until: z.string().optional(),
  mode: z.enum(['early', 'forced', 'started']).optional(),
  by: z.string().optional(),
  reason: z.string().optional(),
  zone: z.string().nullable().optional(),
});

const text = z.string().max(1024);

export const MemberEventSchema = z.object({
  eventId: text,
  eventType: text,
  status: text,
  notBefore: text.nullable(),
  durationInSeconds: z.number(),
  approved: z.boolean(),
  held: z.object({ since: text, by: z.array(text), via: text.optional(), need: z.number().int().min(1).optional() }).optional(),
  approval: z.object({ by: text, via: text, at: text }).optional(),
  preparations: z
    .array(z.object({ sink: text, state: text }))
    .max(64)
    .optional(),
});

export const MemberSchema = z.object({
  member: text,
  vm: text,
  resourceId: vmResourceId,
  heartbeatAt: text,
  heartbeatSeconds: z.number(),
  events: z.array(MemberEventSchema).max(200),
  slot: text.nullable(),
  health: z.object({ healthy: z.boolean(), since: text, detail: z.string().optional() }).optional(),
  zone: text.nullable().optional(),
  calendar: z
    .object({
      ...{ digest: text, timeZone: text, open: z.boolean(), inWindow: z.boolean() },
      ...{ blackout: text.nullable(), until: text.nullable() },
    })
    .optional(),
  version: text.optional(),
  maxUnavailable: z.union([z.number(), text]).optional(),
});
