/**
 * How many members the queue served between two looks of a waiting member at the group's slots.
 * Every take of a slot counts itself in the slot's record (`takes`, carried as the slot is given
 * back), so a member that looks now and then learns how many were served since it read its place,
 * however many came and went between its looks; a slot whose record does not count (written by an
 * older member) counts its holder when it was taken since. Only a member's pace hangs on it: a
 * count that lies makes a member look sooner or later, never take a slot out of its turn (its
 * turn is read from the queue itself when a slot is free).
 */
import { asSlot, live, SLOT_PREFIX, type SlotRecord } from './records.ts';
import type { Versioned } from './stores/port.ts';

/** A slot as a waiting member counts it: its takes so far (null: not counted), and when its live holder took it (null: free). */
export interface SlotTurn {
  readonly takes: number | null;
  readonly since: number | null;
}

/** Where a waiting member counts the group's slots (its budget's last read of them). */
export interface Turns {
  readonly turns?: () => ReadonlyMap<string, SlotTurn>;
}

/** A slot's name (`slot-<number>`), not an overflow record's, a notice's or the pause's, listed with them. */
const SLOT_NAME = new RegExp(`^${SLOT_PREFIX}[0-9]+$`);

/** turnsOf: the group's slots (not the overflow records) by name, as last read. */
export function turnsOf(slots: readonly Versioned[], now: number): ReadonlyMap<string, SlotTurn> {
  const out = new Map<string, SlotTurn>();
  for (const r of slots) {
    if (!SLOT_NAME.test(r.name)) continue;
    const s = asSlot(r.value);
    const since = live(s, now) && s.since !== undefined ? Date.parse(s.since) : NaN;
    out.set(r.name, { takes: s.takes ?? null, since: Number.isFinite(since) ? since : null });
  }
  return out;
}

/**
 * servedSince: the takes of the slots in `now` since `then` (each slot's count since; a slot with
 * no record then was taken none), or, for a slot not counted then or now, or counted less than
 * then (written anew by an older member, or its count started again), its holder when taken after `at`.
 */
export function servedSince(then: ReadonlyMap<string, SlotTurn>, now: ReadonlyMap<string, SlotTurn>, at: number): number {
  let served = 0;
  for (const [name, s] of now) {
    const before = then.has(name) ? then.get(name)!.takes : 0;
    if (s.takes !== null && before !== null && s.takes >= before) served += s.takes - before;
    else if (s.since !== null && s.since > at) served += 1;
  }
  return served;
}

/** takenNext: the count a take writes in the slot it takes (`prior`: the slot's record before it); at the largest, it starts again. */
export const takenNext = (prior: SlotRecord | undefined): { readonly takes: number } => {
  const before = prior?.takes ?? 0;
  return { takes: before >= Number.MAX_SAFE_INTEGER ? 1 : before + 1 };
};
