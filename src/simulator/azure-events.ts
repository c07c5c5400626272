/**
 * Azure's own report of a scheduled event, as the `Microsoft.ResourceNotifications.MaintenanceResources`
 * system topic carries it (`resourceInfo`, the same shape Resource Graph's `maintenanceresources`
 * rows have), and its Event Grid notification: what the relay's feed reads, for `demo --fleet`
 * and the tests. The simulated VMs live in SUBSCRIPTION.
 * https://learn.microsoft.com/azure/event-grid/event-schema-resource-notifications
 */
import { randomUUID } from 'node:crypto';

/** The subscription of every simulated VM (its resource id in instance metadata). */
export const SUBSCRIPTION = '00000000-0000-0000-0000-000000000000';
const EVENT_TYPE = 'Microsoft.ResourceNotifications.MaintenanceResources.ScheduledEventEmitted';

interface FeedEvent {
  readonly resourceId: string;
  readonly eventId: string;
  readonly status?: string;
  readonly eventType?: string;
  readonly resources?: readonly string[];
  readonly notBefore?: string;
  readonly durationInSeconds?: number;
  readonly description?: string;
}

/** scheduledEventOf: Azure's record of one scheduled event (the `resourceInfo` of its notification). */
export function scheduledEventOf(e: FeedEvent): { id: string; name: string; type: string; properties: Record<string, unknown> } {
  const id = `${e.resourceId}/providers/Microsoft.Maintenance/scheduledevents/${e.eventId}`;
  return {
    id,
    name: e.eventId,
    type: 'Microsoft.Maintenance/scheduledevents',
    properties: {
      eventId: e.eventId,
      eventType: e.eventType ?? 'Reboot',
      eventStatus: e.status ?? 'Scheduled',
      resourceType: 'VirtualMachine',
      resources: e.resources ?? [e.resourceId.slice(e.resourceId.lastIndexOf('/') + 1)],
      notBefore: e.notBefore ?? new Date(Date.now() + 600_000).toUTCString(),
      durationInSeconds: e.durationInSeconds ?? -1,
      description: e.description ?? 'Virtual machine is going to be restarted as requested by platform.',
      eventSource: 'Platform',
    },
  };
}

/** eventGridEvent: the notification in the Event Grid schema. */
export function eventGridEvent(e: FeedEvent, type = EVENT_TYPE, subscription = SUBSCRIPTION): Record<string, unknown> {
  const info = scheduledEventOf(e);
  const now = new Date().toISOString();
  return {
    id: randomUUID(),
    topic: `/subscriptions/${subscription}`,
    subject: info.id,
    eventType: type,
    eventTime: now,
    dataVersion: '1',
    metadataVersion: '1',
    data: { resourceInfo: info, operationalInfo: { resourceEventTime: now }, apiVersion: '2023-10-01-preview' },
  };
}
