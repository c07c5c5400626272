/**
 * ResourceGraphPoll asks Resource Graph for the subscriptions' scheduled events every
 * `intervalSeconds` (the `maintenanceresources` table, in preview on Azure's side), with the
 * relay's Entra ID credential, and keeps each row as Azure's record of the event, as an Event
 * Grid delivery would. The query's pages (`$skipToken`) are followed, at most 50 of 1,000 rows.
 * The REST API goes through the project's HTTP client (one small POST) rather than
 * @azure/arm-resourcegraph, whose generated client and models would be loaded for one call.
 * https://learn.microsoft.com/rest/api/azureresourcegraph/resourcegraph/resources/resources
 */
import type { Logger } from 'pino';
import { errorFields } from '../lib/errors.ts';
import type { ArmClient } from './arm.ts';
import { sleep, spread } from '../lib/time.ts';
import { azureEventOf, type AzureEvent } from '../fleet/view/azure.ts';
import { isEventId } from '../azure/resource-id.ts';
import type { AzureFeed } from './azure-feed.ts';
import type { AzureFeedConfig } from './fleet-config.ts';
import type { RelayMetrics } from './metrics.ts';

export const RESOURCE_GRAPH_API = '2022-10-01';
/**
 * maintenanceQuery: the query of the subscriptions' scheduled events, or of one (by its EventId,
 * a GUID checked here: nothing else of a request is ever put in a query).
 */
export function maintenanceQuery(eventId?: string): string {
  if (eventId !== undefined && !isEventId(eventId)) throw new Error('an EventId in a query is a GUID');
  const one = eventId === undefined ? '' : ` | where name =~ '${eventId}' or tostring(properties.eventId) =~ '${eventId}'`;
  return `maintenanceresources | where type =~ 'microsoft.maintenance/scheduledevents'${one} | project id, properties`;
}
const MOST_PAGES = 50;
const PAGE_ROWS = 1000;

export class ResourceGraphPoll {
  readonly #config: AzureFeedConfig;
  readonly #graph: NonNullable<AzureFeedConfig['resourceGraph']>;
  readonly #arm: ArmClient;
  readonly #feed: AzureFeed;
  readonly #logger: Logger;
  readonly #metrics: RelayMetrics;
  #failing = false;

  constructor(o: { config: AzureFeedConfig; arm: ArmClient; feed: AzureFeed; logger: Logger; metrics: RelayMetrics }) {
    this.#config = o.config;
    this.#graph = o.config.resourceGraph!;
    this.#arm = o.arm;
    this.#feed = o.feed;
    this.#logger = o.logger;
    this.#metrics = o.metrics;
  }

  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.poll(signal);
      await sleep(spread(this.#graph.intervalSeconds * 1000, 0.1), signal).catch(() => undefined);
    }
  }

  /** poll runs the query once and keeps what it lists; how many rows it read (never throws). */
  async poll(signal?: AbortSignal): Promise<number> {
    try {
      const events = await this.#query(signal);
      const kept = await this.#feed.keep(events);
      this.#metrics.azureEvents.inc({ source: 'resourcegraph', result: 'kept' }, kept);
      this.#metrics.azureEvents.inc({ source: 'resourcegraph', result: 'unchanged' }, events.length - kept);
      if (this.#failing) this.#logger.info('relay: Resource Graph answers again');
      this.#failing = false;
      return events.length;
    } catch (err) {
      if (!this.#failing || this.#logger.isLevelEnabled('debug'))
        this.#logger.warn(
          { ...errorFields(err), code: 'RESOURCE_GRAPH_FAILED' },
          `relay: the Resource Graph query failed; asked again in ${this.#graph.intervalSeconds} s`,
        );
      this.#failing = true;
      return 0;
    }
  }

  #query(signal?: AbortSignal): Promise<AzureEvent[]> {
    return queryScheduledEvents(this.#arm, this.#config.subscriptions, undefined, signal);
  }
}

/**
 * queryScheduledEvents: Azure's records of the subscriptions' scheduled events (or of one), as
 * Resource Graph lists them now, every page read. Throws when Resource Graph does not answer 200.
 */
export async function queryScheduledEvents(
  arm: ArmClient,
  subscriptions: readonly string[],
  eventId: string | undefined,
  signal?: AbortSignal,
): Promise<AzureEvent[]> {
  const path = `/providers/Microsoft.ResourceGraph/resources?api-version=${RESOURCE_GRAPH_API}`;
  const events: AzureEvent[] = [];
  let skipToken: string | undefined;
  const now = new Date().toISOString();
  for (let page = 0; page < MOST_PAGES; page++) {
    const body = JSON.stringify({
      subscriptions,
      query: maintenanceQuery(eventId),
      options: { $top: PAGE_ROWS, resultFormat: 'objectArray', ...(skipToken === undefined ? {} : { $skipToken: skipToken }) },
    });
    const res = await arm.post(path, body, signal);
    if (res.status !== 200) throw new Error(`Resource Graph answered ${res.status}: ${res.error}`);
    const answer = res.json as { data?: unknown; $skipToken?: unknown };
    const rows = Array.isArray(answer.data) ? (answer.data as unknown[]) : [];
    for (const row of rows) {
      if (typeof row !== 'object' || row === null) continue;
      const r = row as { id?: unknown; properties?: unknown };
      if (typeof r.id !== 'string' || typeof r.properties !== 'object' || r.properties === null) continue;
      const e = azureEventOf(r.id, r.properties as Record<string, unknown>, 'resourcegraph', now);
      if (typeof e !== 'string') events.push(e);
    }
    skipToken = typeof answer.$skipToken === 'string' && answer.$skipToken !== '' ? answer.$skipToken : undefined;
    if (skipToken === undefined) break;
  }
  return events;
}
