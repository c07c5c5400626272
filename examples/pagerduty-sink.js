/**
 * A PagerDuty sink for scheduled-events-bridge, written as an outside module: it imports only
 * the bridge's public API and its own dependencies. Configure it with
 *
 *   sinks:
 *     - name: pagerduty
 *       type: module
 *       module: ./pagerduty-sink.js        # relative to the configuration file
 *       config:
 *         routingKey: ${PAGERDUTY_ROUTING_KEY}
 *         severity: warning
 *
 * Each maintenance event becomes one PagerDuty alert (Events API v2), keyed by the VM and the
 * EventId: Scheduled, updated and Started trigger it, an approval acknowledges it, Completed
 * and Canceled resolve it.
 */
import { defineSink, delivered, reject, retry, transitionOf } from 'scheduled-events-bridge';
import { z } from 'zod';

const ACTIONS = {
  scheduled: 'trigger',
  updated: 'trigger',
  started: 'trigger',
  approved: 'acknowledge',
  completed: 'resolve',
  canceled: 'resolve',
};

const configSchema = z.strictObject({
  /** The integration key of a PagerDuty service ("Events API v2" integration). */
  routingKey: z.string().regex(/^[A-Za-z0-9]{32}$/, 'must be a 32-character PagerDuty integration key'),
  severity: z.enum(['critical', 'error', 'warning', 'info']).default('warning'),
  url: z.url({ protocol: /^https?$/ }).default('https://events.pagerduty.com/v2/enqueue'),
});

/** @param {import('scheduled-events-bridge').BridgeEvent} event */
function summary(event) {
  const d = event.data;
  const when = d.notBefore ? ` not before ${d.notBefore}` : '';
  return `${d.eventType} of ${d.vm.name}: ${d.eventStatus}${when} (${d.eventSource})`.slice(0, 1024);
}

export default defineSink({
  name: 'pagerduty',
  configSchema,
  maxBatchSize: 1,
  create(config) {
    return {
      async send(events, { signal }) {
        const event = events[0];
        const d = event.data;
        const body = {
          routing_key: config.routingKey,
          event_action: ACTIONS[transitionOf(event)],
          dedup_key: `${d.vm.name}/${d.eventId}`,
          payload: {
            summary: summary(event),
            source: d.vm.resourceId ?? d.vm.name,
            severity: config.severity,
            timestamp: event.time,
            component: d.vm.name,
            group: d.vm.vmScaleSetName ?? undefined,
            class: d.eventType,
            custom_details: {
              eventId: d.eventId,
              resources: d.resources,
              description: d.description,
              durationInSeconds: d.durationInSeconds,
            },
          },
        };
        let res;
        try {
          res = await fetch(config.url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
            signal,
          });
        } catch (err) {
          return [retry(`PagerDuty unreachable: ${err.cause?.code ?? err.message}`)];
        }
        const text = await res.text().catch(() => '');
        if (res.status === 202 || res.status === 200) return [delivered];
        // the Events API: 400 is a bad event (never accepted however often it is sent); 429 and 5xx pass
        if (res.status === 429 || res.status >= 500) {
          const after = Number(res.headers.get('retry-after'));
          return [retry(`PagerDuty answered ${res.status}`, Number.isFinite(after) && after > 0 ? after * 1000 : undefined)];
        }
        return [reject(`PagerDuty answered ${res.status}: ${text.slice(0, 200)}`)];
      },
      async close() {},
    };
  },
});
