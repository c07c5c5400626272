/**
 * diff turns two consecutive Scheduled Events documents into transitions. It is pure.
 *
 * Events are correlated by EventId, never by incarnation arithmetic: incarnations may jump,
 * and may go backwards after a host change; a lower incarnation is a new baseline that is
 * still diffed event by event. Two documents with the same incarnation but different content
 * are diffed like any other pair.
 *
 * Rules (docs/architecture.md, "Transition rules"):
 *   new, Scheduled                      -> scheduled
 *   new, Started                        -> started   (a host failure skips Scheduled)
 *   Scheduled -> Started                -> started
 *   same status, watched fields changed -> updated   (NotBefore, Resources, DurationInSeconds,
 *                                                     Description, EventType, EventSource,
 *                                                     ResourceType)
 *   any other status change             -> updated   (e.g. Started -> Scheduled, or a status
 *                                                     this version does not know)
 *   gone while Started                  -> completed
 *   gone while not Started              -> canceled
 */
import type { EventsDocument, ScheduledEvent } from '../imds/wire.ts';

export const TRANSITIONS = ['scheduled', 'updated', 'started', 'completed', 'canceled', 'approved', 'fleet.collision'] as const;
export type TransitionKind = (typeof TRANSITIONS)[number];

export interface Transition {
  readonly kind: Exclude<TransitionKind, 'approved' | 'fleet.collision'>;
  /** The event as it is now; for completed/canceled, as it was last seen. */
  readonly event: ScheduledEvent;
  /** For `updated`: the names of the fields that changed. */
  readonly changed?: readonly string[];
  /** For `updated`: the event as it was before. */
  readonly previous?: ScheduledEvent;
  /** The incarnation of the document in which the change was observed. */
  readonly incarnation: number;
}

const WATCHED: readonly (keyof ScheduledEvent)[] = [
  'eventStatus',
  'eventType',
  'resourceType',
  'resources',
  'notBefore',
  'durationInSeconds',
  'description',
  'eventSource',
];

export function diff(previous: EventsDocument | null, next: EventsDocument): Transition[] {
  const before = new Map((previous?.events ?? []).map((e) => [e.eventId, e]));
  const after = new Set(next.events.map((e) => e.eventId));
  const out: Transition[] = [];
  const incarnation = next.incarnation;

  for (const event of next.events) {
    const old = before.get(event.eventId);
    if (old === undefined) {
      out.push({ kind: event.eventStatus === 'Started' ? 'started' : 'scheduled', event, incarnation });
      continue;
    }
    if (old.eventStatus !== 'Started' && event.eventStatus === 'Started') {
      out.push({ kind: 'started', event, incarnation });
      continue;
    }
    const changed = changedFields(old, event);
    if (changed.length > 0) out.push({ kind: 'updated', event, previous: old, changed, incarnation });
  }
  for (const old of previous?.events ?? []) {
    if (after.has(old.eventId)) continue;
    out.push({ kind: old.eventStatus === 'Started' ? 'completed' : 'canceled', event: old, incarnation });
  }
  return out;
}

function changedFields(a: ScheduledEvent, b: ScheduledEvent): string[] {
  return WATCHED.filter((key) => !sameValue(a[key], b[key]));
}

function sameValue(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => v === b[i]);
  return a === b;
}
