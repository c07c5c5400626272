/**
 * ArmApprovals: an approval `via: arm`, for a VM with no bridge, or whose bridge cannot be
 * reached. The relay holds the fleet's most powerful identity here, and every record of its store
 * may be written by any member, so it acts only on what it checked itself (arm-target.ts): a
 * parsed VM resource id inside `azure.subscriptions`, and, where Azure's feed is configured, an
 * event Azure's own record lists as Scheduled for that resource. The event then passes its group's
 * budget like every other path (arm-budget.ts: the relay's own statement, or every record of the
 * group; the relay takes the slot in the member's name, held until the maintenance's recorded
 * end), and is acknowledged through Resource Manager at the fixed path of that resource. A refusal
 * by Resource Manager gives the slot back, and so does a call that sent nothing (no token); no
 * answer at all keeps it (Azure may have taken it).
 * Every refusal is a JSON 4xx with a code, logged with who asked, and sends nothing. Who asked is
 * kept in the event's record in the store, so every replica and `GET /v1/fleet/events` say it.
 */
import type { Logger } from 'pino';
import { HttpError } from '../approval/requests.ts';
import { ApprovalError } from '../approval/service.ts';
import { isEventId } from '../azure/resource-id.ts';
import { BridgeError, errorFields, messageOf } from '../lib/errors.ts';
import { FleetConfig, UNHEALTHY_COUNTS_FOR_SECONDS } from '../fleet/budget/config.ts';
import { giveBackTaken, type Written } from '../fleet/budget/give-back.ts';
import { unavailableOf } from '../fleet/budget/unavailable.ts';
import { membersOf } from '../fleet/budget/parse.ts';
import { asSlot, memberKey, MEMBER_PREFIX, type MemberRecord } from '../fleet/budget/records.ts';
import { MemberSlots } from '../fleet/budget/slots.ts';
import { openFleetStore } from '../fleet/budget/stores/open.ts';
import type { FleetStore } from '../fleet/budget/stores/port.ts';
import { azureRecordName, subscriptionOf, vmOf, type AzureEvent, type AzureRecord } from '../fleet/view/azure.ts';
import { queryScheduledEvents } from './resource-graph.ts';
import { lower } from '../fleet/view/events.ts';
import type { FleetReader } from '../fleet/view/snapshot.ts';
import { NotSent, type ArmAnswer, type ArmClient } from './arm.ts';
import { blackoutOf, budgetOf, noBudget } from './arm-budget.ts';
import { armTarget, type ArmTarget } from './arm-target.ts';
import type { RelayConfig } from './config.ts';

export interface ArmApproved {
  readonly eventId: string;
  readonly vm: string;
  readonly status: 'approved' | 'already-approved';
  readonly approvedBy: string;
  readonly via: 'arm';
  readonly at: string;
  readonly forced?: true;
}

/** What was asked, and by whom: the approver's name and the client's address. */
export interface ArmRequest {
  readonly vm: string;
  readonly eventId: string;
  readonly approver: string;
  readonly reason: string;
  readonly force: boolean;
  readonly client: string;
}

export class ArmApprovals {
  readonly #config: RelayConfig;
  readonly #reader: FleetReader;
  readonly #arm: ArmClient;
  readonly #logger: Logger;

  constructor(o: { config: RelayConfig; reader: FleetReader; arm: ArmClient; logger: Logger }) {
    this.#config = o.config;
    this.#reader = o.reader;
    this.#arm = o.arm;
    this.#logger = o.logger;
  }

