/**
 * The simulator's event model: an event as the simulator keeps it, how one is added, how
 * events move along their lifecycle by themselves, and the documents IMDS would render.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { SUBSCRIPTION } from './azure-events.ts';

export interface SimEvent {
  eventId: string;
  eventType: string;
  /** Advisory: a risk, not a maintenance (SpotRebalanceRecommendation): it never starts, and goes after `startedMs`. */
  status: 'Scheduled' | 'Started' | 'Advisory';
  resources: string[];
  source: string;
  description: string;
  durationSeconds: number;
  /** When the event starts by itself (ms since epoch); null once Started. */
  notBefore: number | null;
  notBeforeFormat: 'rfc1123' | 'iso8601';
  /** How long it stays Started before it disappears (ms). */
  startedMs: number;
  startedAt: number | null;
  /** When Azure cancels it while still Scheduled (ms since epoch). */
  cancelAt: number | null;
  /** When Azure moves NotBefore (ms since epoch), and to how far ahead of that moment. */
  rescheduleAt: number | null;
  rescheduleNoticeMs: number;
  scenario: string | null;
  /** Microsoft's mock server's way: each change of status gives the event a new EventId. */
  newIdPerState: boolean;
}

export const AddEventSpec = z.strictObject({
  EventId: z.string().min(1).optional(),
  EventType: z.string().min(1).default('Reboot'),
  EventStatus: z.enum(['Scheduled', 'Started', 'Advisory']).default('Scheduled'),
  Resources: z.array(z.string()).optional(),
  EventSource: z.string().default('Platform'),
  Description: z.string().default(''),
  DurationInSeconds: z.number().int().default(-1),
  /** Milliseconds until NotBefore. */
  noticeMs: z
    .number()
    .int()
    .min(0)
    .default(15 * 60_000),
  /** Milliseconds the event stays Started (an Advisory: listed). */
  startedMs: z
    .number()
    .int()
    .min(0)
    .default(10 * 60_000),
  notBeforeFormat: z.enum(['rfc1123', 'iso8601']).default('rfc1123'),
  /** Give the event a new EventId when it starts, as Microsoft's mock server does. */
  newIdPerState: z.boolean().default(false),
});
export type AddEventSpec = z.input<typeof AddEventSpec>;

/** newSimEvent builds an event from a validated spec, at `now`. */
export function newSimEvent(s: z.infer<typeof AddEventSpec>, vmName: string, scenario: string | null, now: number): SimEvent {
  return {
    eventId: s.EventId ?? randomUUID().toUpperCase(),
    eventType: s.EventType,
    status: s.EventStatus,
    resources: s.Resources ?? [vmName],
    source: s.EventSource,
    description: s.Description,
    durationSeconds: s.DurationInSeconds,
    notBefore: s.EventStatus === 'Scheduled' ? now + s.noticeMs : null,
    notBeforeFormat: s.notBeforeFormat,
    startedMs: s.startedMs,
    startedAt: s.EventStatus === 'Started' ? now : null,
    cancelAt: s.EventStatus === 'Advisory' ? now + s.startedMs : null,
    rescheduleAt: null,
    rescheduleNoticeMs: 0,
    scenario,
    newIdPerState: s.newIdPerState,
  };
}

/**
 * advance moves events along their lifecycle at `now`: NotBefore reached starts them (through
 * `start`), Started ones end after their time, canceled ones go, rescheduled ones move.
 * Returns the events that remain, and whether anything changed.
 */
export function advance(events: readonly SimEvent[], now: number, start: (e: SimEvent) => void): { keep: SimEvent[]; changed: boolean } {
  let changed = false;
  const keep: SimEvent[] = [];
  for (const e of events) {
    if (e.status !== 'Started' && e.cancelAt !== null && now >= e.cancelAt) {
      changed = true;
      continue;
    }
    if (e.status === 'Scheduled' && e.rescheduleAt !== null && now >= e.rescheduleAt) {
      e.notBefore = now + e.rescheduleNoticeMs;
      e.rescheduleAt = null;
      changed = true;
    }
    if (e.status === 'Scheduled' && e.notBefore !== null && now >= e.notBefore) {
      start(e);
      changed = true;
    }
    if (e.status === 'Started' && e.startedAt !== null && now >= e.startedAt + e.startedMs) {
      changed = true;
      continue;
    }
    keep.push(e);
  }
  return { keep, changed };
}

/** renderDocument renders events exactly as IMDS would. */
export function renderDocument(
  events: readonly SimEvent[],
  incarnation: number,
): { DocumentIncarnation: number; Events: Record<string, unknown>[] } {
  return {
    DocumentIncarnation: incarnation,
    Events: events.map((e) => ({
      EventId: e.eventId,
      EventStatus: e.status,
      EventType: e.eventType,
      ResourceType: 'VirtualMachine',
      Resources: [...e.resources],
      NotBefore: e.notBefore === null ? '' : formatNotBefore(e.notBefore, e.notBeforeFormat),
      Description: e.description,
      EventSource: e.source,
      DurationInSeconds: e.durationSeconds,
    })),
  };
}

/** renderCompute answers /metadata/instance/compute for a VM. */
export function renderCompute(vmName: string, resourceGroup: string): Record<string, string> {
  return {
    name: vmName,
    resourceId: `/subscriptions/${SUBSCRIPTION}/resourceGroups/${resourceGroup}/providers/Microsoft.Compute/virtualMachines/${vmName}`,
    subscriptionId: SUBSCRIPTION,
    resourceGroupName: resourceGroup,
    vmScaleSetName: '',
    location: 'westeurope',
    zone: '1',
    vmId: '11111111-2222-3333-4444-555555555555',
    osType: 'Linux',
  };
}

/** formatNotBefore writes a time as IMDS does (RFC 1123) or as Microsoft's mock server does (ISO 8601). */
export function formatNotBefore(ms: number, format: 'rfc1123' | 'iso8601'): string {
  const d = new Date(ms);
  return format === 'rfc1123' ? d.toUTCString() : d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
