/**
 * Wire types of the IMDS Scheduled Events API (api-version 2020-07-01) and the one place
 * where Azure's PascalCase field names are mapped to the bridge's camelCase domain.
 *
 * The parser is liberal in what it accepts, as the documentation asks: fields missing in
 * older API versions get their documented defaults and unknown fields survive in `raw`.
 * It is strict only where a document would otherwise be misread: a document without an
 * integer DocumentIncarnation, without an Events array, or with an event that has no
 * EventId, EventType or EventStatus is schema-invalid and yields no transitions at all.
 *
 * @see https://learn.microsoft.com/azure/virtual-machines/linux/scheduled-events
 */
import { z } from 'zod';

export const SCHEDULED_EVENTS_API_VERSION = '2020-07-01';
export const INSTANCE_API_VERSION = '2021-02-01';

/** WireEvent is one element of `Events`, as IMDS sends it. Unknown fields pass through. */
export const WireEvent = z.looseObject({
  EventId: z.string().min(1),
  EventType: z.string().min(1),
  EventStatus: z.string().min(1),
  ResourceType: z.string().optional(),
  Resources: z.array(z.string()).optional(),
  NotBefore: z.string().optional(),
  Description: z.string().optional(),
  EventSource: z.string().optional(),
  DurationInSeconds: z.number().int().optional(),
});
export type WireEvent = z.infer<typeof WireEvent>;

export const WireDocument = z.looseObject({
  DocumentIncarnation: z.number().int(),
  Events: z.array(WireEvent),
});
export type WireDocument = z.infer<typeof WireDocument>;

/** ScheduledEvent is the domain form of one IMDS event. Values are frozen. */
export interface ScheduledEvent {
  readonly eventId: string;
  readonly eventType: string;
  readonly eventStatus: string;
  readonly resourceType: string;
  readonly resources: readonly string[];
  /** RFC 3339 (UTC) or null when IMDS sent "" or a time it could not be read as. */
  readonly notBefore: string | null;
  readonly description: string;
  readonly eventSource: string;
  readonly durationInSeconds: number;
  /** The event object exactly as received. */
  readonly raw: Readonly<Record<string, unknown>>;
}

export interface EventsDocument {
  readonly incarnation: number;
  readonly events: readonly ScheduledEvent[];
}

const RFC1123 =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} (GMT|UTC|Z|[+-]\d{4})$/;
const ISO8601 = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/i;

/**
 * parseNotBefore reads IMDS's NotBefore: RFC 1123 (the documented form), ISO 8601 (what
 * Microsoft's mock server emits) or "" (the event has started). ISO times without a zone are
 * taken as UTC, as the documentation states every NotBefore is. Anything else is null: the
 * event is still reported, with the original text kept in `raw`.
 */
export function parseNotBefore(value: string | undefined): string | null {
  if (value === undefined) return null;
  const text = value.trim();
  if (text === '') return null;
  let ms: number;
  if (RFC1123.test(text)) {
    ms = Date.parse(text);
  } else if (ISO8601.test(text)) {
    const hasZone = /(Z|[+-]\d{2}:?\d{2})$/i.test(text);
    ms = Date.parse(hasZone ? text : `${text.replace(' ', 'T')}Z`);
  } else {
    return null;
  }
  return Number.isFinite(ms) ? new Date(ms).toISOString().replace('.000Z', 'Z') : null;
}

const STATUS_RANK: Record<string, number> = { Scheduled: 1, Started: 2 };

/** toDomainEvent maps one wire event to the domain, applying the documented defaults. */
export function toDomainEvent(wire: WireEvent): ScheduledEvent {
  return Object.freeze({
    eventId: wire.EventId,
    eventType: wire.EventType,
    eventStatus: wire.EventStatus,
    resourceType: wire.ResourceType ?? 'VirtualMachine',
    resources: Object.freeze([...(wire.Resources ?? [])]),
    notBefore: parseNotBefore(wire.NotBefore),
    description: wire.Description ?? '',
    eventSource: wire.EventSource ?? 'Platform',
    durationInSeconds: wire.DurationInSeconds ?? -1,
    raw: deepFreeze(structuredClone(wire) as Record<string, unknown>),
  });
}

/**
 * toDomainDocument maps a validated wire document to the domain.
 *
 * Duplicate EventIds: IMDS documents one entry per event, so a repeated EventId is a fault of
 * the sender. The bridge keeps one entry per EventId, choosing the one furthest along its
 * lifecycle (Started over Scheduled) and, between equals, the first. Reporting an event as
 * started when any copy says so is the safe reading: preparation must not wait on it.
 * The number of dropped duplicates is returned so the caller can log it.
 */
export function toDomainDocument(wire: WireDocument): { document: EventsDocument; duplicates: number } {
  const byId = new Map<string, ScheduledEvent>();
  let duplicates = 0;
  for (const w of wire.Events) {
    const event = toDomainEvent(w);
    const seen = byId.get(event.eventId);
    if (seen === undefined) {
      byId.set(event.eventId, event);
      continue;
    }
    duplicates += 1;
    if ((STATUS_RANK[event.eventStatus] ?? 0) > (STATUS_RANK[seen.eventStatus] ?? 0)) {
      byId.set(event.eventId, event);
    }
  }
  return {
    document: Object.freeze({ incarnation: wire.DocumentIncarnation, events: Object.freeze([...byId.values()]) }),
    duplicates,
  };
}

/** WireInstanceCompute is the subset of `/metadata/instance/compute` the bridge reads. */
export const WireInstanceCompute = z.looseObject({
  name: z.string().optional(),
  resourceId: z.string().optional(),
  subscriptionId: z.string().optional(),
  resourceGroupName: z.string().optional(),
  vmScaleSetName: z.string().optional(),
  location: z.string().optional(),
  zone: z.string().optional(),
  vmId: z.string().optional(),
});
export type WireInstanceCompute = z.infer<typeof WireInstanceCompute>;

export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as Record<string, unknown>)) deepFreeze(v);
  }
  return value;
}
