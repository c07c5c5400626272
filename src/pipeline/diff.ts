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
 *   gone while Scheduled, but it must have happened (see EndContext)
 *                                       -> completed, Started not observed
 *   gone while not Started otherwise    -> canceled
 *
 * A maintenance can happen between two reads: a live-migration Freeze pauses the VM (and the
 * bridge) while its event is Started, and a Reboot or Redeploy shuts the bridge down before it
 * reads Started. An event that is gone after IMDS accepted this bridge's StartRequests, after its
 * NotBefore passed, or after the system booted later than the last read that listed it, has
 * happened: calling it canceled would tell every sink that a maintenance that happened did not.
 */
import type { EventsDocument, ScheduledEvent } from '../imds/wire.ts';

export const TRANSITIONS = [
  'scheduled',
  'updated',
  'started',
  'completed',
  'canceled',
  'approved',
  'fleet.collision',
  'fleet.paused',
  'calendar.conflict',
  'unwatched',
] as const;
export type TransitionKind = (typeof TRANSITIONS)[number];

export interface Transition {
  readonly kind: Exclude<TransitionKind, 'approved' | 'fleet.collision' | 'fleet.paused' | 'calendar.conflict' | 'unwatched'>;
  /** The event as it is now; for completed/canceled, as it was last seen. */
  readonly event: ScheduledEvent;
  /** For `updated`: the names of the fields that changed. */
  readonly changed?: readonly string[];
  /** For `updated`: the event as it was before. */
  readonly previous?: ScheduledEvent;
  /** The incarnation of the document in which the change was observed. */
  readonly incarnation: number;
  /** For `completed` whose Started was never read: what shows it happened. */
  readonly evidence?: CompletionEvidence;
}

/**
 * CompletionEvidence: why an event gone while Scheduled is taken to have happened. `approved`:
 * IMDS accepted this bridge's StartRequests for it; `notBefore`: its NotBefore had passed;
 * `boot`: the system booted after the last read that listed it.
 */
export type CompletionEvidence = 'approved' | 'notBefore' | 'boot';

/**
 * EndContext: what the diff needs to tell a maintenance that happened unseen from a
 * cancellation. Without it (or for a drill, whose own model reads Started), the status alone decides.
 */
export interface EndContext {
  /** When the new document was read (ms since epoch). */
  readonly now: number;
  /** When the previous good read was made: the last that listed the gone events (ms since epoch), or null. */
  readonly lastReadAt: number | null;
  /** When the system booted (ms since epoch), or null when unknown. */
  readonly bootedAt: number | null;
  /** Whether IMDS accepted this bridge's StartRequests for an event. */
  readonly approved: (eventId: string) => boolean;
  /** Events whose end follows the status alone (drills: their model shows Started itself). */
  readonly statusOnly?: (eventId: string) => boolean;
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

export function diff(previous: EventsDocument | null, next: EventsDocument, end?: EndContext): Transition[] {
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
    if (old.eventStatus === 'Started') {
      out.push({ kind: 'completed', event: old, incarnation });
      continue;
    }
    // only a Scheduled event announced a maintenance; an Advisory (or a status this version does not know) announced none
    const evidence =
      end === undefined || old.eventStatus !== 'Scheduled' || end.statusOnly?.(old.eventId) === true ? null : evidenceOf(old, end);
    out.push(evidence === null ? { kind: 'canceled', event: old, incarnation } : { kind: 'completed', event: old, incarnation, evidence });
  }
  return out;
}

/** evidenceOf says why an event gone while Scheduled must have happened, or null when it was canceled. */
export function evidenceOf(event: ScheduledEvent, end: EndContext): CompletionEvidence | null {
  if (end.approved(event.eventId)) return 'approved';
  const notBefore = event.notBefore === null ? Number.NaN : Date.parse(event.notBefore);
  if (Number.isFinite(notBefore) && end.now >= notBefore) return 'notBefore';
  if (end.bootedAt !== null && end.lastReadAt !== null && end.bootedAt > end.lastReadAt) return 'boot';
  return null;
}

function changedFields(a: ScheduledEvent, b: ScheduledEvent): string[] {
  return WATCHED.filter((key) => !sameValue(a[key], b[key]));
}

function sameValue(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => v === b[i]);
  return a === b;
}
