/**
 * Reading an Event Grid delivery: an array of events in the Event Grid schema, or one or more
 * in the CloudEvents 1.0 schema. A subscription validation event (Event Grid schema) is answered
 * with its code; a scheduled event of the `Microsoft.ResourceNotifications.MaintenanceResources`
 * system topic (either type spelling) is read into Azure's record; any other type is counted and
 * ignored. A batch with one malformed event is refused whole (400), and one from a topic outside
 * the configured subscriptions is refused (403): nothing of it is kept.
 * https://learn.microsoft.com/azure/event-grid/webhook-event-delivery
 */
import { HttpError } from '../approval/requests.ts';
import { AZURE_EVENT_TYPES, azureEventOf, reportedAt, subscriptionOf, type AzureEvent } from '../fleet/view/azure.ts';

const VALIDATION = 'microsoft.eventgrid.subscriptionvalidationevent';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export type EventGridRead = { readonly validationCode: string } | { readonly events: AzureEvent[]; readonly ignored: number };

export function readEventGrid(body: unknown, subscriptions: readonly string[], now: string): EventGridRead {
  const list = Array.isArray(body) ? body : isObject(body) && body.specversion !== undefined ? [body] : null;
  if (list === null) throw new HttpError(400, 'MALFORMED', 'a delivery is an array of events (or one CloudEvent)');
  if (list.length > 5000) throw new HttpError(400, 'MALFORMED', 'a delivery holds at most 5000 events');
  const allowed = new Set(subscriptions.map((s) => s.toLowerCase()));
  const events: AzureEvent[] = [];
  let ignored = 0;
  for (const [i, e] of list.entries()) {
    const bad = (why: string) => new HttpError(400, 'MALFORMED', `event ${i}: ${why}; nothing of the delivery was kept`);
    if (!isObject(e)) throw bad('not an object');
    const cloud = e.specversion !== undefined;
    const type = cloud ? e.type : e.eventType;
    const topic = cloud ? e.source : e.topic;
    if (typeof e.id !== 'string' || e.id === '') throw bad('no id');
    if (typeof type !== 'string' || type === '') throw bad(cloud ? 'no type' : 'no eventType');
    if (typeof topic !== 'string') throw bad(cloud ? 'no source' : 'no topic');
    if (!isObject(e.data)) throw bad('no data object');
    const subscription = subscriptionOf(topic);
    if (subscription === null || !allowed.has(subscription))
      throw new HttpError(
        403,
        'TOPIC_NOT_ALLOWED',
        `event ${i} comes from ${topic}, outside azure.subscriptions; nothing of the delivery was kept`,
      );
    const t = type.toLowerCase();
    if (t === VALIDATION && !cloud) {
      const code = e.data.validationCode;
      if (typeof code !== 'string' || code === '') throw bad('a validation event without validationCode');
      return { validationCode: code };
    }
    if (!AZURE_EVENT_TYPES.includes(t)) {
      ignored++;
      continue;
    }
    const info = isObject(e.data.resourceInfo) ? e.data.resourceInfo : null;
    const properties = info !== null && isObject(info.properties) ? info.properties : e.data;
    const recordId = typeof info?.id === 'string' ? info.id : typeof e.subject === 'string' ? e.subject : '';
    const time = cloud ? e.time : e.eventTime;
    const operational = isObject(e.data.operationalInfo) ? e.data.operationalInfo.resourceEventTime : undefined;
    // the report's own time, never later than its receipt: a report dated in the future counts as now
    const at = reportedAt(
      [operational, time].find((x): x is string => typeof x === 'string' && Number.isFinite(Date.parse(x))),
      now,
    );
    const read = azureEventOf(recordId, properties, 'eventgrid', at);
    if (typeof read === 'string') throw bad(read);
    if (read.subscriptionId !== null && !allowed.has(read.subscriptionId))
      throw new HttpError(403, 'TOPIC_NOT_ALLOWED', `event ${i} names a VM outside azure.subscriptions; nothing of the delivery was kept`);
    events.push(read);
  }
  return { events, ignored };
}
