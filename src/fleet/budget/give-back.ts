/**
 * What a take wrote, and how it is given back. A take that IMDS then refuses (StartRequests) gives
 * back exactly the records it wrote, each at the version it wrote it (a conditional write, or a
 * conditional delete of an overflow record), and nothing else: a slot another member wrote for a
 * maintenance it started, or one this member held before this take, is never touched. A record in
 * another member's name that changed since it was written is that member's now, and is left as it
 * is (said in the log).
 */
import type { Logger } from 'pino';
import type { Grant } from '../../approval/service.ts';
import type { FleetStore, Versioned } from './stores/port.ts';
import { asSlot, OVERFLOW_PREFIX, type SlotRecord } from './records.ts';
import { unstamped } from './rate.ts';

/** One record a take wrote: its name, the record written and the version the store gave it. */
export interface Written {
  readonly name: string;
  readonly record: SlotRecord;
  readonly version: string;
}

/** What a take granted, and the records it wrote for it (none when the slots held the event already). */
export type Taken = Grant & { readonly writes: readonly Written[] };

/** The member's own side of its slots (MemberSlots): the slot it holds, and its writes that keep that view true. */
interface OwnSlots {
  readonly held: Versioned | null | undefined;
  write(name: string, record: SlotRecord, version: string | null): Promise<Written | null>;
  remove(name: string, version: string): Promise<boolean>;
}

/** freeSlot: a slot given back: no holder, who held it last and since when it is free, the early approvals it keeps for the rate, and its takes (served.ts). */
export const freeSlot = (record: SlotRecord, now: number): SlotRecord => ({
  member: null,
  vm: record.vm ?? '',
  since: new Date(now).toISOString(),
  ...(record.approvals === undefined ? {} : { approvals: record.approvals }),
  ...(record.takes === undefined ? {} : { takes: record.takes }),
});

/**
 * undoOf: what gives `eventId` back from the record `name` a take wrote: the record without it,
 * or, when nothing is left, a free slot, or (an overflow record) no record at all.
 */
export function undoOf(name: string, record: SlotRecord, eventId: string, now: number): SlotRecord | 'delete' {
  const left = (record.eventIds ?? []).filter((id) => id !== eventId);
  if (left.length > 0) return { ...record, eventIds: left };
  // an approval IMDS refused was never given: its stamp goes with it
  return name.startsWith(OVERFLOW_PREFIX) ? 'delete' : freeSlot(unstamped(record, eventId), now);
}

/**
 * giveBackWritten gives `eventId` back from each record of `writes`, at the version written:
 * the names it could not give back (the record changed since, or is gone).
 */
export async function giveBackWritten(store: FleetStore, writes: readonly Written[], eventId: string, now: number): Promise<string[]> {
  const kept: string[] = [];
  for (const w of writes) {
    const undo = undoOf(w.name, w.record, eventId, now);
    const done = undo === 'delete' ? await store.remove(w.name, w.version) : (await store.put(w.name, undo, w.version)) !== null;
    if (!done) kept.push(w.name);
  }
  return kept;
}

/**
 * giveBackTaken gives `eventId` back from the records a take wrote, for an approval IMDS then
 * refused: this member's own slot as it holds it now (it may have renewed it since: only
 * `eventId` goes), a record in another member's name only at the version written. It says in the
 * log what it left as it was.
 */
export async function giveBackTaken(
  slots: OwnSlots,
  o: { readonly store: FleetStore; readonly logger: Logger; readonly group: string; readonly me: string; readonly now: number },
  writes: readonly Written[],
  eventId: string,
): Promise<void> {
  const kept = await giveBackWritten(
    o.store,
    writes.filter((w) => w.record.member !== o.me),
    eventId,
    o.now,
  );
  for (const w of writes.filter((x) => x.record.member === o.me)) {
    const held = slots.held?.name === w.name ? slots.held : null;
    const current = held == null ? null : asSlot(held.value);
    const [record, version] = held != null && current?.eventIds?.includes(eventId) ? [current, held.version] : [w.record, w.version];
    const undo = undoOf(w.name, record, eventId, o.now);
    const done = undo === 'delete' ? await slots.remove(w.name, version) : (await slots.write(w.name, undo, version)) !== null;
    if (!done) kept.push(w.name);
    else if (undo === 'delete' || undo.member === null)
      o.logger.info({ slot: w.name, eventIds: [eventId], group: o.group }, 'fleet budget: slot given back');
  }
  saidKept(o.logger, o.group, eventId, kept);
}

/** saidKept: the records a give-back left as they are (their holder wrote them since), in the log. */
function saidKept(logger: Logger, group: string, eventId: string, kept: readonly string[]): void {
  if (kept.length === 0) return;
  logger.warn(
    { eventId, group, slots: kept },
    `fleet budget: ${kept.join(', ')} changed since this member wrote ${kept.length === 1 ? 'it' : 'them'} for ${eventId}: left to ${kept.length === 1 ? 'its holder' : 'their holders'}, who give${kept.length === 1 ? 's' : ''} it back when the maintenance is over`,
  );
}
