/**
 * The relay's fleet routes: the read API (GET /v1/fleet, GET /v1/fleet/events), behind
 * `Authorization: Bearer <read key>`, the calendar feed (GET /v1/fleet/calendar.ics), behind a read
 * key or a console key, sent so or in its `key` query parameter (a calendar can send no header),
 * and Azure's feed (POST /v1/azure/eventgrid, with Event
 * Grid's subscription validation handshake, and OPTIONS for the CloudEvents abuse-protection
 * handshake), behind a key in the `code` query parameter or an Entra ID bearer token.
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { sendJson } from '../lib/http-server.ts';
import { messageOf } from '../lib/errors.ts';
import { EntraTokens } from '../azure/bearer.ts';
import { HttpError, readBody, utf8 } from '../approval/requests.ts';
import { cursorOk, filterProblem, fleetEvents, page } from '../fleet/view/events.ts';
import { calendarOf } from '../fleet/view/ics.ts';
import { FleetConfig } from '../fleet/budget/config.ts';
import type { FleetReader, FleetSnapshot } from '../fleet/view/snapshot.ts';
import { readEventGrid } from './eventgrid.ts';
import { TooManyEvents, type AzureFeed } from './azure-feed.ts';
import type { ArmApprovals, ArmRequest } from './arm-approval.ts';
import type { RelayConfig } from './config.ts';
import type { RelayMetrics } from './metrics.ts';

/** The largest Event Grid delivery read: Event Grid batches up to 1 MB. */
export const MAX_DELIVERY = 1024 * 1024;

const digest = (s: string) => createHash('sha256').update(s).digest();

/** keyMatches: one of the keys, compared in constant time (by their digests, so lengths tell nothing). */
export function keyMatches(given: string, keys: readonly string[]): boolean {
  const g = digest(given);
  return keys.reduce((ok, k) => timingSafeEqual(g, digest(k)) || ok, false);
}

export class FleetRoutes {
  readonly #config: RelayConfig;
  readonly #reader: FleetReader | null;

  /** The fleet store's reader, when the relay has one (its state is said in /readyz). */
  get reader(): FleetReader | null {
    return this.#reader;
  }

  readonly #feed: AzureFeed | null;
  readonly #metrics: RelayMetrics;
  readonly #entra: EntraTokens | null;
  readonly #arm: ArmApprovals | null;
  readonly #logger: Logger;

  constructor(o: {
    config: RelayConfig;
    reader: FleetReader | null;
    feed: AzureFeed | null;
    arm: ArmApprovals | null;
    metrics: RelayMetrics;
    logger: Logger;
  }) {
    this.#config = o.config;
    this.#arm = o.arm;
    this.#reader = o.reader;
    this.#feed = o.feed;
    this.#metrics = o.metrics;
    const entra = o.config.azure?.eventGrid?.entra;
    this.#entra = entra === undefined ? null : new EntraTokens(entra);
    this.#logger = o.logger;
  }

  /** close releases the key set's HTTP client. */
  close(): void {
    this.#entra?.close();
  }

  // ----- the read API --------------------------------------------------------------------------