  /** approve acknowledges the event through Resource Manager, or refuses (an HttpError, logged with who asked). */
  async approve(q: ArmRequest): Promise<ArmApproved> {
    try {
      return await this.#approve(q);
    } catch (err) {
      // every refusal, Resource Manager's and an unreadable store's too (a 502 or 503 says what an operator must fix)
      if (err instanceof HttpError)
        this.#logger.warn(
          { code: err.code, status: err.status, vm: q.vm, eventId: q.eventId, by: q.approver, client: q.client, force: q.force },
          `relay: approval via arm refused: ${err.message}`,
        );
      throw err;
    }
  }

  async #approve(q: ArmRequest): Promise<ArmApproved> {
    if (!isEventId(q.eventId))
      throw new HttpError(400, 'NOT_A_VM', "eventId must be the scheduled event's id (a GUID) for an approval via arm");
    const azure = this.#config.azure!;
    const snapshot = await this.#reader.read(0);
    if (snapshot.unread.length > 0)
      throw new HttpError(503, 'FLEET_STORE_UNAVAILABLE', `the fleet store could not be read: ${snapshot.unread[0]!.why}`);
    const feed = azure.eventGrid !== undefined || azure.resourceGraph !== undefined;
    const t = armTarget(snapshot, q.vm, q.eventId, feed ? await this.#azureNow(q.eventId) : null);
    const allowed = azure.subscriptions.map(lower);
    if (!allowed.includes(t.resource.subscriptionId))
      throw new HttpError(
        403,
        'SUBSCRIPTION_NOT_ALLOWED',
        `${t.name} is in subscription ${t.resource.subscriptionId}, outside azure.subscriptions`,
      );
    // what a relay wrote of it (sealed: no member can claim it was approved)
    const done = snapshot.azure.find((a) => a.name === azureRecordName(q.eventId, t.recordId))?.record.acknowledged;
    if (done !== undefined)
      return { eventId: q.eventId, vm: t.name, status: 'already-approved', approvedBy: done.by, via: 'arm', at: done.at };
    if (t.event.resources.length > 1 && !q.force)
      throw new HttpError(
        409,
        'MANY_VMS',
        `event ${q.eventId} takes down ${t.event.resources.length} VMs at once (${t.event.resources.join(', ')}): approving it approves every one of them, past any one member's slot; force with a reason`,
      );
    if (t.unsure !== null && !q.force) throw new HttpError(409, 'MANY_VMS', `${t.unsure}; force with a reason`);
    const taken = await this.#take(t, q);
    try {
      const answer = await this.#arm.acknowledge(t.resource, [q.eventId]).catch(async (err: unknown) => {
        // nothing sent (no token): Azure cannot have taken it, so the slot is given back
        if (err instanceof NotSent) {
          await this.#giveBack(taken, q.eventId);
          throw new HttpError(503, 'ARM_UNAVAILABLE', `${err.message}; nothing was sent, and the slot was given back: ask again`);
        }
        // no answer: Azure may have taken it, so the slot is kept until its recorded end (a repeat asks again)
        throw new HttpError(
          503,
          'ARM_UNAVAILABLE',
          `Resource Manager did not answer (${messageOf(err)}); the group's slot is kept until the maintenance's recorded end: ask again`,
        );
      });
      if (answer.status < 200 || answer.status > 299) {
        await this.#giveBack(taken, q.eventId);
        throw refusal(answer);
      }
    } finally {
      await taken?.store.close();
    }
    const at = new Date().toISOString();
    const record = { by: q.approver, at, ...(q.reason ? { reason: q.reason } : {}), ...(q.force ? { forced: true as const } : {}) };
    await this.#record(t, record).catch((err: unknown) =>
      this.#logger.warn(
        { ...errorFields(err), eventId: q.eventId },
        'relay: approved through Resource Manager, but could not record who asked',
      ),
    );
    this.#logger.info(
      { vm: t.name, eventId: q.eventId, by: q.approver, client: q.client, via: 'arm', group: t.group?.group ?? null, forced: q.force },
      'relay: approved through Resource Manager',
    );
    return {
      eventId: q.eventId,
      vm: t.name,
      status: 'approved',
      approvedBy: q.approver,
      via: 'arm',
      at,
      ...(q.force ? { forced: true } : {}),
    };
  }

  /** azureNow: Azure's records of the event now, as Resource Graph lists them (the authority where the feed is configured). */
  async #azureNow(eventId: string): Promise<AzureEvent[]> {
    try {
      return await queryScheduledEvents(this.#arm, this.#config.azure!.subscriptions, eventId);
    } catch (err) {
      throw new HttpError(
        503,
        'ARM_UNAVAILABLE',
        `Resource Graph could not be asked whether Azure lists the event: ${messageOf(err)}; ask again`,
      );
    }
  }

  /**
   * take holds a slot of the VM's group in its member's name (the budget and calendar of
   * arm-budget.ts, the unhealthy members counted), or refuses as its bridge would (409 held, 503
   * store). A VM no record names has no group: only a forced approval goes on, taking nothing.
   */
  async #take(t: ArmTarget, q: ArmRequest): Promise<Taken | null> {
    const fleet = this.#config.fleet!;
    if (t.group === null) {
      if (!q.force) throw noBudget(t.name);
      return null;
    }
    const group = t.group.group;
    const store = await openFleetStore(fleet.store, group, fleet.storeTimeoutMs);
    let records: MemberRecord[];
    try {
      records = membersOf(await store.list(MEMBER_PREFIX));
    } catch (err) {
      await store.close();
      throw new HttpError(503, 'FLEET_STORE_UNAVAILABLE', `the records of group ${group} could not be read: ${messageOf(err)}`);
    }
    const now = Date.now();
    const stated = Object.hasOwn(fleet.groups, group) ? fleet.groups[group] : undefined;
    const budget = budgetOf(group, records, stated, q.force, now);
    const blackout = q.force ? null : blackoutOf(records, stated, now);
    if (blackout !== null) {
      await store.close();
      throw new HttpError(409, 'BLACKOUT', `group ${group}'s early approvals are held by ${blackout}; force with a reason`, {
        eventId: q.eventId,
        status: 'held',
      });
    }
    // what a record says of its heartbeat is bounded as a configuration's is
    const heartbeatSeconds = Math.min(3600, Math.max(5, Math.round(t.group.member.heartbeatSeconds) || 30));
    const config = FleetConfig.parse({
      ...{ group, store: fleet.store, heartbeatSeconds, ...(stated?.zones === undefined ? {} : { zones: stated.zones }) },
      ...(stated?.rate === undefined ? {} : { rate: stated.rate }),
      ...{ maxUnavailable: Math.max(1, budget?.k ?? 1), marginSeconds: Math.max(1800, 3 * heartbeatSeconds) },
    });
    // the slot says the member's zone, so every member that goes one zone at a time sees it
    const vm = { ...vmOf(t.name, t.group.member.resourceId ?? ''), zone: t.group.member.zone ?? null };
    const key = memberKey({ name: t.group.member.vm, resourceId: t.group.member.resourceId });
    const slots = new MemberSlots({ config, store, logger: this.#logger, me: () => ({ key, vm }), k: () => budget?.k ?? 0, now: Date.now });
    // a member not healthy counts as down, for as long as the longest bound its group's records state
    const bounds = {
      unhealthyCountsForSeconds: Math.max(UNHEALTHY_COUNTS_FOR_SECONDS, ...records.map((m) => m.unhealthyCountsForSeconds ?? 0)),
      settleSeconds: 0,
      marginSeconds: config.marginSeconds,
    };
    try {
      const by = { by: q.approver, via: 'arm', ...(q.reason ? { reason: q.reason } : {}) };
      const { writes } = await slots.take(t.event, q.force ? 'forced' : 'early', by, undefined, async (read) =>
        unavailableOf(
          records,
          read.map((r) => asSlot(r.value)),
          key,
          Date.now(),
          bounds,
        ).filter((u) => u.counts),
      );
      return { slots, store, writes, key, group };
    } catch (err) {
      await store.close();
      if (err instanceof ApprovalError && err.code === 'HELD')
        throw new HttpError(409, 'HELD', `${err.message} (the budget from ${budget?.from ?? 'none'})`, {
          eventId: q.eventId,
          status: 'held',
          holders: err.holders,
        });
      throw new HttpError(503, 'FLEET_STORE_UNAVAILABLE', `the fleet store of group ${group} could not be written: ${messageOf(err)}`);
    }
  }

  /** giveBack gives back exactly what the take wrote for `eventId`, each record at the version written. */
  async #giveBack(taken: Taken | null, eventId: string): Promise<void> {
    if (taken === null) return;
    const o = { store: taken.store, logger: this.#logger, group: taken.group, me: taken.key, now: Date.now() };
    await giveBackTaken(taken.slots, o, taken.writes, eventId).catch((err: unknown) => {
      this.#logger.warn({ ...errorFields(err), eventId }, 'relay: could not give back the slot of a refused approval');
    });
  }

  /**
   * record writes who asked into the event's record (made from the event when Azure's feed has none),
   * or throws: the store failed, or another writer changed the record under each of five writes.
   */
  async #record(t: ArmTarget, acknowledged: NonNullable<AzureRecord['acknowledged']>): Promise<void> {
    const store = this.#reader.azure;
    const resourceId = t.recordId;
    const name = azureRecordName(t.event.eventId, resourceId);
    for (let round = 0; round < 5; round++) {
      const current = await store.get(name);
      const previous = current?.record ?? null;
      const e = t.event;
      const base: AzureRecord = previous ?? {
        ...{ eventId: e.eventId, resourceId, subscriptionId: subscriptionOf(resourceId) },
        ...{ resources: [...e.resources], eventType: e.eventType, status: e.eventStatus, notBefore: e.notBefore },
        ...{ durationInSeconds: e.durationInSeconds, description: e.description, source: 'relay' as const },
        ...{ firstSeenAt: acknowledged.at, updatedAt: acknowledged.at, unwatched: [] },
      };
      if ((await store.put(name, { ...base, acknowledged }, current?.version ?? null)) !== null) return;
    }
    throw new BridgeError('FLEET_STORE_UNAVAILABLE', `the record of event ${t.event.eventId} changed under each of 5 writes`);
  }
}

/** What a take holds for the approval: the member's slots, the group's store (closed once answered), and the records it wrote. */
interface Taken {
  readonly slots: MemberSlots;
  readonly store: FleetStore;
  readonly writes: readonly Written[];
  readonly key: string;
  readonly group: string;
}

/** refusal: Resource Manager's refusal as the relay answers it (the slot given back already). */
function refusal(a: ArmAnswer): HttpError {
  const said = `Resource Manager answered ${a.status}: ${a.error}`;
  if (a.status === 404) return new HttpError(404, 'UNKNOWN_EVENT', said);
  if (a.status === 409) return new HttpError(409, 'ARM_CONFLICT', said);
  if (a.status === 401 || a.status === 403)
    return new HttpError(
      502,
      'ARM_FORBIDDEN',
      `${said} (the relay's identity needs the Scheduled Events Contributor role on the VM's scope)`,
    );
  if (a.status === 429 || a.status >= 500)
    return new HttpError(503, 'ARM_UNAVAILABLE', `${said}; the slot was given back: ask again`, {
      ...(a.retryAfter === null ? {} : { retryAfterSeconds: a.retryAfter }),
    });
  return new HttpError(502, 'ARM_REFUSED', said);
}
