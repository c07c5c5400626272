/**
 * matchesFilter decides whether one CloudEvent reaches a sink, from the sink's `filter`:
 * transition kinds, event types, event sources and scope (all, self, leader).
 */
import type { FilterConfig } from '../../sinks/types.ts';
import { affects, isLeader } from '../imds/identity.ts';

export interface FilterSubject {
  readonly transition: string;
  readonly eventType: string;
  readonly eventSource: string;
  readonly resources: readonly string[];
}

export function matchesFilter(filter: FilterConfig, subject: FilterSubject, vmName: string): boolean {
  if (filter.types !== undefined && !(filter.types as readonly string[]).includes(subject.transition)) return false;
  if (filter.eventTypes !== undefined && !(filter.eventTypes as readonly string[]).includes(subject.eventType)) return false;
  if (filter.eventSources !== undefined && !(filter.eventSources as readonly string[]).includes(subject.eventSource)) return false;
  if (filter.scope === 'self') return affects(subject.resources, vmName);
  if (filter.scope === 'leader') return isLeader(subject.resources, vmName);
  return true;
}
