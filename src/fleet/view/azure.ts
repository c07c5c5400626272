/**
 * Azure's own record of a VM's scheduled event, as the relay keeps it: from an Event Grid
 * delivery of the `Microsoft.ResourceNotifications.MaintenanceResources` system topic, or from
 * Resource Graph's `maintenanceresources` table. Both are in preview on Azure's side, and their
 * pages spell the event type two ways; both readings end in one shape, keyed by EventId and the
 * VM's (or scale set's) resource id.
 *
 * The records live in the fleet store beside the groups' (the pseudo-group AZURE_GROUP), one per
 * EventId and resource, parsed by their schema on read.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { parseNotBefore, type ScheduledEvent } from '../../imds/wire.ts';
import { identityFrom, type VmIdentity } from '../../imds/identity.ts';
import { eventResourceFrom } from '../../azure/resource-id.ts';

/** The event types of a scheduled event in Azure's feed, as Microsoft's pages spell them (compared without case). */
export const AZURE_EVENT_TYPES = [
  'Microsoft.ResourceNotifications.MaintenanceResources.ScheduledEventEmitted',
  'microsoft.maintenance/scheduledevents/write',
].map((t) => t.toLowerCase());

/** Why an event Azure lists is unwatched, and when the relay said so (once, by the replica whose write won). */
export interface Unwatched {
  readonly vm: string;
  readonly why: 'no-member' | 'stale-member' | 'not-listed';
  readonly at: string;
  readonly by: string;
}

export interface AzureRecord {
  readonly eventId: string;
  /** The VM's resource id, or the scale set's, in lower case. */
  readonly resourceId: string;
  readonly subscriptionId: string | null;
  /** The instances the event names (`Resources`). */
  readonly resources: readonly string[];
  readonly eventType: string;
  /** Scheduled, Started, Completed, Canceled. */
  readonly status: string;
  readonly notBefore: string | null;
  readonly durationInSeconds: number;
  readonly description: string;
  /** Where the relay learnt of it: an Event Grid delivery, Resource Graph, or its own approval through Resource Manager (`relay`). */
  readonly source: 'eventgrid' | 'resourcegraph' | 'relay';
  readonly firstSeenAt: string;
  readonly updatedAt: string;
  /** The VMs said to be unwatched, each once. */
  readonly unwatched: readonly Unwatched[];
  /** Approved through Resource Manager by the relay (`via: arm`), by whom and when. */
  readonly acknowledged?: { readonly by: string; readonly at: string; readonly reason?: string; readonly forced?: true };
}

const text = z.string().max(2048);
export const AzureRecordSchema: z.ZodType<AzureRecord> = z.object({
  eventId: text,
  // a VM's or a scale set's id, or the record is none of Azure's (the store is written by every member)
  resourceId: text.refine((id) => eventResourceFrom(id) !== null, "not a VM's or a scale set's resource id"),
  subscriptionId: text.nullable(),
  resources: z.array(text).max(1000),
  eventType: text,
  status: text,
  notBefore: text.nullable(),
  durationInSeconds: z.number(),
  description: z.string().max(4096),
  source: z.enum(['eventgrid', 'resourcegraph', 'relay']),
  firstSeenAt: text,
  updatedAt: text,
  unwatched: z.array(z.object({ vm: text, why: z.enum(['no-member', 'stale-member', 'not-listed']), at: text, by: text.max(200) })),
  acknowledged: z.object({ by: text, at: text, reason: z.string().max(2000).optional(), forced: z.literal(true).optional() }).optional(),
});

export const AZURE_PREFIX = 'azure-';

/** azureRecordName: the store name of an event's record for one resource (stable: a digest of EventId and resource id). */
export const azureRecordName = (eventId: string, resourceId: string): string =>
  `${AZURE_PREFIX}${createHash('sha256').update(`${eventId}\n${resourceId.toLowerCase()}`).digest('hex').slice(0, 32)}`;

/** A scheduled event as Azure's feed reports it, before the relay keeps it. */
export type AzureEvent = Omit<AzureRecord, 'firstSeenAt' | 'updatedAt' | 'unwatched' | 'acknowledged'> & { readonly at: string };

/** ended: Azure says the event is over (Completed or Canceled). */
export const ended = (status: string): boolean => /^(completed|canceled|cancelled)$/i.test(status);

/** pick: a property by any of its spellings (Azure's pages use both camelCase and PascalCase). */
function pick(o: Record<string, unknown>, ...names: string[]): unknown {
  for (const n of names) {
    const k = Object.keys(o).find((key) => key.toLowerCase() === n.toLowerCase());
    if (k !== undefined) return o[k];
  }
  return undefined;
}

const asText = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);

/** subscriptionOf: the subscription id in a resource id or topic, lower case. */
export const subscriptionOf = (id: string): string | null => /\/subscriptions\/([^/]+)/i.exec(id)?.[1]?.toLowerCase() ?? null;

/** vmOf: a VM as the fleet's records name it: its name, its resource id, and what that id says (subscription, resource group, scale set). */
export function vmOf(name: string, resourceId: string): VmIdentity {
  return identityFrom(null, {
    name,
    resourceId,
    subscriptionId: subscriptionOf(resourceId),
    resourceGroupName: /\/resourcegroups\/([^/]+)/i.exec(resourceId)?.[1] ?? null,
    vmScaleSetName: /\/virtualmachinescalesets\/([^/]+)/i.exec(resourceId)?.[1] ?? null,
  });
}

