/**
 * The queue's order (queue.ts): who waits for a slot, and in which order they are served: the
 * earliest NotBefore first, then the one held first, then by member key.
 */
import { staleAt, type MemberRecord } from './records.ts';

/** One member waiting for a slot: its earliest held maintenance. */
export interface Waiter {
  readonly member: string;
  readonly vm: string;
  readonly eventId: string;
  readonly notBefore: number;
  readonly since: number;
  /** The slots its maintenance needs: the members of the group it takes down. */
  readonly need: number;
}

/**
 * The waiters that may stand ahead of a member: those held, and with `asking` those not held yet;
 * `down` names the VMs holding a slot. `partial`: the member stands beyond the page read (more
 * may stand ahead of it than the page shows).
 */
export type Candidates = ((asking: boolean, down: ReadonlySet<string> | undefined) => Waiter[]) & { readonly partial?: boolean };

/** Only approvals asked again by themselves stand in the queue: a person who was told "held" asks again or not. */
export const QUEUED_VIA: ReadonlySet<string> = new Set(['policy', 'hooks']);

/**
 * waitersOf: the members (with a fresh record, not `me`, not down already: `down` names the VMs
 * holding a slot) whose automatic approval the budget holds, each at its earliest. With `asking`,
 * also those with a maintenance Scheduled that nobody approved or held yet: they may ask now
 * (what a member asking for the first time must let go first).
 */
export function waitersOf(
  members: readonly MemberRecord[],
  me: string,
  now: number,
  o: { readonly asking?: boolean; readonly down?: ReadonlySet<string> } = {},
): Waiter[] {
  const out: Waiter[] = [];
  for (const m of members) {
    if (m.member === me || !fresh(m, now) || o.down?.has(m.vm) === true) continue;
    const held = m.events.flatMap((e) =>
      e.status === 'Scheduled' && (e.held === undefined ? o.asking === true && !e.approved : QUEUED_VIA.has(e.held.via ?? ''))
        ? [
            {
              member: m.member,
              vm: m.vm,
              eventId: e.eventId,
              notBefore: timeOf(e.notBefore, now),
              since: timeOf(e.held?.since ?? null, now),
              need: e.held?.need ?? 1,
            },
          ]
        : [],
    );
    const first = held.sort(inOrder)[0];
    if (first !== undefined) out.push(first);
  }
  return out.sort(inOrder);
}

/** downOf: the VMs holding a slot, from its holders. */
export const downOf = (holders: readonly { readonly vm: string }[]): ReadonlySet<string> => new Set(holders.map((h) => h.vm));

const fresh = (m: MemberRecord, now: number): boolean => !staleAt(m, now);

/** waiterOf: a member in the queue for `event`, held since `since` (now when it was never held). */
export function waiterOf(
  member: string,
  vm: string,
  event: { readonly eventId: string; readonly notBefore: string | null },
  since: string | undefined,
  now: number,
  need = 1,
): Waiter {
  return { member, vm, eventId: event.eventId, notBefore: timeOf(event.notBefore, now), since: timeOf(since ?? null, now), need };
}

/** inOrder: the queue's order: earliest NotBefore, then held first, then member key (as text, as the entries' names sort). */
export function inOrder(a: Waiter, b: Waiter): number {
  return a.notBefore - b.notBefore || a.since - b.since || (a.member < b.member ? -1 : a.member > b.member ? 1 : 0);
}

const timeOf = (iso: string | null, fallback: number): number => {
  const t = iso === null ? NaN : Date.parse(iso);
  return Number.isFinite(t) ? t : fallback;
};
