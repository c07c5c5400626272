/**
 * probe sink: a load balancer health probe that goes unhealthy ahead of maintenance. `GET` (or
 * `HEAD`) on its path answers 200 while nothing is pending for this VM, and 503 from the moment
 * a matching event is delivered to it until that event's `completed` or `canceled`.
 *
 * - Its delivery of what prepares (scheduled, updated, a started never seen before) counts as
 *   delivered only after `drainSeconds` of being unhealthy: the load balancer has stopped
 *   sending new flows and the open ones have drained, so `approveAfterHooks` may start the
 *   maintenance early with no request lost.
 * - Which events hold it out of service is kept in the store (the sink's state), so a restart,
 *   even a `kill -9`, keeps it unhealthy. After start-up it also answers 503 until an IMDS read
 *   shows nothing pending for this VM: a VM that just rebooted is not put back into rotation
 *   before the bridge knows the maintenance is over.
 * - It is a guarded HTTP server (connection caps, header and idle timeouts) with one route, and
 *   it never reads a request body.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { z } from 'zod';
import {
  type BridgeEvent,
  deliveredWith,
  type HealthView,
  type ImdsRead,
  type Outcome,
  sinkBase,
  type SinkContext,
  transitionOf,
} from '../../src/api.ts';
import { Cidrs, cidrList, createGuardedServer, DEFAULT_SERVER_LIMITS, hostPort, listen, parseHostPort, sleep } from '../../src/kit.ts';
import { ends, pendingFor, preparationKeys, preparationSink, type Preparation } from '../shared/preparation.ts';
import { rehearseProbe } from './rehearse.ts';

export const configSchema = z.strictObject({
  type: z.literal('probe'),
  ...sinkBase,
  ...preparationKeys,
  listen: hostPort.describe("The address the load balancer's health probe targets."),
  /** The probe's path; anything else is 404. */
  path: z
    .string()
    .regex(/^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/, 'must be a URL path starting with /')
    .default('/probe')
    .describe('The path the health probe asks; any other path is 404.'),
  drainSeconds: z
    .number()
    .int()
    .min(0)
    .max(3600)
    .default(30)
    .describe(
      'Once unhealthy, how long to wait (probe interval x unhealthy threshold + connection draining) before the preparation counts as done.',
    ),
  maxConnections: z
    .number()
    .int()
    .min(1)
    .max(4096)
    .default(64)
    .describe(
      'Open connections at most (the probers of a load balancer, a few monitors); past it a prober is still answered, then closed.',
    ),
  health: z
    .boolean()
    .default(false)
    .describe(
      "Answer 200 only while this VM's health checks (health, or fleet.health) pass as well: after a maintenance the balancer sends traffic once the service is up, not once the VM has booted.",
    ),
  allowFrom: cidrList
    .optional()
    .describe(
      "Only these addresses or CIDR ranges may ask (Azure Load Balancer's probes come from 168.63.129.16); any other connection is closed at once. Default: anyone.",
    ),
});
export type ProbeConfig = z.infer<typeof configSchema>;

/** One event that holds the probe out of service, as kept in the sink's state. */
interface Hold {
  readonly eventType: string;
  readonly notBefore: string | null;
  /** When the probe went unhealthy for it (epoch ms). */
  readonly since: number;
}

const STATE_KEY = 'holds';
const MAX_CONNECTIONS_PER_CLIENT = 16;

// the attempt waits out the drain: it has the drain on top of the usual timeout
export const probeSink = preparationSink<ProbeConfig, typeof configSchema>({
  type: 'probe',
  configSchema,
  workMs: (c) => c.drainSeconds * 1000,
  rehearse: rehearseProbe,
  make: async (config, context) => {
    const probe = new Probe(config, context);
    await probe.listen();
    return probe;
  },
});

class Probe implements Preparation {
  readonly #c: ProbeConfig;
  readonly #ctx: SinkContext;
  readonly #server: Server;
  readonly #holds: Map<string, Hold>;
  /** No IMDS read has shown nothing pending for this VM since start-up. */
  #startupHold: boolean;
  /** The last read came while this VM did not know its name. */
  #nameUnknown = false;
  readonly #unsubscribe: () => void;
  readonly #unsubscribeHealth: () => void;
  /** The health checks it waits for (`health: true`), or null. */
  readonly #health: HealthView | null;
  readonly #inService;
  readonly #requests;