/** eventOf: a scheduled event as the fleet's records say it (Azure's feed, or a member's record), in the form IMDS gives it. */
export function eventOf(
  e: Pick<ScheduledEvent, 'eventId' | 'eventType' | 'resources' | 'notBefore' | 'durationInSeconds'> & {
    readonly status: string;
    readonly description?: string;
  },
): ScheduledEvent {
  return {
    ...{ eventId: e.eventId, eventType: e.eventType, eventStatus: e.status, resourceType: 'VirtualMachine', resources: [...e.resources] },
    ...{
      notBefore: e.notBefore,
      description: e.description ?? '',
      eventSource: 'Platform',
      durationInSeconds: e.durationInSeconds,
      raw: {},
    },
  };
}

/**
 * azureEventOf reads one scheduled event from Azure's properties (an Event Grid event's
 * `data.resourceInfo`, or a Resource Graph row), or says what is missing. The resource is the
 * `resourceId` property, or the part of the record's id before `/providers/Microsoft.Maintenance/`.
 */
export function azureEventOf(
  recordId: string,
  properties: Record<string, unknown>,
  source: AzureEvent['source'],
  at: string,
): AzureEvent | string {
  const eventId = asText(pick(properties, 'eventId')) ?? asText(/scheduledevents\/([^/]+)$/i.exec(recordId)?.[1]);
  if (eventId === null) return 'no EventId';
  const resourceId = (
    asText(pick(properties, 'resourceId')) ??
    /^(.*?)\/providers\/microsoft\.maintenance\//i.exec(recordId)?.[1] ??
    ''
  ).toLowerCase();
  if (eventResourceFrom(resourceId) === null) return 'no resource id of a VM or scale set';
  const resources = pick(properties, 'resources');
  const duration = Number(pick(properties, 'durationInSeconds') ?? -1);
  return {
    eventId,
    resourceId,
    subscriptionId: subscriptionOf(resourceId),
    resources: Array.isArray(resources) ? resources.filter((r): r is string => typeof r === 'string').slice(0, 1000) : [],
    eventType: asText(pick(properties, 'eventType')) ?? 'Unknown',
    status: asText(pick(properties, 'eventStatus', 'status')) ?? 'Scheduled',
    // in ISO 8601 as the members' records have it, whichever way Azure spelled it
    notBefore: parseNotBefore(asText(pick(properties, 'notBefore')) ?? undefined),
    durationInSeconds: Number.isFinite(duration) ? duration : -1,
    description: (asText(pick(properties, 'description')) ?? '').slice(0, 4096),
    source,
    at,
  };
}

/** scaleSetInstances: the instances a scale set's record names (`Resources`), or null when it is a VM's record (or names none). */
export const scaleSetInstances = (r: Pick<AzureRecord, 'resourceId' | 'resources'>): readonly string[] | null =>
  /\/virtualmachinescalesets\/[^/]+$/i.test(r.resourceId) && r.resources.length > 0 ? r.resources : null;

/** vmsNamed: the VMs a record takes down, in lower case: a scale set's instances, else the VM of its resource id. */
export const vmsNamed = (r: Pick<AzureRecord, 'resourceId' | 'resources'>): string[] => [
  ...new Set((scaleSetInstances(r) ?? [r.resourceId.slice(r.resourceId.lastIndexOf('/') + 1)]).map((n) => n.toLowerCase())),
];

/** reportedAt: when a report says it happened, never later than `now` (a report dated in the future counts as now). */
export function reportedAt(at: string | null | undefined, now: string): string {
  const t = at === null || at === undefined ? NaN : Date.parse(at);
  return Number.isFinite(t) && t < Date.parse(now) ? new Date(t).toISOString() : now;
}

/** revives: Resource Graph (Azure's state, read later) lists as pending an event only an Event Grid delivery said was over. */
const revives = (previous: AzureRecord, e: AzureEvent): boolean =>
  previous.source === 'eventgrid' && e.source === 'resourcegraph' && !ended(e.status);

/**
 * merged: a record with a newer report of its event (an older report than the record's changes
 * nothing; a record's time later than `now`, written before times were bounded, counts as now).
 */
export function merged(previous: AzureRecord | null, e: AzureEvent, now: string): AzureRecord | null {
  if (previous !== null && Date.parse(e.at) < Date.parse(reportedAt(previous.updatedAt, now))) return null;
  // an event once over stays over: a late Scheduled delivered out of order does not bring it back,
  // unless Resource Graph still lists it after Event Grid alone said it ended
  if (previous !== null && ended(previous.status) && !ended(e.status) && !revives(previous, e)) return null;
  const { at, ...fields } = e;
  const same =
    previous !== null &&
    previous.status === e.status &&
    previous.notBefore === e.notBefore &&
    previous.durationInSeconds === e.durationInSeconds &&
    previous.resources.join('\n') === e.resources.join('\n');
  if (same) return null;
  return {
    ...fields,
    firstSeenAt: previous?.firstSeenAt ?? now,
    updatedAt: at,
    unwatched: previous?.unwatched ?? [],
    ...(previous?.acknowledged ? { acknowledged: previous.acknowledged } : {}),
  };
}
