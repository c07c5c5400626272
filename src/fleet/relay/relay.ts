/**
 * The relay: one approval endpoint for a whole fleet. A stateless HTTP service (any number of
 * replicas behind a load balancer) that serves the approval server's routes, verifies each
 * request exactly as a bridge does, and turns it into a signed approval command on the VM's
 * Service Bus session. It answers with the VM's outcome when one arrives within
 * `replyWaitMs`, and 202 with the command id (the tracking id) otherwise.
 *
 * Its state lives in Service Bus: the command id is derived from the webhook-id or the link
 * token's nonce, so duplicate detection keeps one message however many replicas or retries
 * send it; single use of a token is enforced by the bridge that owns the event. Each replica
 * receives outcomes on its own session of the replies queue, and believes an outcome only
 * when it is signed with the link key of the VM it names.
 *
 * Routes: POST /v1/approvals (Standard Webhooks; body {vm, eventId, approver?, reason?}),
 * GET and POST /v1/approve (links), POST /v1/slack/interactions, /livez, /readyz, /metrics.
 */
import type { Logger } from 'pino';
import { RelayBus, RelayMetrics } from './bus.ts';
import type { RelayConfig } from './config.ts';
import { RelayServer } from './routes.ts';

export interface RunningRelay {
  readonly url: string;
  readonly bus: RelayBus;
  readonly metrics: RelayMetrics;
  close(): Promise<void>;
}

/** startRelay connects to Service Bus, starts holding its replies session and listens. */
export async function startRelay(config: RelayConfig, logger: Logger, listenAt: { host: string; port: number }): Promise<RunningRelay> {
  const metrics = new RelayMetrics();
  const bus = new RelayBus(config, logger, metrics);
  await bus.open();
  const abort = new AbortController();
  const listening = bus.listen(abort.signal);
  const server = new RelayServer({ config, bus, metrics, logger });
  let url: string;
  try {
    url = await server.listen(listenAt.host, listenAt.port);
  } catch (err) {
    abort.abort();
    await bus.close();
    await listening;
    throw err;
  }
  logger.info(
    { url, queue: config.serviceBus.queue, replies: config.serviceBus.replies, replySession: bus.replySession },
    'relay listening',
  );
  return {
    url,
    bus,
    metrics,
    async close() {
      await server.close();
      abort.abort();
      await bus.close();
      await listening;
    },
  };
}
