/**
 * The queue of a group's held approvals. Members whose automatic approval (policy, hooks) the
 * budget holds are served in one order: the earliest NotBefore first (the maintenance that comes
 * soonest needs a slot most), then the one held first, then by VM name. Each member reads the
 * queue from the members' records (where each writes its held approvals), and only the members
 * at its head try for a slot that frees; the others ask again less often the further back they
 * stand, so a slot given back costs one write, not a race of every waiter.
 */
import type { MemberRecord } from './records.ts';

/** One member waiting for a slot: its earliest held maintenance. */
export interface Waiter {
  readonly member: string;
  readonly vm: string;
  readonly notBefore: number;
  readonly since: number;
}

/** Only approvals asked again by themselves stand in the queue: a person who was told "held" asks again or not. */
export const QUEUED_VIA: ReadonlySet<string> = new Set(['policy', 'hooks']);

/** waitersOf: the members (with a fresh record, not `me`) whose automatic approval the budget holds, each at its earliest. */
export function waitersOf(members: readonly MemberRecord[], me: string, now: number): Waiter[] {
  const out: Waiter[] = [];
  for (const m of members) {
    if (m.member === me || !fresh(m, now)) continue;
    const held = m.events.flatMap((e) =>
      e.held !== undefined && e.status === 'Scheduled' && QUEUED_VIA.has(e.held.via ?? '')
        ? [{ member: m.member, vm: m.vm, notBefore: timeOf(e.notBefore, now), since: timeOf(e.held.since, now) }]
        : [],
    );
    const first = held.sort(inOrder)[0];
    if (first !== undefined) out.push(first);
  }
  return out.sort(inOrder);
}

/** rivalsOf: the other members (fresh records) with a maintenance Scheduled and no slot for it yet: who may ask for a slot now. */
export function rivalsOf(members: readonly MemberRecord[], me: string, now: number): number {
  return members.filter((m) => m.member !== me && fresh(m, now) && m.events.some((e) => e.status === 'Scheduled' && !e.approved)).length;
}

const fresh = (m: MemberRecord, now: number): boolean => now - Date.parse(m.heartbeatAt) <= 3 * m.heartbeatSeconds * 1000;

/** waiterOf: a member in the queue for `event`, held since `since` (now when it was never held). */
export function waiterOf(
  member: string,
  vm: string,
  event: { readonly notBefore: string | null },
  since: string | undefined,
  now: number,
): Waiter {
  return { member, vm, notBefore: timeOf(event.notBefore, now), since: timeOf(since ?? null, now) };
}

/** inOrder: the queue's order: earliest NotBefore, then held first, then VM name. */
export function inOrder(a: Waiter, b: Waiter): number {
  return a.notBefore - b.notBefore || a.since - b.since || a.vm.localeCompare(b.vm);
}

/** positionOf: how many waiters stand ahead of `me` (0: at the head). */
export function positionOf(waiters: readonly Waiter[], me: Waiter): number {
  return waiters.filter((w) => inOrder(w, me) < 0).length;
}

/**
 * pauseFor: how long a member at `position` lets pass between two looks at the slots. The first
 * 2 × maxUnavailable look at every retry (a slot given back goes to the head within about one
 * IMDS read, and the next in line is ready behind it); the others look less often the further back
 * they stand, at least once a heartbeat (when they read the queue again anyway).
 */
export function pauseFor(position: number, maxUnavailable: number, retryMs: number, heartbeatMs: number): number {
  if (position < 2 * maxUnavailable) return 0;
  return Math.min(heartbeatMs, retryMs * Math.floor(position / maxUnavailable));
}

const timeOf = (iso: string | null, fallback: number): number => {
  const t = iso === null ? NaN : Date.parse(iso);
  return Number.isFinite(t) ? t : fallback;
};

/**
 * QueuePlace: where this member last found itself in its group's queue, and when it last looked
 * at the slots. While it stands far back and looked recently, an automatic approval is held
 * again at once, without a request to the store.
 */
export class QueuePlace {
  readonly #maxUnavailable: number;
  readonly #retryMs: number;
  readonly #heartbeatMs: number;
  #position: number | null = null;
  #lookedAt = Number.NEGATIVE_INFINITY;
  #held: Error | null = null;

  constructor(o: { readonly maxUnavailable: number; readonly retryMs: number; readonly heartbeatSeconds: number }) {
    this.#maxUnavailable = o.maxUnavailable;
    this.#retryMs = o.retryMs;
    this.#heartbeatMs = o.heartbeatSeconds * 1000;
  }

  /** position: how many members stood ahead of this one when it last read the queue (null: not waiting). */
  get position(): number | null {
    return this.#position;
  }

  /** resting: the last held answer, while it is not this member's time to look at the slots again; null when it is. */
  resting(now: number): Error | null {
    if (this.#held === null || this.#position === null) return null;
    const pause = pauseFor(this.#position, this.#maxUnavailable, this.#retryMs, this.#heartbeatMs);
    return now - this.#lookedAt < pause ? this.#held : null;
  }

  /** looked: this member looks at the slots now. */
  looked(now: number): void {
    this.#lookedAt = now;
  }

  /**
   * place reads this member's place from the members' records: which of `free` slots is its turn
   * to try (its place in the queue), or null when its turn has not come. A member that asks for the first time while others may ask too takes its place
   * in the queue first (held once, its record says so at its next read), so a wave of members
   * ready at once is served in the queue's order rather than by who writes first.
   */
  place(members: readonly MemberRecord[], me: Waiter, now: number, free: number, first = false): number | null {
    this.#position = positionOf(waitersOf(members, me.member, now), me);
    if (first && rivalsOf(members, me.member, now) > 0) return null;
    return this.#position < free ? this.#position : null;
  }

  /** heldAgain: the answer to give while resting. */
  heldAgain(err: Error): void {
    this.#held = err;
  }

  /** done: this member waits no more (granted, or its event is gone). */
  done(): void {
    this.#position = null;
    this.#held = null;
    this.#lookedAt = Number.NEGATIVE_INFINITY;
  }
}
