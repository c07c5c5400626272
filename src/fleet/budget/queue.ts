/**
 * The queue of a group's held approvals. Members whose automatic approval (policy, hooks) the
 * budget holds are served in one order: the earliest NotBefore first (the maintenance that comes
 * soonest needs a slot most), then the one held first, then by member key (the VM's name,
 * lower-cased, compared as text: every member sorts alike, whatever its locale). Each member reads
 * the queue from the head of the queue's entries (queue-entries.ts), or from the members' records
 * when it read them anyway, and only the members at its head try for a slot that frees; the others ask again less often the further back they
 * stand, so a slot given back costs one write, not a race of every waiter.
 */
import { ApprovalError } from '../../approval/service.ts';
import type { MemberEvent, MemberRecord } from './records.ts';
import { RateHeldError } from './rate.ts';
import { PausedError } from './pause.ts';
import { servedSince, type SlotTurn, type Turns } from './served.ts';
import { inOrder, QUEUED_VIA, waiterOf, waitersOf, type Candidates, type Waiter } from './queue-order.ts';

/** Where the slots are watched (slot-watch.ts): whether the watch says every slot is held now, and whom to tell when this member comes to the head of the queue or leaves it. */
interface Watched {
  readonly watched?: () => boolean;
  readonly onHead?: (head: boolean) => void;
}

/** An approval the budget holds: since when, the members holding the slots, the path that asked, the slots it needs. */
export type HeldApproval = NonNullable<MemberEvent['held']> & { readonly via: string };

/**
 * pauseFor: how long a member at `position` lets pass between two looks at the slots, asked at
 * every IMDS read: nothing at the head of the queue (the first maxUnavailable: the next slots
 * given back are theirs, taken within about one read), retryMs for the next maxUnavailable (ready
 * behind the head), then retryMs × ⌊position / maxUnavailable − 1⌋, at most a heartbeat (when it
 * reads its place again anyway).
 */
export function pauseFor(position: number, maxUnavailable: number, retryMs: number, heartbeatMs: number): number {
  if (position < maxUnavailable) return 0;
  return Math.min(heartbeatMs, retryMs * Math.max(1, Math.floor(position / maxUnavailable - 1)));
}

/** Reads after the one first listing a maintenance in which its member lets go first those that may ask now, not only those held. */
const FIRST_READS = 2;

/**
 * QueuePlace: where this member last found itself in its group's queue, and when it last looked
 * at the slots. While it stands far back and looked recently, an automatic approval is held
 * again at once, without a request to the store.
 */
export class QueuePlace {
  readonly #maxUnavailable: () => number;
  readonly #retryMs: number;
  readonly #heartbeatMs: number;
  #position: number | null = null;
  /** When this member last read its place, and what it was then. */
  #placedAt = Number.NEGATIVE_INFINITY;
  #placed = 0;
  /** The group's slots as counted when this member read its place (served.ts). */
  #turnsAt: ReadonlyMap<string, SlotTurn> = new Map();
  readonly #turns: () => ReadonlyMap<string, SlotTurn>;
  #lookedAt = Number.NEGATIVE_INFINITY;
  #held: Error | null = null;
  /** Whether a watch of the slots says every one is held now (slot-watch.ts), and whom to tell when this member comes to the head of the queue or leaves it. */
  readonly #watched: () => boolean;
  readonly #onHead: (head: boolean) => void;
  #head = false;
  readonly #approvals = new Map<string, HeldApproval>();
  /** The IMDS reads told (`listed`), and the read at which each Scheduled event was first listed. */
  #reads = 0;
  readonly #listedAt = new Map<string, number>();

  /** approvals: this member's approvals the budget holds, by EventId (its record says them). */
  get approvals(): ReadonlyMap<string, HeldApproval> {
    return this.#approvals;
  }

