/**
 * eventhubs sink: CloudEvents to Azure Event Hubs through the official EventHubProducerClient
 * (loaded only when such a sink is configured). Auth by connection string, or by namespace and
 * an Entra ID credential (role: Azure Event Hubs Data Sender). The partition key is the
 * EventId by default, so every transition of one maintenance event lands in one partition, in
 * order. The SDK's own retries are off: the dispatcher owns retrying.
 */
import type { EventData, EventHubProducerClient } from '@azure/event-hubs';
import { z } from 'zod';
import { sinkBase, type SinkModule } from '../../src/api.ts';
import { azureAuth, createCredential, entityPathOf, requireOneAuth, sdkOptions, toAmqpPayload } from '../../src/kit.ts';
import { GroupBy, groupOf, sendInBatches } from '../shared/batches.ts';

export const configSchema = z
  .strictObject({
    type: z.literal('eventhubs'),
    ...sinkBase,
    ...azureAuth('an Event Hubs'),
    eventHubName: z.string().min(1).optional().describe('Needed unless the connection string has EntityPath.'),
    partitionKey: GroupBy.default('eventId').describe(
      'eventId: all transitions of one event in one partition, in order; vmName: all events of this VM together; none: spread.',
    ),
    mode: z
      .enum(['binary', 'structured'])
      .default('binary')
      .describe('binary: the data as the body, attributes as application properties; structured: one JSON CloudEvent as the body.'),
  })
  .superRefine((c, ctx) => {
    requireOneAuth(c, ctx);
    const hub = c.eventHubName ?? (c.connectionString ? entityPathOf(c.connectionString) : undefined);
    if (hub === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['eventHubName'],
        // read from connectionString: a command that leaves it unresolved leaves this unchecked
        params: { reads: ['connectionString'] },
        message: 'is required when the connection string has no EntityPath',
      });
  });
export type EventHubsConfig = z.infer<typeof configSchema>;

export const eventHubsSink: SinkModule<EventHubsConfig, typeof configSchema> = {
  type: 'eventhubs',
  configSchema,
  maxBatchSize: 100,
  async create(config) {
    const { EventHubProducerClient } = await import('@azure/event-hubs');
    const options = sdkOptions(config.delivery.timeoutMs);
    let client: EventHubProducerClient;
    if (config.connectionString !== undefined) {
      client = config.eventHubName
        ? new EventHubProducerClient(config.connectionString, config.eventHubName, options)
        : new EventHubProducerClient(config.connectionString, options);
    } else {
      const credential = await createCredential(config.credential ?? { kind: 'managedIdentity' });
      client = new EventHubProducerClient(config.fullyQualifiedNamespace!, config.eventHubName!, credential, options);
    }
    return {
      async send(events, { signal }) {
        return sendInBatches<EventData>(
          events,
          (e) => groupOf(config.partitionKey, e),
          (e) => {
            const p = toAmqpPayload(e, config.mode);
            return { body: p.body, contentType: p.contentType, properties: p.properties, messageId: e.id };
          },
          (m) => (m.body as Buffer).length + 512,
          (partitionKey) => client.createBatch({ ...(partitionKey !== undefined ? { partitionKey } : {}), abortSignal: signal }),
          (batch) => client.sendBatch(batch as Parameters<EventHubProducerClient['sendBatch']>[0], { abortSignal: signal }),
        );
      },
      async close() {
        await client.close();
      },
    };
  },
};
