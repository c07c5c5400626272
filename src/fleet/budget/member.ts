/**
 * MemberRecordWriter writes one member's record (`member-<key>`): its events, the slot it holds,
 * its held approvals and its heartbeat. It writes at every heartbeat, and at once when what the
 * record says changes (at most once a second), each time over the version it wrote last (one
 * request); it reads the record first only when that version is not known or was overtaken.
 */
import type { FleetStore } from './stores/port.ts';
import {
  memberKey,
  memberEventsOf,
  memberName,
  type EventNotes,
  type MemberCalendar,
  type MemberEvent,
  type MemberRecord,
} from './records.ts';
import type { EventsDocument, ScheduledEvent } from '../../imds/wire.ts';
import { affects, type VmIdentity } from '../../imds/identity.ts';
import { isDrill } from '../../imds/drill-id.ts';
import type { HealthState } from '../../sinks/contract.ts';
import type { FleetConfig } from './config.ts';
import { VERSION } from '../../lib/version.ts';
import type { WaveWord } from './waves.ts';
import type { CalendarConfig } from '../../calendar/config.ts';

/** What a member's record says of its calendar, made at each write; `published`: the calendar itself, written once to the group (`calendar-<digest>`). */
export type MemberCalendarOf = (() => MemberCalendar) & {
  readonly published?: { readonly digest: string; readonly config: CalendarConfig };
};

/** A calendar its members published (`calendar-<digest>`): for the relay's console to shade, never read by a member. */
export const CALENDAR_PREFIX = 'calendar-';

/** What a member's record is made of: its VM, its events and what the budget holds of them, its health and calendar. */
export interface RecordParts {
  readonly config: FleetConfig;
  readonly vm: VmIdentity;
  /** Its real events (never a drill's). */
  readonly mine: readonly ScheduledEvent[];
  readonly heldFor?: readonly string[];
  readonly held?: ReadonlyMap<string, NonNullable<MemberEvent['held']>>;
  readonly slot?: string | null;
  readonly health?: HealthState | null | undefined;
  readonly calendar?: MemberCalendarOf | undefined;
  readonly notes?: EventNotes | undefined;
  /** The last word this member said as the speaker of a collision wave. */
  readonly wave?: (() => WaveWord | undefined) | undefined;
}

/** realDocument: the document without a drill's event: no member record, slot or forecast ever shows one. */
export function realDocument(document: EventsDocument | null): EventsDocument | null {
  return document === null ? null : { ...document, events: document.events.filter((e) => !isDrill(e.eventId)) };
}

/** mineOf: the real events of the document that take this VM down (none while the VM does not know its name; never a drill's). */
export function mineOf(document: EventsDocument | null, vm: VmIdentity): ScheduledEvent[] {
  return vm.nameKnown ? (document?.events ?? []).filter((e) => !isDrill(e.eventId) && affects(e.resources, vm.name)) : [];
}

/** endedOf: the member's ended events for its record, when it has any. */
const endedOf = (notes: EventNotes | undefined): { ended?: MemberRecord['ended'] } => {
  const ended = notes?.ended?.() ?? [];
  return ended.length === 0 ? {} : { ended };
};

/** memberRecordOf: a member's record, but for its heartbeat (which the writer stamps). */
export function memberRecordOf(p: RecordParts): Omit<MemberRecord, 'heartbeatAt'> {
  const { vm, config } = p;
  return {
    member: memberKey(vm),
    vm: vm.name,
    resourceId: vm.resourceId,
    heartbeatSeconds: config.heartbeatSeconds,
    events: memberEventsOf(p.mine, p.heldFor ?? [], p.held ?? new Map(), p.notes),
    slot: p.slot ?? null,
    ...(p.health ? { health: p.health } : {}),
    ...(p.calendar ? { calendar: p.calendar() } : {}),
    ...(vm.zone ? { zone: vm.zone } : {}),
    version: VERSION,
    ...(config.maxUnavailable === undefined
      ? {}
      : { maxUnavailable: config.maxUnavailable, unhealthyCountsForSeconds: config.unhealthyCountsForSeconds }),
    ...(config.health === undefined ? {} : { settleSeconds: config.health.settleSeconds }),
    ...(p.wave?.() === undefined ? {} : { wave: p.wave()! }),
    ...endedOf(p.notes),
  };
}

export class MemberRecordWriter {
  readonly #store: FleetStore;
  /** The calendar to publish to the group once (the relay's console shades its blackouts and windows), until it is. */
  #calendar: MemberCalendarOf['published'];
  #lastShape = '';
  #lastAt = 0;
  /** The version of the record as this member last wrote it (undefined: not known, read it first). */
  #version: string | undefined = undefined;

  constructor(store: FleetStore, calendar?: MemberCalendarOf) {
    this.#store = store;
    this.#calendar = calendar?.published;
  }

  /** write writes the record when `force` (a heartbeat) or when what it says changed; true when it wrote. */
  async write(record: Omit<MemberRecord, 'heartbeatAt'>, now: number, force: boolean): Promise<boolean> {
    // what holds a held approval (the holders, the members not healthy, its place) changes at every hand-off: said at the heartbeat, not written for
    const shape = JSON.stringify({
      events: record.events.map(withoutHolders),
      slot: record.slot,
      health: record.health?.since,
      wave: record.wave?.said,
      ended: record.ended?.map((e) => e.eventId),
    });
    if (!force && (shape === this.#lastShape || now - this.#lastAt < 1000)) return false;
    const full: MemberRecord = { ...record, heartbeatAt: new Date(now).toISOString() };
    const name = memberName(record.member);
    for (let round = 0; round < 3; round++) {
      const version = this.#version !== undefined && round === 0 ? this.#version : ((await this.#store.get(name))?.version ?? null);
      this.#version = (await this.#store.put(name, full, version)) ?? undefined;
      if (this.#version !== undefined) break;
    }
    this.#lastShape = shape;
    this.#lastAt = now;
    await this.#publish();
    return true;
  }

  /** publish writes the calendar once, only when no member of the group did (one request per process; a failure tries again at the next write). */
  async #publish(): Promise<void> {
    const c = this.#calendar;
    if (c === undefined) return;
    try {
      await this.#store.put(`${CALENDAR_PREFIX}${c.digest}`, c.config, null);
      this.#calendar = undefined;
    } catch {
      // what the console shades, never what the budget needs: the record is written, this waits for the next write
    }
  }
}

const withoutHolders = (e: MemberEvent): MemberEvent => {
  if (e.held === undefined) return e;
  const { unhealthy: _unhealthy, ahead: _ahead, ...held } = e.held;
  return { ...e, held: { ...held, by: [] } };
};