  constructor(config: ProbeConfig, context: SinkContext) {
    this.#c = config;
    this.#ctx = context;
    this.#holds = readHolds(context.state?.get(STATE_KEY));
    this.#startupHold = context.reads !== undefined;
    this.#unsubscribe = context.reads?.subscribe((read) => this.#read(read)) ?? (() => undefined);
    if (config.health && context.health === undefined)
      throw new Error('health: true needs health checks to wait for: a health block at the top of the configuration, or fleet.health');
    this.#health = config.health ? context.health! : null;
    let was = this.inService;
    this.#unsubscribeHealth =
      this.#health?.subscribe((h) => {
        this.#gauge();
        if (this.inService !== was)
          this.#ctx.logger.info(
            { inService: this.inService, healthy: h.healthy, ...(h.detail === undefined ? {} : { detail: h.detail }) },
            this.inService ? 'probe back in service: the health checks pass' : 'probe out of service: the health checks do not pass',
          );
        was = this.inService;
      }) ?? (() => undefined);
    this.#inService = context.metrics?.gauge('sebridge_probe_in_service', 'Whether the probe sink answers 200 (1) or 503 (0), by sink.', [
      'sink',
    ]);
    this.#requests = context.metrics?.counter('sebridge_probe_requests_total', 'Health probe requests answered, by sink and HTTP status.', [
      'sink',
      'status',
    ]);
    this.#gauge();
    // every answer closes its connection (a prober needs no keep-alive), a client past a cap is
    // still answered, IPv6 clients count per /64: keep-alive clients can never hold every slot
    this.#server = createGuardedServer((req, res) => this.#answer(req, res), {
      ...DEFAULT_SERVER_LIMITS,
      maxConnections: config.maxConnections,
      maxConnectionsPerClient: Math.min(MAX_CONNECTIONS_PER_CLIENT, config.maxConnections),
      allowFrom: config.allowFrom === undefined ? null : new Cidrs(config.allowFrom),
      overCap: 'serve',
    });
  }

  async listen(): Promise<void> {
    const at = parseHostPort(this.#c.listen)!;
    const url = await listen(this.#server, at.host, at.port);
    this.#ctx.logger.info({ url: `${url}${this.#c.path}`, inService: this.inService }, 'load balancer probe listening');
  }

  get inService(): boolean {
    return !this.#startupHold && this.#holds.size === 0 && (this.#health === null || this.#health.state?.healthy === true);
  }

  async deliver(event: BridgeEvent, signal: AbortSignal): Promise<Outcome> {
    const d = event.data;
    // a drill's rehearsal: what it would do, the answer unchanged
    if (this.#ctx.drill?.(d.eventId)?.prepare === 'rehearse')
      return deliveredWith(
        ends(event)
          ? 'rehearsed: nothing to give back'
          : `rehearsed: would answer 503 on ${this.#c.path} for ${this.#c.drainSeconds} s before counting as out of the load balancer; still answers ${this.inService ? 200 : 503}`,
      );
    if (ends(event)) {
      const was = this.#holds.delete(d.eventId);
      this.#save();
      if (was && this.inService) this.#ctx.logger.info({ eventId: d.eventId, transition: transitionOf(event) }, 'probe back in service');
      return deliveredWith(this.inService ? 'back in the load balancer' : 'still out of the load balancer (another event holds it)');
    }
    let hold = this.#holds.get(d.eventId);
    if (hold === undefined) {
      // already out of service for another event: the load balancer has been draining since then
      const since = Math.min(Date.now(), ...[...this.#holds.values()].map((h) => h.since));
      hold = { eventType: d.eventType, notBefore: d.notBefore, since };
      this.#holds.set(d.eventId, hold);
      this.#save();
      this.#ctx.logger.info(
        { eventId: d.eventId, eventType: d.eventType, drainSeconds: this.#c.drainSeconds },
        'probe out of service; draining',
      );
    } else if (hold.notBefore !== d.notBefore || hold.eventType !== d.eventType) {
      this.#holds.set(d.eventId, { ...hold, eventType: d.eventType, notBefore: d.notBefore });
      this.#save();
    }
    const left = hold.since + this.#c.drainSeconds * 1000 - Date.now();
    if (left > 0) await sleep(left, signal);
    return deliveredWith('out of the load balancer');
  }

  async close(): Promise<void> {
    this.#unsubscribe();
    this.#unsubscribeHealth();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /**
   * read follows IMDS: the start-up hold ends when this VM knows its name and nothing is pending
   * for it; holds of events IMDS no longer lists end too, and, once the name is known, holds of
   * events the filter does not take for this VM (taken while every event counted as its own).
   */
  #read(read: ImdsRead): void {
    const listed = new Set(read.events.map((e) => e.eventId));
    this.#nameUnknown = read.vmName === null;
    const mine = read.vmName === null ? listed : new Set(pendingFor(this.#c.filter, read.events, read.vmName).map((e) => e.eventId));
    let changed = false;
    for (const id of [...this.#holds.keys()]) {
      // its completed or canceled is committed by the same read; this only guards against one lost on the way
      if (!listed.has(id) || !mine.has(id)) changed = this.#holds.delete(id) || changed;
    }
    if (changed) this.#save();
    if (this.#startupHold && read.vmName !== null && pendingFor(this.#c.filter, read.events, read.vmName).length === 0) {
      this.#startupHold = false;
      this.#ctx.logger.info({ inService: this.inService }, 'probe: IMDS shows nothing pending for this VM');
    }
    this.#gauge();
  }

  #save(): void {
    this.#ctx.state?.set(STATE_KEY, JSON.stringify(Object.fromEntries(this.#holds)));
    this.#gauge();
  }

  #gauge(): void {
    this.#inService?.set({ sink: this.#c.name }, this.inService ? 1 : 0);
  }

  #answer(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0];
    let status: number;
    let body: unknown;
    const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };
    if (path !== this.#c.path) {
      status = 404;
      body = { error: { code: 'NOT_FOUND', message: `the probe answers on ${this.#c.path}` } };
    } else if (req.method !== 'GET' && req.method !== 'HEAD') {
      status = 405;
      headers.allow = 'GET, HEAD';
      body = { error: { code: 'METHOD_NOT_ALLOWED', message: 'use GET or HEAD' } };
    } else if (this.inService) {
      status = 200;
      body = { status: 'in-service' };
    } else {
      status = 503;
      body = this.#outOfService();
    }
    this.#requests?.inc({ sink: this.#c.name, status: String(status) });
    const text = JSON.stringify(body);
    headers['content-length'] = String(Buffer.byteLength(text));
    // a probe request never has a body worth reading, and a prober needs no keep-alive: answer and close
    headers.connection = 'close';
    res.writeHead(status, headers);
    res.end(text);
  }

  #outOfService(): Record<string, unknown> {
    const first = [...this.#holds.entries()].sort(([, a], [, b]) => (a.notBefore ?? '').localeCompare(b.notBefore ?? ''))[0];
    if (first === undefined && !this.#startupHold) {
      // nothing pending: the health checks keep it out
      const h = this.#health?.state ?? null;
      const reason =
        h === null ? 'the health checks have not run yet' : `the health checks do not pass since ${h.since}: ${h.detail ?? ''}`;
      return { status: 'out-of-service', reason };
    }
    if (first === undefined) {
      const reason = this.#nameUnknown
        ? 'this VM does not know its name yet (IMDS instance metadata could not be read): every listed event counts as its own'
        : 'waiting for an IMDS read that shows nothing pending for this VM';
      return { status: 'out-of-service', reason };
    }
    const [eventId, h] = first;
    return { status: 'out-of-service', eventId, eventType: h.eventType, notBefore: h.notBefore };
  }
}

function readHolds(text: string | undefined): Map<string, Hold> {
  if (text === undefined) return new Map();
  try {
    const parsed = JSON.parse(text) as Record<string, Hold>;
    return new Map(Object.entries(parsed).filter(([, h]) => typeof h === 'object' && h !== null && typeof h.since === 'number'));
  } catch {
    // unreadable: hold anyway until IMDS says nothing is pending (the start-up hold does that)
    return new Map();
  }
}
