/**
 * ArmApprovals: an approval `via: arm`, for a VM with no bridge, or whose bridge cannot be
 * reached. The event is found in the fleet's records (a member that lists it, or Azure's own
 * record), passes the group's budget like every other path (the relay takes the slot in the
 * member's name, held until the maintenance's recorded end), and is acknowledged through
 * Resource Manager with the relay's identity. A refusal gives the slot back. Who asked is kept in
 * the event's record in the store, so every replica and `GET /v1/fleet/events` say it.
 */
import type { Logger } from 'pino';
import { HttpError } from '../approval/requests.ts';
import { ApprovalError } from '../approval/service.ts';
import type { ScheduledEvent } from '../imds/wire.ts';
import { errorFields, messageOf } from '../lib/errors.ts';
import { FleetConfig } from '../fleet/budget/config.ts';
import { memberKey } from '../fleet/budget/records.ts';
import { MemberSlots } from '../fleet/budget/slots.ts';
import { openFleetStore } from '../fleet/budget/stores/open.ts';
import { azureRecordName, AzureRecordSchema, eventOf, subscriptionOf, vmOf, type AzureRecord } from '../fleet/view/azure.ts';
import { lower, targetsOf } from '../fleet/view/events.ts';
import type { FleetReader, FleetSnapshot } from '../fleet/view/snapshot.ts';
import type { ArmClient } from './arm.ts';
import type { RelayConfig } from './config.ts';

export interface ArmApproved {
  readonly eventId: string;
  readonly vm: string;
  readonly status: 'approved' | 'already-approved';
  readonly approvedBy: string;
  readonly via: 'arm';
  readonly at: string;
}

/** What the fleet knows of the event: the VM's resource id, its group and member, and the event itself. */
interface Found {
  readonly resourceId: string;
  readonly name: string;
  readonly group: { readonly group: string; readonly maxUnavailable: number; readonly heartbeatSeconds: number } | null;
  readonly event: ScheduledEvent;
  readonly azure: { readonly name: string; readonly version: string; readonly record: AzureRecord } | null;
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

