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
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { RelayBus } from './bus.ts';
import { RelayMetrics } from './metrics.ts';
import type { RelayConfig } from './config.ts';
import { RelayServer } from './routes.ts';
import { FleetRoutes } from './fleet-routes.ts';
import { FleetReader } from '../fleet/view/snapshot.ts';
import { RecordSeal } from '../fleet/view/seal.ts';
import { RelaySinks } from './sinks.ts';
import { AzureFeed } from './azure-feed.ts';
import { ResourceGraphPoll } from './resource-graph.ts';
import { ArmClient } from './arm.ts';
import { ArmApprovals } from './arm-approval.ts';
import { ConsoleServer } from './console-server.ts';
import { addressOf } from '../lib/validators.ts';
import { digestPoster, type DigestPoster } from './digest.ts';

export interface RunningRelay {
  readonly url: string;
  /** The console's own listener (`console.listen`), when the console is configured. */
  readonly consoleUrl: string | null;
  /** Service Bus, when the relay approves through it. */
  readonly bus: RelayBus | null;
  readonly metrics: RelayMetrics;
  /** Azure's feed, when configured (tests look for unwatched events at once through it). */
  readonly feed: AzureFeed | null;
  /** The Resource Graph poll, when configured (tests poll at once through it). */
  readonly graph: ResourceGraphPoll | null;
  /** The fleet store's reader, when `fleet` is configured. */
  readonly reader: FleetReader | null;
  /** The chat digest, when `digest` is configured. */
  readonly digest: DigestPoster | null;
  close(): Promise<void>;
}

/** The relay's fleet parts: the store reader, its own sinks, Azure's feed and its loops. */
async function fleetParts(config: RelayConfig, logger: Logger, metrics: RelayMetrics, replica: string, stdout: NodeJS.WritableStream) {
  const f = config.fleet;
  const none = { arm: null, approvals: null, feed: null, graph: null, digest: null };
  if (f === undefined) return { ...none, reader: null, sinks: null, loops: [] as ((signal: AbortSignal) => Promise<void>)[] };
  const reader = new FleetReader({
    ...{ store: f.store, timeoutMs: f.storeTimeoutMs, cacheMs: f.cacheMs, budgets: f.groups },
    seal: config.recordKey === null ? null : new RecordSeal(config.recordKey),
    onRead: (ok) => metrics.fleetReads.inc({ result: ok ? 'ok' : 'failed' }),
  });
  await reader.open();
  const sinks = await RelaySinks.create(config.sinks, logger, stdout, (sink, result) => metrics.sinkOutcomes.inc({ sink, result }));
  const digest = await digestPoster(config, { reader, sinks, logger, by: replica }, (sink, result) =>
    metrics.digests.inc({ sink, result }),
  );
  const digestLoops = digest === null ? [] : [(s: AbortSignal) => digest.run(s)];
  const azure = config.azure;
  if (azure === undefined) return { ...none, reader, sinks, digest, loops: digestLoops };
  const arm = new ArmClient(azure.arm);
  const approvals = new ArmApprovals({ config, reader, arm, logger });
  const feed = new AzureFeed({ config: azure, reader, sinks, logger, metrics, replica });
  const graph = azure.resourceGraph === undefined ? null : new ResourceGraphPoll({ config: azure, arm, feed, logger, metrics });
  const loops = [(s: AbortSignal) => feed.run(s), ...(graph === null ? [] : [(s: AbortSignal) => graph.run(s)]), ...digestLoops];
  return { arm, approvals, reader, sinks, feed, graph, digest, loops };
}

/** startRelay connects to Service Bus (when configured), starts holding its replies session and listens. */
export async function startRelay(
  config: RelayConfig,
  logger: Logger,
  listenAt: { host: string; port: number },
  stdout: NodeJS.WritableStream = process.stdout,
): Promise<RunningRelay> {
  const metrics = new RelayMetrics(config.bus !== null);
  const bus = config.bus === null ? null : new RelayBus(config, config.bus, logger, metrics);
  await bus?.open();
  const abort = new AbortController();
  const listening = bus?.listen(abort.signal);
  let parts: Awaited<ReturnType<typeof fleetParts>> | null = null;
  let server: RelayServer | null = null;
  let fleet: FleetRoutes | null = null;
  let consoleServer: ConsoleServer | null = null;
  let url: string;
  let consoleUrl: string | null = null;
  try {
    parts = await fleetParts(config, logger, metrics, bus?.replySession ?? `relay-${randomUUID()}`, stdout);
    fleet = new FleetRoutes({ config, reader: parts.reader, feed: parts.feed, arm: parts.approvals, metrics, logger });
    server = new RelayServer({ config, bus, metrics, logger, fleet });
    url = await server.listen(listenAt.host, listenAt.port);
    const c = config.console;
    if (c !== undefined && parts.reader !== null) {
      consoleServer = new ConsoleServer({ config, console: c, reader: parts.reader, bus, arm: parts.approvals, logger });
      const at = addressOf(c.listen);
      consoleUrl = await consoleServer.listen(at.host, at.port);
    }
  } catch (err) {
    abort.abort();
    await consoleServer?.close();
    await server?.close();
    await bus?.close();
    await listening;
    await parts?.digest?.close();
    await parts?.sinks?.close();
    await parts?.reader?.close();
    parts?.arm?.close();
    fleet?.close();
    throw err;
  }
  const loops = parts.loops.map((run) => run(abort.signal));
  const running = server;
  const people = consoleServer;
  const routes = fleet;
  const { reader, sinks, arm } = parts;
  const b = config.bus;
  logger.info(
    {
      url,
      ...(b === null || bus === null ? { serviceBus: null } : { queue: b.queue, replies: b.replies, replySession: bus.replySession }),
    },
    'relay listening',
  );
  if (consoleUrl !== null) logger.info({ url: `${consoleUrl}/console` }, 'relay console listening');
  return {
    url,
    consoleUrl,
    bus,
    metrics,
    feed: parts.feed,
    graph: parts.graph,
    reader: parts.reader,
    digest: parts.digest,
    async close() {
      await people?.close();
      await running.close();
      abort.abort();
      await Promise.all(loops);
      // a check started by a delivery says what it found before the sinks close
      await parts.feed?.settled();
      await bus?.close();
      await listening;
      await parts.digest?.close();
      await sinks?.close();
      await reader?.close();
      arm?.close();
      routes.close();
    },
  };
}
