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
import { deepFreeze } from '../lib/freeze.ts';

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
  /** The event object as received (unknown fields nested deeper than MAX_RAW_DEPTH are cut). */
  readonly raw: Readonly<Record<string, unknown>>;
}

export interface EventsDocument {
  readonly incarnation: number;
  readonly events: readonly ScheduledEvent[];
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const RFC1123 =
  /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d{1,2}) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (\d{4}) (\d{2}):(\d{2}):(\d{2}) (GMT|UTC|Z|[+-]\d{4})$/;
const ISO8601 = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/i;

/**
 * parseNotBefore reads IMDS's NotBefore: RFC 1123 (the documented form), ISO 8601 (what
 * Microsoft's mock server emits) or "" (the event has started). ISO times without a zone are
 * taken as UTC, as the documentation states every NotBefore is. Every part is checked, so an
 * impossible date (31 February, year 0000, hour 25) is never rolled over into another date as
 * `Date.parse` would do; the weekday of RFC 1123 is not checked (be liberal). Anything else is
 * null: the event is still reported, with the original text kept in `raw`.
 */
export function parseNotBefore(value: string | undefined): string | null {
  if (value === undefined) return null;
  const text = value.trim();
  if (text === '') return null;
  let ms: number | null = null;
  const r = RFC1123.exec(text);
  if (r !== null) {
    const g = groupsOf(r);
    ms = utcMs(g(3), MONTHS.indexOf(r[2] ?? '') + 1, g(1), g(4), g(5), g(6), 0, zoneMinutes(r[7] ?? ''));
  } else {
    const i = ISO8601.exec(text);
    if (i !== null) {
      const millis = i[7] === undefined ? 0 : Math.floor(Number(`0${i[7]}`) * 1000);
      const g = groupsOf(i);
      ms = utcMs(g(1), g(2), g(3), g(4), g(5), +(i[6] ?? 0), millis, zoneMinutes(i[8] ?? 'Z'));
    }
  }
  return ms === null ? null : new Date(ms).toISOString().replace('.000Z', 'Z');
}

/** groupsOf: a match's numbered groups as numbers (NaN for one that did not take part, which no date accepts). */
const groupsOf =
  (m: RegExpExecArray) =>
  (i: number): number =>
    Number(m[i] ?? NaN);

/** zoneMinutes reads GMT, UTC, Z, +hhmm or +hh:mm as minutes east of UTC; null when out of range. */
function zoneMinutes(zone: string): number | null {
  const z = zone.toUpperCase();
  if (z === 'GMT' || z === 'UTC' || z === 'Z') return 0;
  const m = /^([+-])(\d{2}):?(\d{2})$/.exec(z);
  if (m === null) return null;
  const g = groupsOf(m);
  if (g(2) > 23 || g(3) > 59) return null;
  return (m[1] === '-' ? -1 : 1) * (g(2) * 60 + g(3));
}

/** utcMs is the instant of a calendar date and time, or null when any part is impossible. */
function utcMs(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
  millis: number,
  offset: number | null,
): number | null {
  if (![year, month, day, hour, minute, second, millis].every(Number.isFinite)) return null;
  if (offset === null || year < 1 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  if (d.getUTCMonth() !== month - 1 || d.getUTCDate() !== day) return null; // 31 Feb, 29 Feb 2026
  d.setUTCHours(hour, minute, second, millis);
  return d.getTime() - offset * 60_000;
}

const STATUS_RANK: Record<string, number> = { Scheduled: 1, Started: 2 };

/** toDomainEvent maps one wire event to the domain, applying the documented defaults. */
function toDomainEvent(wire: WireEvent): ScheduledEvent {
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
    raw: deepFreeze(boundedCopy(wire, MAX_RAW_DEPTH) as Record<string, unknown>),
  });
}

/** How deep `raw` keeps unknown fields; IMDS's own fields are one or two levels deep. */
export const MAX_RAW_DEPTH = 16;

/**
 * boundedCopy copies JSON data down to `depth` levels; a value nested deeper becomes a short
 * note. An event whose unknown fields nest thousands of levels deep is still reported, with
 * the shallow part of them, instead of failing every poll (and holding back its neighbours).
 */
function boundedCopy(value: unknown, depth: number): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth <= 0) return `[left out: nested deeper than ${MAX_RAW_DEPTH} levels]`;
  if (Array.isArray(value)) return value.map((v) => boundedCopy(v, depth - 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, boundedCopy(v, depth - 1)]));
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