  async approve(vm: string, eventId: string, by: string, reason: string): Promise<ArmApproved> {
    const snapshot = await this.#reader.read(0);
    if (snapshot.unread.length > 0)
      throw new HttpError(503, 'FLEET_STORE_UNAVAILABLE', `the fleet store could not be read: ${snapshot.unread[0]!.why}`);
    const found = findEvent(snapshot, vm, eventId);
    if (found === null) throw new HttpError(404, 'UNKNOWN_EVENT', `neither a member nor Azure's feed lists event ${eventId} for ${vm}`);
    const done = found.azure?.record.acknowledged;
    if (done !== undefined) return { eventId, vm: found.name, status: 'already-approved', approvedBy: done.by, via: 'arm', at: done.at };
    const slots = found.group === null ? null : await this.#take(found, by, reason);
    const answer = await this.#arm.acknowledge(found.resourceId, eventId).catch((err: unknown) => {
      void this.#giveBack(slots, eventId);
      throw new HttpError(503, 'ARM_UNAVAILABLE', `Resource Manager could not be reached: ${messageOf(err)}`);
    });
    if (answer.status < 200 || answer.status > 299) {
      await this.#giveBack(slots, eventId);
      const [status, code] =
        answer.status === 404
          ? ([404, 'UNKNOWN_EVENT'] as const)
          : answer.status === 409
            ? ([409, 'ARM_CONFLICT'] as const)
            : ([502, 'ARM_REFUSED'] as const);
      throw new HttpError(status, code, `Resource Manager answered ${answer.status}: ${answer.error}`);
    }
    const at = new Date().toISOString();
    await this.#record(found, { by, at, ...(reason ? { reason } : {}) }).catch((err: unknown) =>
      this.#logger.warn({ ...errorFields(err), eventId }, 'relay: approved through Resource Manager, but could not record who asked'),
    );
    this.#logger.info(
      { vm: found.name, eventId, by, via: 'arm', group: found.group?.group ?? null },
      'relay: approved through Resource Manager',
    );
    return { eventId, vm: found.name, status: 'approved', approvedBy: by, via: 'arm', at };
  }

  /** take holds a slot of the VM's group in its member's name, or refuses as its bridge would (409 held, 503 store). */
  async #take(found: Found, by: string, reason: string): Promise<MemberSlots> {
    const g = found.group!;
    const fleet = this.#config.fleet!;
    const config = FleetConfig.parse({
      group: g.group,
      maxUnavailable: g.maxUnavailable,
      store: fleet.store,
      heartbeatSeconds: g.heartbeatSeconds,
      marginSeconds: Math.max(1800, 3 * g.heartbeatSeconds),
    });
    const store = await openFleetStore(fleet.store, g.group, fleet.storeTimeoutMs);
    const vm = vmOf(found.name, found.resourceId);
    const slots = new MemberSlots({
      config,
      store,
      logger: this.#logger,
      me: () => ({ key: memberKey(vm), vm }),
      k: () => g.maxUnavailable,
      now: Date.now,
    });
    try {
      await slots.take(found.event, 'early', { by, via: 'arm', ...(reason ? { reason } : {}) });
      return slots;
    } catch (err) {
      if (err instanceof ApprovalError && err.code === 'HELD')
        throw new HttpError(409, 'HELD', err.message, { status: 'held', holders: err.holders });
      throw new HttpError(503, 'FLEET_STORE_UNAVAILABLE', `the fleet store of group ${g.group} could not be written: ${messageOf(err)}`);
    }
  }

  async #giveBack(slots: MemberSlots | null, eventId: string): Promise<void> {
    await slots
      ?.release((ids) => ids.filter((id) => id !== eventId))
      .catch((err: unknown) => {
        this.#logger.warn({ ...errorFields(err), eventId }, 'relay: could not give back the slot of a refused approval');
      });
  }

  /** record writes who asked into the event's record (made from the member's event when Azure's feed has none). */
  async #record(found: Found, acknowledged: NonNullable<AzureRecord['acknowledged']>): Promise<void> {
    const store = this.#reader.azureStore;
    const name = azureRecordName(found.event.eventId, found.resourceId);
    for (let round = 0; round < 5; round++) {
      const current = await store.get(name);
      const previous = current === null ? null : (AzureRecordSchema.safeParse(current.value).data ?? null);
      const e = found.event;
      const base: AzureRecord = previous ?? {
        ...{
          eventId: e.eventId,
          resourceId: lower(found.resourceId),
          subscriptionId: subscriptionOf(found.resourceId),
        },
        ...{ resources: [...e.resources], eventType: e.eventType, status: e.eventStatus, notBefore: e.notBefore },
        ...{ durationInSeconds: e.durationInSeconds, description: e.description, source: 'relay' as const },
        ...{ firstSeenAt: acknowledged.at, updatedAt: acknowledged.at, unwatched: [] },
      };
      if ((await store.put(name, { ...base, acknowledged }, current?.version ?? null)) !== null) return;
    }
  }
}

/** findEvent: the VM (by resource id or name) and its event, from the member that lists it, else from Azure's record. */
export function findEvent(s: FleetSnapshot, vm: string, eventId: string): Found | null {
  const want = lower(vm);
  const azure = s.azure.find(
    (a) =>
      a.record.eventId === eventId && (a.record.resourceId === want || targetsOf(a.record, s.groups).some((t) => lower(t.vm) === want)),
  );
  for (const g of s.groups)
    for (const m of g.members) {
      if (lower(m.resourceId) !== want && lower(m.vm) !== want) continue;
      const e = m.events.find((x) => x.eventId === eventId);
      if (e === undefined || m.resourceId === null) continue;
      const event = eventOf({ ...e, resources: [m.vm] });
      const group =
        g.maxUnavailable === null ? null : { group: g.group, maxUnavailable: g.maxUnavailable, heartbeatSeconds: m.heartbeatSeconds };
      return { resourceId: m.resourceId, name: m.vm, group, event, azure: azure ?? null };
    }
  if (azure === undefined) return null;
  const r = azure.record;
  const target = targetsOf(r, s.groups).find((t) => lower(t.vm) === want || r.resourceId === want) ?? targetsOf(r, s.groups)[0]!;
  const member = target.members[0];
  const g = member === undefined ? undefined : s.groups.find((x) => x.group === member.group);
  const event = eventOf(r);
  const group =
    g === undefined || g.maxUnavailable === null || member === undefined
      ? null
      : { group: g.group, maxUnavailable: g.maxUnavailable, heartbeatSeconds: member.member.heartbeatSeconds };
  return { resourceId: member?.member.resourceId ?? r.resourceId, name: target.vm, group, event, azure };
}
