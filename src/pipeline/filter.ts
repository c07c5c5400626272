/**
 * FilterConfig and matchesFilter: which CloudEvents reach a sink. matchesFilter decides whether one CloudEvent reaches a sink, from the sink's `filter`:
 * transition kinds, event types, event sources, scope (all, self, leader) and drills.
 */
import { z } from 'zod';
import { TRANSITIONS } from './diff.ts';
import { affects, isLeader } from '../imds/identity.ts';
import { isDrill } from '../imds/drill-id.ts';

export const EVENT_TYPES = ['Freeze', 'Reboot', 'Redeploy', 'Preempt', 'Terminate', 'SpotRebalanceRecommendation'] as const;
export const EVENT_SOURCES = ['Platform', 'User'] as const;

/** FilterConfig chooses which transitions reach a sink. */
export const FilterConfig = z.strictObject({
  types: z
    .array(z.enum(TRANSITIONS))
    .min(1)
    .optional()
    .describe('The transitions to send; default: all (a preparation sink: what prepares and what ends the maintenance).'),
  eventTypes: z.array(z.enum(EVENT_TYPES)).min(1).optional().describe('The event types to send; default: all.'),
  eventSources: z.array(z.enum(EVENT_SOURCES)).min(1).optional().describe('Platform, User or both; default: both.'),
  scope: z
    .enum(['all', 'self', 'leader'])
    .default('all')
    .describe('all: every event IMDS lists; self: events naming this VM; leader: events whose first resource is this VM.'),
  drills: z.boolean().default(true).describe('false: this sink never gets the CloudEvents of a drill (se-bridge drill).'),
});
export type FilterConfig = z.infer<typeof FilterConfig>;

export interface FilterSubject {
  readonly transition: string;
  readonly eventType: string;
  readonly eventSource: string;
  readonly resources: readonly string[];
  /** The EventId, when known: a drill's is filtered out by `drills: false`. */
  readonly eventId?: string;
}

/** matchesFilter: with `vmName` null (this VM does not know its name yet) `self` and `leader` take every event: fail closed. */
export function matchesFilter(filter: FilterConfig, subject: FilterSubject, vmName: string | null): boolean {
  if (filter.types !== undefined && !(filter.types as readonly string[]).includes(subject.transition)) return false;
  if (filter.eventTypes !== undefined && !(filter.eventTypes as readonly string[]).includes(subject.eventType)) return false;
  if (filter.eventSources !== undefined && !(filter.eventSources as readonly string[]).includes(subject.eventSource)) return false;
  if (!filter.drills && subject.eventId !== undefined && isDrill(subject.eventId)) return false;
  if (vmName === null) return true;
  if (filter.scope === 'self') return affects(subject.resources, vmName);
  if (filter.scope === 'leader') return isLeader(subject.resources, vmName);
  return true;
}