  /**
   * heldNow records that the budget held the approval of `eventId` and returns the answer to
   * give: the holders, and for an automatic approval its place in the queue (given again while
   * it rests).
   */
  heldNow(eventId: string, err: ApprovalError, via: string, need: number, now: number): ApprovalError {
    const since = this.#approvals.get(eventId)?.since ?? new Date(now).toISOString();
    const ahead = QUEUED_VIA.has(via) ? this.#position : null;
    const unhealthy = err.unhealthy.map((u) => ({ vm: u.vm, since: u.since }));
    this.#approvals.set(eventId, {
      ...{ since, by: [...new Set(err.holders.map((h) => h.vm))], via, ...(need > 1 ? { need } : {}) },
      ...(unhealthy.length > 0 ? { unhealthy } : {}),
      ...(ahead !== null && ahead > 0 ? { ahead } : {}),
      ...(err instanceof RateHeldError ? { next: err.next } : {}),
    });
    if (!QUEUED_VIA.has(via)) return err;
    const message = ahead !== null && ahead > 0 ? `${err.message}; ${ahead} ahead in the queue` : err.message;
    // asked again at the next read: the pace is its place's (resting holds it again without a request to the store)
    const said =
      err instanceof PausedError
        ? err.with(message)
        : new ApprovalError('HELD', message, undefined, err.holders, err.unhealthy, 0, err.reason ?? undefined);
    this.#held = said;
    this.#told();
    return said;
  }

  /** granted: the approval of `eventId` waits no more. */
  granted(eventId: string): void {
    this.#approvals.delete(eventId);
    if (this.#approvals.size === 0) this.done();
  }

  /**
   * listed counts an IMDS read as it arrives, with the Scheduled events it lists, before the
   * member's store work for it (which a busy member does later, for the latest read only): a first
   * ask waits out the read that first listed its maintenance, not the member's own work.
   */
  listed(scheduled: ReadonlySet<string>): void {
    this.#reads++;
    for (const id of scheduled) if (!this.#listedAt.has(id)) this.#listedAt.set(id, this.#reads);
    for (const id of this.#listedAt.keys()) if (!scheduled.has(id)) this.#listedAt.delete(id);
  }

  /** keep forgets the held approvals of events no longer Scheduled; it is told the Scheduled events at the reads the member follows. */
  keep(scheduled: ReadonlySet<string>): void {
    for (const id of this.#approvals.keys()) if (!scheduled.has(id)) this.#approvals.delete(id);
    if (this.#approvals.size === 0) this.done();
  }

  /** waiting: the first of `events` whose automatic approval is held (the one this member stands in the queue for). */
  waiting<E extends { readonly eventId: string }>(events: readonly E[]): E | undefined {
    return events.find((e) => QUEUED_VIA.has(this.#approvals.get(e.eventId)?.via ?? ''));
  }

  /** me: this member in the queue for `event`. */
  me(member: string, vm: string, event: { readonly eventId: string; readonly notBefore: string | null }, now: number, need = 1): Waiter {
    return waiterOf(member, vm, event, this.#approvals.get(event.eventId)?.since, now, need);
  }

  /** asksFirst: the approval of `eventId` was never held yet, or its maintenance was first listed FIRST_READS reads ago or less. */
  asksFirst(eventId: string): boolean {
    const listed = this.#listedAt.get(eventId);
    return !this.#approvals.has(eventId) || (listed !== undefined && listed + FIRST_READS >= this.#reads);
  }

  /** `turns`: the group's slots as last read, counted (served.ts). */
  constructor(
    o: { readonly maxUnavailable: number | (() => number); readonly retryMs: number; readonly heartbeatSeconds: number } & Turns & Watched,
  ) {
    this.#turns = o.turns ?? (() => new Map());
    this.#watched = o.watched ?? (() => false);
    this.#onHead = o.onHead ?? (() => undefined);
    const k = o.maxUnavailable;
    this.#maxUnavailable = typeof k === 'number' ? () => k : k;
    this.#retryMs = o.retryMs;
    this.#heartbeatMs = o.heartbeatSeconds * 1000;
  }

  /** position: how many members stood ahead of this one when it last read the queue (null: not waiting). */
  get position(): number | null {
    return this.#position;
  }

  /** resting: the last held answer, while it is not this member's time to look at the slots again (its place unknown: retryMs); null when it is. */
  resting(now: number): Error | null {
    if (this.#held === null) return null;
    const p = this.#position;
    // at the head, while a watch says every slot is held, the watch wakes it when one is given back: it looks at least every retryMs
    const watched = p !== null && p < this.#maxUnavailable() && this.#watched();
    const pause = p === null || watched ? this.#retryMs : pauseFor(p, this.#maxUnavailable(), this.#retryMs, this.#heartbeatMs);
    return now - this.#lookedAt < pause ? this.#held : null;
  }

  /**
   * wake: `free` slots are free as the watch says: if this member waits within them (its place
   * under `free`), its next ask looks at the slots, whatever the pause; true then. One further back
   * is not woken: the free slots go down the queue in order.
   */
  wake(free: number): boolean {
    // moved up first by the takes the watch has seen since it read its place
    this.served();
    const p = this.#position;
    if (this.#held === null || p === null || p >= free) return false;
    this.#lookedAt = Number.NEGATIVE_INFINITY;
    return true;
  }

  /** told tells onHead when this member, held, comes to the head of the queue (its place under maxUnavailable) or leaves it. */
  #told(): void {
    const p = this.#position;
    const head = this.#held !== null && p !== null && p < this.#maxUnavailable();
    if (head !== this.#head) this.#onHead((this.#head = head));
  }

  /** looked: this member looks at the slots now. */
  looked(now: number): void {
    this.#lookedAt = now;
  }

  /**
   * place reads this member's place from the members' records, or the head of the queue's entries
   * (queue-entries.ts): which of `free` slots is its turn
   * to try (its place in the queue), or null when its turn has not come. The free slots go down the
   * queue in order. A member that asks for the first time (`first`) lets go first every member
   * ahead of it that may ask now, held or not yet, so a wave of members ready at once is served in
   * the queue's order rather than by who writes first; a slot none of them will take is its own at
   * once, from the read after the one that first listed its maintenance (every member due with it
   * has had a read to say its own). `down`: the VMs holding a slot (their records may still say held).
   */
  place(
    members: readonly MemberRecord[] | Candidates,
    me: Waiter,
    now: number,
    free: number,
    first = false,
    down?: ReadonlySet<string>,
  ): number | null {
    const waiters =
      typeof members === 'function'
        ? members(first, down)
        : waitersOf(members, me.member, now, { asking: first, ...(down ? { down } : {}) });
    // the other members waiting for the same maintenance (it names them too) are served with it
    const ahead = waiters.filter((w) => w.eventId !== me.eventId && inOrder(w, me) < 0);
    // beyond a page of the queue's head, only a bound is known: the place last read (moved up as slots were taken) stands if further back
    const partial = typeof members === 'function' && members.partial === true;
    const at = partial ? Math.max(ahead.length, this.#position ?? 0) : ahead.length;
    [this.#position, this.#placed, this.#placedAt, this.#turnsAt] = [at, at, now, this.#turns()];
    this.#told();
    // and its turn has not come: those between the page and it come first
    if (partial) return null;
    // at the read that first lists it, the members due with it may not have said theirs yet: a first ask waits that read out
    const listed = this.#listedAt.get(me.eventId);
    if (first && listed !== undefined && listed >= this.#reads) return null;
    // a maintenance that needs more than are left is passed over, keeping none
    let left = free;
    for (const w of ahead) if (w.need <= left) left -= w.need;
    return me.need <= left ? free - left : null;
  }

  /**
   * served moves this member up (never back) by the members served since it last read its place,
   * as its last look at the slots counts them (served.ts), however many came and went between its
   * looks: one that stands back looks sooner as the queue ahead of it is served, with no read of the queue.
   */
  served(): void {
    if (this.#position === null) return;
    this.#position = Math.min(this.#position, Math.max(0, this.#placed - servedSince(this.#turnsAt, this.#turns(), this.#placedAt)));
    this.#told();
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
    this.#told();
  }
}
