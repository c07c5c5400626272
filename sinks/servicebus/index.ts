/**
 * servicebus sink: CloudEvents to an Azure Service Bus queue or topic through the official
 * ServiceBusClient (loaded only when such a sink is configured). `messageId` is the
 * CloudEvent id, so duplicate detection drops the copies every VM of a placement group sends;
 * `subject` is the CloudEvent type; an optional session id keeps consumers in order. Auth by
 * connection string, or by namespace and an Entra ID credential (role: Azure Service Bus Data
 * Sender). The SDK's own retries are off: the dispatcher owns retrying.
 */
import type { ServiceBusMessage, ServiceBusMessageBatch, ServiceBusSender } from '@azure/service-bus';
import { z } from 'zod';
import { type BridgeEvent, sinkBase, type SinkModule } from '../../src/api.ts';
import { azureAuth, requireOneAuth, sdkOptions, serviceBusClient, toAmqpPayload } from '../../src/kit.ts';
import { GroupBy, groupOf, sendInBatches } from '../shared/batches.ts';

export const configSchema = z
  .strictObject({
    type: z.literal('servicebus'),
    ...sinkBase,
    ...azureAuth('a Service Bus'),
    entity: z.string().min(1).describe('The queue or topic name.'),
    sessionId: GroupBy.default('none').describe(
      'none, or a session id per event (eventId) or per VM (vmName), for session-aware consumers.',
    ),
    timeToLiveMs: z.number().int().min(1000).optional().describe("Message time to live in ms; the entity's default when unset."),
    mode: z
      .enum(['binary', 'structured'])
      .default('binary')
      .describe('binary: the data as the body, attributes as application properties; structured: one JSON CloudEvent as the body.'),
  })
  .superRefine(requireOneAuth);
export type ServiceBusConfig = z.infer<typeof configSchema>;

export const serviceBusSink: SinkModule<ServiceBusConfig, typeof configSchema> = {
  type: 'servicebus',
  configSchema,
  maxBatchSize: 100,
  async create(config) {
    const client = await serviceBusClient(config, sdkOptions(config.delivery.timeoutMs));
    const sender: ServiceBusSender = client.createSender(config.entity);
    const sessionOf = (e: BridgeEvent) => groupOf(config.sessionId, e);
    return {
      async send(events, { signal }) {
        return sendInBatches<ServiceBusMessage>(
          events,
          sessionOf,
          (e) => {
            const p = toAmqpPayload(e, config.mode);
            const session = sessionOf(e);
            return {
              body: p.body,
              contentType: p.contentType,
              applicationProperties: p.properties,
              messageId: e.id,
              subject: e.type,
              ...(session !== undefined ? { sessionId: session } : {}),
              ...(config.timeToLiveMs !== undefined ? { timeToLive: config.timeToLiveMs } : {}),
            };
          },
          (m) => (m.body as Buffer).length + 512,
          async () => {
            const batch = await sender.createMessageBatch({ abortSignal: signal });
            return {
              get count() {
                return batch.count;
              },
              maxSizeInBytes: batch.maxSizeInBytes,
              tryAdd: (m: ServiceBusMessage) => batch.tryAddMessage(m),
              batch,
            } as never;
          },
          (b) => sender.sendMessages((b as unknown as { batch: ServiceBusMessageBatch }).batch, { abortSignal: signal }),
        );
      },
      async close() {
        await sender.close();
        await client.close();
      },
    };
  },
};
