/**
 * MemberRecordWriter writes one member's record (`member-<key>`): its events, the slot it holds,
 * its held approvals and its heartbeat. It writes at every heartbeat, and at once when what the
 * record says changes (at most once a second), each time over the version it wrote last (one
 * request); it reads the record first only when that version is not known or was overtaken.
 */
import type { FleetStore } from './stores/port.ts';
import { memberName, type MemberEvent, type MemberRecord } from './records.ts';

export class MemberRecordWriter {
  readonly #store: FleetStore;
  #lastShape = '';
  #lastAt = 0;
  /** The version of the record as this member last wrote it (undefined: not known, read it first). */
  #version: string | undefined = undefined;

  constructor(store: FleetStore) {
    this.#store = store;
  }

  /** write writes the record when `force` (a heartbeat) or when what it says changed; true when it wrote. */
  async write(record: Omit<MemberRecord, 'heartbeatAt'>, now: number, force: boolean): Promise<boolean> {
    // who holds the slots ahead of a held approval changes at every hand-off: said at the heartbeat, not written for
    const shape = JSON.stringify({ events: record.events.map(withoutHolders), slot: record.slot, health: record.health?.since });
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
    return true;
  }
}

const withoutHolders = (e: MemberEvent): MemberEvent => (e.held === undefined ? e : { ...e, held: { ...e.held, by: [] } });
