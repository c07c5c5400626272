/**
 * The group's rate (`fleet.rate`): at most `approvals` early approvals in any window of
 * `perSeconds`, beside `maxUnavailable`, so a group drains at a pace its service absorbs and not
 * only at a concurrency (kured's "N per period", Karpenter's "30 % in 10 minutes").
 *
 * Where the group's recent approvals are kept: in the slot records. Every early approval writes
 * one (conditionally, as the member taking it), and stamps it with its time and EventId; the
 * stamps stay in the slot when it is given back, and each write to the slot keeps only those still
 * within the window. Counting them is one more look at the slot records a member reads anyway: no
 * request more, and no record that every member of the group races. A maintenance that takes
 * several members down at once (one EventId in several slots) is one approval. A forced approval
 * is never held by the rate; one that takes a free slot is stamped and counted all the same, so
 * the approvals after it keep the pace.
 */
import { z } from 'zod';
import { ApprovalError } from '../../approval/service.ts';
import { asSlot, CLOCK_SKEW_MS, type Holder, type SlotRecord } from './records.ts';
import type { Versioned } from './stores/port.ts';

/** The reason a held approval gives when the rate holds it (metrics label it so). */
export const RATE_REASON = 'rate';

export const RateConfig = z
  .strictObject({
    approvals: z
      .number()
      .int()
      .min(1)
      .max(100)
      .describe('How many early approvals the group may give in any window of perSeconds (a maintenance of several members is one).'),
    perSeconds: z
      .number()
      .int()
      .min(1)
      .max(7 * 86400)
      .describe('The length of the window, in seconds (at most a week).'),
  })
  .describe(
    'At most `approvals` early approvals in the group in any window of `perSeconds`, beside maxUnavailable: an approval the rate holds is HELD, saying when the next may come. A forced approval is never held by it. Every member of a group should name the same rate.',
  );
export type RateConfig = z.infer<typeof RateConfig>;

/**
 * recentOf: the group's early approvals within the window ending now, the earliest first, one per
 * maintenance (its earliest stamp). What a record says is untrusted: a time that does not read,
 * or one more than CLOCK_SKEW_MS ahead of this member's clock, counts nowhere.
 */
export function recentOf(slots: readonly Versioned[], perSeconds: number, now: number): number[] {
  const first = new Map<string, number>();
  for (const r of slots)
    for (const st of asSlot(r.value).approvals ?? []) {
      const at = Date.parse(st.at);
      if (!(at > now - perSeconds * 1000 && at <= now + CLOCK_SKEW_MS)) continue;
      first.set(st.eventId, Math.min(at, first.get(st.eventId) ?? Infinity));
    }
  return [...first.values()].sort((a, b) => a - b);
}

/** What holds an approval back: how many approvals the window holds, and when the next may come. */
export interface RateHold {
  readonly count: number;
  readonly last: number;
  readonly next: number;
}

/**
 * rateHold: null when `adding` more approvals stay within the rate now (or there is no rate);
 * else how many the window holds and when the next may come (when enough of them have left the
 * window). `adding` is 1 before a slot is written, and 0 at the read back after it (its own stamp
 * is counted then).
 */
export function rateHold(rate: RateConfig | undefined, slots: readonly Versioned[], now: number, adding = 1): RateHold | null {
  if (rate === undefined) return null;
  const recent = recentOf(slots, rate.perSeconds, now);
  if (recent.length + adding <= rate.approvals) return null;
  // the next may come once all but approvals − adding of them have left the window
  const leaving = recent[Math.max(0, recent.length + adding - rate.approvals - 1)]!;
  return { count: recent.length, last: recent.at(-1)!, next: leaving + rate.perSeconds * 1000 };
}

/** room: how many early approvals the rate allows now (Infinity without a rate). */
export function room(rate: RateConfig | undefined, slots: readonly Versioned[], now: number): number {
  return rate === undefined ? Infinity : Math.max(0, rate.approvals - recentOf(slots, rate.perSeconds, now).length);
}

/**
 * stampsOf: the stamps a slot record written now keeps: those of the record it replaces still
 * within the window (the latest `approvals` of them at most), and, for an early approval (`stamp`),
 * its own. Without a rate the record's stamps are kept as they are and nothing is stamped.
 */
export function stampsOf(prior: SlotRecord | undefined, eventId: string, rate: RateConfig | undefined, now: number, stamp: boolean) {
  const kept = prior?.approvals ?? [];
  if (rate === undefined) return kept.length === 0 ? {} : { approvals: kept };
  const within = kept.filter((s) => {
    const at = Date.parse(s.at);
    return at > now - rate.perSeconds * 1000 && at <= now + CLOCK_SKEW_MS;
  });
  // a slot never needs more than a window's worth: the latest `approvals` of them, and this one
  const approvals = [...within.slice(-rate.approvals), ...(stamp ? [{ at: new Date(now).toISOString(), eventId }] : [])];
  return approvals.length === 0 ? {} : { approvals };
}

/** unstamped: the record without the stamp of `eventId`: an approval given back before IMDS heard of it was never given. */
export function unstamped<S extends SlotRecord>(record: S, eventId: string): S {
  if (record.approvals === undefined) return record;
  const approvals = record.approvals.filter((s) => s.eventId !== eventId);
  const { approvals: _, ...rest } = record;
  return (approvals.length === 0 ? rest : { ...rest, approvals }) as S;
}

/** rateText: what the rate says of a held approval. */
export function rateText(group: string, rate: RateConfig, hold: RateHold): string {
  const n = (k: number, what: string) => `${k} ${what}${k === 1 ? '' : 's'}`;
  return `group ${group} allows ${n(rate.approvals, 'early approval')} in any ${rate.perSeconds} s, and gave ${hold.count} within the last ${rate.perSeconds} s (the last at ${new Date(hold.last).toISOString()}); the next may come at ${new Date(hold.next).toISOString()}`;
}

/** RateHeldError: an approval the rate holds (HELD), with its reason and when the next may come. */
export class RateHeldError extends ApprovalError {
  readonly next: string;
  constructor(message: string, holders: readonly Holder[], next: string) {
    super('HELD', message, undefined, holders, [], undefined, RATE_REASON);
    this.next = next;
  }
}

/** rateHeld: the answer when the rate holds an approval (HELD, with the slots' holders). */
export function rateHeld(group: string, rate: RateConfig, hold: RateHold, holders: readonly Holder[]): RateHeldError {
  return new RateHeldError(rateText(group, rate, hold), [...holders], new Date(hold.next).toISOString());
}