  #readable(req: IncomingMessage): FleetReader {
    if (this.#reader === null || this.#config.readKeys.length === 0)
      throw new HttpError(404, 'NOT_FOUND', 'the fleet read API is not configured (fleet and readKeys)');
    const token = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
    if (token === undefined || !keyMatches(token, this.#config.readKeys))
      throw new HttpError(401, 'UNAUTHORIZED', 'send one of the read keys as Authorization: Bearer <key>');
    return this.#reader;
  }

  /** read answers the fleet's GET routes. */
  read(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    if (url.pathname === '/v1/fleet') return this.fleet(req, res);
    if (url.pathname === '/v1/fleet/events') return this.events(req, res, url);
    return this.calendar(req, res, url);
  }

  /**
   * GET /v1/fleet/calendar.ics?group=&key=: the pending events as an iCalendar file (all groups, or
   * one), for a calendar to subscribe to; a read key or any console key, as a bearer token or `key`.
   */
  async calendar(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const keys = [...this.#config.readKeys, ...(this.#config.console?.keys ?? []).map((k) => k.key)];
    if (this.#reader === null || keys.length === 0)
      throw new HttpError(404, 'NOT_FOUND', 'the calendar feed is not configured (fleet, and readKeys or console.keys)');
    const q = url.searchParams;
    for (const k of q.keys())
      if (k !== 'group' && k !== 'key') throw new HttpError(400, 'UNKNOWN_PARAMETER', `unknown parameter ${k}: use group, key`);
    const token = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1] ?? q.get('key');
    if (token === null || !keyMatches(token, keys))
      throw new HttpError(401, 'UNAUTHORIZED', 'send a read key or a console key as Authorization: Bearer <key>, or as the key parameter');
    const group = q.get('group');
    if (group !== null && !FleetConfig.shape.group.safeParse(group).success)
      throw new HttpError(400, 'BAD_FILTER', 'group is not a group name (letters, digits and dashes)');
    const s = await this.#snapshot(this.#reader);
    if (group !== null && !s.groups.some((g) => g.group === group) && this.#config.fleet?.groups[group] === undefined)
      throw new HttpError(404, 'UNKNOWN_GROUP', `no group ${group} in the fleet's store`);
    const events = fleetEvents(s, { afterSeconds: this.#config.azure?.unwatchedAfterSeconds }, Date.now(), { group: group ?? undefined });
    const body = calendarOf(events, s.readAt, group);
    res.writeHead(200, {
      'content-type': 'text/calendar; charset=utf-8',
      'content-disposition': `inline; filename="${group ?? 'fleet'}.ics"`,
      'cache-control': 'private, no-cache',
      'x-content-type-options': 'nosniff',
    });
    res.end(body);
  }

  async #snapshot(reader: FleetReader): Promise<FleetSnapshot> {
    const s = await reader.read();
    if (s.unread.length > 0)
      throw new HttpError(503, 'FLEET_STORE_UNAVAILABLE', `the fleet store could not be read: ${s.unread.map((u) => u.why).join('; ')}`);
    return s;
  }

  /** GET /v1/fleet: the groups, their members, their slots, pauses and collisions, the stale members, the count of unwatched events. */
  async fleet(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const s = await this.#snapshot(this.#readable(req));
    const events = fleetEvents(s, { afterSeconds: this.#config.azure?.unwatchedAfterSeconds }, Date.now());
    return sendJson(res, 200, {
      readAt: new Date(s.readAt).toISOString(),
      store: s.store,
      groups: s.groups.map((g) => ({
        group: g.group,
        maxUnavailable: g.maxUnavailable,
        members: g.members.length,
        stale: g.members.filter((m) => m.stale).length,
        pending: g.members.reduce((n, m) => n + m.events.length, 0),
        slots: g.slots,
        pause: g.pause,
        collision: g.collision,
        skipped: g.skipped,
      })),
      members: s.groups.flatMap((g) =>
        g.members.map((m) => ({
          ...{ group: g.group, vm: m.vm, resourceId: m.resourceId, heartbeatAt: m.heartbeatAt, stale: m.stale },
          ...{ version: m.version ?? null, holdsSlot: m.holdsSlot, events: m.events.length },
          ...(m.health ? { health: m.health } : {}),
          ...(m.calendar ? { calendar: m.calendar } : {}),
          ...(m.unavailable ? { unavailable: m.unavailable } : {}),
        })),
      ),
      stale: s.groups.flatMap((g) =>
        g.members.filter((m) => m.stale).map((m) => ({ group: g.group, vm: m.vm, heartbeatAt: m.heartbeatAt })),
      ),
      pending: events.length,
      unwatched: events.filter((e) => e.unwatched !== undefined).length,
    });
  }

  /** GET /v1/fleet/events?group=&type=&status=&limit=&cursor=: the pending events, by NotBefore, a page at a time. */
  async events(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const reader = this.#readable(req);
    const q = url.searchParams;
    const limitText = q.get('limit') ?? '100';
    const limit = Number(limitText);
    if (!/^\d+$/.test(limitText) || limit < 1 || limit > 1000)
      throw new HttpError(400, 'BAD_LIMIT', 'limit must be a whole number from 1 to 1000');
    const cursor = q.get('cursor');
    if (cursor !== null && !cursorOk(cursor)) throw new HttpError(400, 'BAD_CURSOR', 'cursor is not one this API gave');
    for (const k of q.keys())
      if (!['group', 'type', 'status', 'limit', 'cursor'].includes(k))
        throw new HttpError(400, 'UNKNOWN_PARAMETER', `unknown parameter ${k}: use group, type, status, limit, cursor`);
    const filter = { group: q.get('group') ?? undefined, type: q.get('type') ?? undefined, status: q.get('status') ?? undefined };
    const problem = filterProblem(filter);
    if (problem !== null) throw new HttpError(400, 'BAD_FILTER', problem);
    const s = await this.#snapshot(reader);
    const all = fleetEvents(s, { afterSeconds: this.#config.azure?.unwatchedAfterSeconds }, Date.now(), filter);
    const p = page(all, limit, cursor);
    return sendJson(res, 200, { readAt: new Date(s.readAt).toISOString(), total: all.length, events: p.events, next: p.next });
  }

  // ----- approvals through Resource Manager ----------------------------------------------------

  /** POST /v1/approvals with `via: "arm"` (its signature verified already): approved through Resource Manager, past the group's budget first. */
  async approveArm(res: ServerResponse, input: ArmRequest): Promise<void> {
    if (this.#arm === null) throw new HttpError(404, 'NOT_FOUND', "approvals via arm need fleet and azure in the relay's configuration");
    return sendJson(res, 200, await this.#arm.approve(input));
  }

  // ----- Azure's feed ---------------------------------------------------------------------------

  async #delivered(req: IncomingMessage, url: URL): Promise<AzureFeed> {
    const eg = this.#config.azure?.eventGrid;
    if (this.#feed === null || eg === undefined) throw new HttpError(404, 'NOT_FOUND', "Azure's feed is not configured (azure.eventGrid)");
    if (eg.key !== undefined) {
      if (!keyMatches(url.searchParams.get('code') ?? '', [eg.key]))
        this.#refuse(401, 'UNAUTHORIZED', 'the key in code is not the one configured');
      return this.#feed;
    }
    const verdict = await this.#entra!.check(req.headers.authorization);
    if (verdict.ok) return this.#feed;
    // keys that cannot be read prove nothing either way: 503, which Event Grid delivers again (a 401 it drops)
    if (verdict.kind === 'unavailable') this.#refuse(503, 'ENTRA_KEYS_UNAVAILABLE', verdict.why);
    this.#refuse(401, 'UNAUTHORIZED', `the Entra ID token is refused: ${verdict.why}`);
  }

  /** refuse logs why a delivery is refused (never its key or token) and throws its answer. */
  #refuse(status: number, code: 'UNAUTHORIZED' | 'ENTRA_KEYS_UNAVAILABLE', why: string): never {
    this.#logger.warn({ code: 'RELAY_DELIVERY_REFUSED', status, why }, `relay: an Event Grid delivery was refused: ${why}`);
    throw new HttpError(status, code, why);
  }

  /** OPTIONS /v1/azure/eventgrid: the CloudEvents abuse-protection handshake (Event Grid's CloudEvents schema). */
  async handshake(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    await this.#delivered(req, url);
    const origin = String(req.headers['webhook-request-origin'] ?? '');
    if (origin === '')
      throw new HttpError(400, 'NOT_A_HANDSHAKE', 'an OPTIONS request here is the webhook handshake: WebHook-Request-Origin is missing');
    res.writeHead(200, { 'webhook-allowed-origin': origin, 'webhook-allowed-rate': '*', allow: 'POST, OPTIONS' });
    res.end();
  }

  /** POST /v1/azure/eventgrid: Event Grid's deliveries (either schema), or its subscription validation. */
  async eventGrid(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const feed = await this.#delivered(req, url);
    const body = await readBody(req, MAX_DELIVERY);
    let parsed: unknown;
    try {
      parsed = JSON.parse(utf8(body));
    } catch {
      throw new HttpError(400, 'MALFORMED', 'the body is not JSON');
    }
    const read = readEventGrid(parsed, this.#config.azure!.subscriptions, new Date().toISOString());
    if ('validationCode' in read) return sendJson(res, 200, { validationResponse: read.validationCode });
    let kept: number;
    try {
      kept = await feed.keep(read.events, this.#config.azure!.eventGrid!.maxNewPerDelivery);
    } catch (err) {
      // past its bound a batch is refused whole: 413, which Event Grid never retries (it dead-letters it)
      if (err instanceof TooManyEvents) throw new HttpError(413, err.code, err.message);
      // Event Grid retries a delivery answered 503: nothing is lost
      throw new HttpError(503, 'FLEET_STORE_UNAVAILABLE', `the fleet store could not be written: ${messageOf(err)}`);
    }
    this.#metrics.azureEvents.inc({ source: 'eventgrid', result: 'kept' }, kept);
    this.#metrics.azureEvents.inc({ source: 'eventgrid', result: 'unchanged' }, read.events.length - kept);
    return sendJson(res, 200, { received: read.events.length, kept, ignored: read.ignored });
  }
}
