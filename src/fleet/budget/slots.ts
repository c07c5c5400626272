/**
 * MemberSlots: one member's side of its group's slots, over the store's conditional writes: which
 * slot it holds and who holds the others; it takes, narrows, renews and gives back its slot. Every
 * write is conditional on the version read, so two members racing for the last slot never both
 * win. FleetBudget (budget.ts) runs these one at a time and turns store failures into a closed budget.
 */
import type { ApprovalRequest, Grant } from '../../approval/service.ts';
import type { EventsDocument, ScheduledEvent } from '../../imds/wire.ts';
import type { Versioned } from './stores/port.ts';
import type { MemberSlotsOptions } from './types.ts';
import {
  holderOf,
  live,
  overflowName,
  OVERFLOW_PREFIX,
  recordedEnd,
  renewedEnd,
  slotName,
  SLOT_PREFIX,
  type Holder,
  type HoldMode,
  type SlotRecord,
  asSlot,
  ownedBy,
  slotRecordOf,
} from './records.ts';
import { forcedPast, heldError, overflowed, slotLost, takenOver } from './said.ts';
import { zoneConflict } from './zones.ts';
import type { Unhealthy } from './unavailable.ts';
import { freeSlot, type Taken, type Written } from './give-back.ts';
import { rateHeld, rateHold, room, stampsOf, unstamped, type RateHold } from './rate.ts';
import { pausedError, pauseOf } from './pause.ts';
import { takenNext } from './served.ts';

/** How often a write lost to another member is tried again from a fresh read, before the approval is held. */
const MAX_ROUNDS = 8;

export class MemberSlots {
  readonly #o: MemberSlotsOptions;
  readonly #now: () => number;
  /** The slot record this member holds, as last read or written; undefined before the first read. */
  #held: Versioned | null | undefined = undefined;
  #holders: Holder[] = [];
  #last: readonly Versioned[] = [];

  constructor(options: MemberSlotsOptions) {
    this.#o = options;
    this.#now = options.now;
  }

  /**
   * held: the slot this member holds (null: none; undefined: not read yet): a record in its name
   * whose recorded end has not passed. Past it the record counts for nobody, this member included.
   */
  get held(): Versioned | null | undefined {
    const h = this.#held;
    return h == null || live(asSlot(h.value), this.#now()) ? h : null;
  }

  /** lapsed: the slot this member last knew it held has passed its recorded end since (not read again yet). */
  get lapsed(): boolean {
    return this.#held != null && this.held === null;
  }

  /** heldFor: the EventIds this member's slot is held for. */
  get heldFor(): readonly string[] {
    const h = this.held;
    return h ? (asSlot(h.value).eventIds ?? []) : [];
  }

  /** last: the group's slot records as last read (live or not). */
  get last(): readonly Versioned[] {
    return this.#last;
  }

  /** holders: who held the group's slots at the last read. */
  get holders(): readonly Holder[] {
    return this.#holders;
  }

  /**
   * take holds a slot for `event`: this member's own slot when it holds one already, else the first
   * free one (a holder past its recorded end is taken over). With none free, an early approval is
   * held (ApprovalError HELD, with the holders); a forced one, or an event Started at NotBefore,
   * writes this member's overflow record. A write lost to another member is tried again from a
   * fresh read. `admit` says whether this member's turn in the queue has come for what is free
   * (which of the free slots is its own to try), or not (null).
   * Store failures are thrown as they are.
   */
  async take(
    event: ScheduledEvent,
    mode: HoldMode,
    request: ApprovalRequest,
    admit?: (free: number) => Promise<number | null>,
    unhealthy: (slots: readonly Versioned[]) => Promise<readonly Unhealthy[]> = async () => [],
  ): Promise<Taken> {
    const { key: me, vm } = this.#o.me();
    let sick: Unhealthy[] = [];
    let queued = false;
    let [zoneWhy, rated]: [string | null, RateHold | null] = [null, null];
    const zones = (slots: readonly Versioned[]) =>
      this.#o.config.zones === undefined ? null : zoneConflict(slots, [vm.zone], this.#now(), me);
    const { marginSeconds, group, rate } = this.#o.config;
    const maxUnavailable = this.#o.k();
    let holders: Holder[] = [];
    // down already (Azure started it) and holding nothing: said in the store before anything is read,
    // so an early approval of another member that confirms after this write counts it
    if (mode === 'started' && this.held === null) {
      const record = slotRecordOf(this.#o.me(), event, mode, request, this.#now(), this.#o.config.marginSeconds);
      const written = await this.write(overflowName(me), record, null);
      if (written) return { ...this.#overflowed(event, mode, await this.read()), writes: [written] };
    }
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const now = this.#now();
      const until = new Date(recordedEnd(event, now, marginSeconds)).toISOString();
      const slots = await this.read();
      // a paused group approves nothing early: only a forced approval (or Azure's own start) goes on
      const pause = mode === 'early' ? pauseOf(slots, now) : null;
      if (pause !== null) throw pausedError(group, pause);
      // only a live slot is this member's: one past its recorded end is taken like any free slot, counted and read back
      const mine = this.held;
      if (mine) {
        const s = asSlot(mine.value);
        if ((s.eventIds ?? []).includes(event.eventId)) return { forced: s.mode === 'forced', slot: mine.name, writes: [] };
        // this member is down already: another of its events takes no other slot
        const next: SlotRecord = { ...s, eventIds: [...(s.eventIds ?? []), event.eventId], until: later(s.until, until) };
        const written = await this.write(mine.name, next, mine.version);
        if (written) return { forced: s.mode === 'forced', slot: mine.name, writes: [written] };
        continue;
      }
      const byName = new Map(slots.map((r) => [r.name, r]));
      // every member down counts, in a slot of any number (the group may have had more slots) or an overflow record
      const down = slots.filter((r) => live(asSlot(r.value), now)).length;
      const free = Array.from({ length: maxUnavailable }, (_, i) => slotName(i)).filter((n) => {
        const r = byName.get(n);
        return r === undefined || !live(asSlot(r.value), now);
      });
      holders = slots.filter((r) => live(asSlot(r.value), now)).map((r) => holderOf(asSlot(r.value)));
      // an unhealthy member that holds no slot counts as one in maintenance (read only when a slot is free)
      sick = maxUnavailable - down > 0 && free.length > 0 ? [...(await unhealthy(slots))] : [];
      const record = slotRecordOf(this.#o.me(), event, mode, request, this.#now(), this.#o.config.marginSeconds);
      zoneWhy = mode === 'early' ? zones(slots) : null;
      // the group's rate holds an early approval (a forced one goes past it)
      rated = mode === 'early' ? rateHold(rate, slots, now) : null;
      if (zoneWhy !== null || rated !== null) break;
      if (maxUnavailable - down - sick.length > 0 && free.length > 0) {
        // an early approval waits its turn: only the head of the queue tries for what is free (and the rate allows), each
        // member admitted for its own free slot (the second in line for the second one)
        const open = Math.min(free.length, maxUnavailable - down - sick.length, room(rate, slots, now));
        const turn = mode === 'early' && admit !== undefined ? await admit(open) : 0;
        queued = turn === null;
        if (turn === null) break;
        const name = free[turn % free.length]!;
        const before = byName.get(name);
        // an early approval (a forced one too) is stamped in its slot for the rate (the stamps still within its window kept), and counted (served.ts)
        const [prior, as] = [before && asSlot(before.value), mode === 'forced' ? 'early' : mode];
        const stamps = { ...stampsOf(prior, event.eventId, rate, now, mode !== 'started'), ...takenNext(prior) };
        const written = await this.write(name, { ...record, mode: as, ...stamps }, before?.version ?? null);
        if (!written) continue;
        // read back: a member that went down past the budget meanwhile (its overflow record written
        // between this member's read and its write), or an approval past the rate, is counted, and this early slot given back
        if (mode === 'early' && !(await this.#confirmed(name, sick.length, zones, event.eventId))) break;
        if (before !== undefined) takenOver(this.#o.logger, name, asSlot(before.value), me);
        this.#o.logger.info({ slot: name, eventId: event.eventId, group, mode }, 'fleet budget: slot taken');
        // a forced approval past a pause or the rate goes on the record as forced, saying what it went past
        const past = mode === 'forced' ? forcedPast(group, rate, slots, now) : null;
        return { forced: past !== null, slot: name, writes: [written], ...(past === null ? {} : { note: past }) };
      }
      if (mode === 'early') break;
      // forced, or Started at NotBefore: down past the budget, and counted so the others wait for it
      const name = overflowName(me);
      const written = await this.write(name, record, byName.get(name)?.version ?? null);
      if (!written) continue;
      return { ...this.#overflowed(event, mode, slots), writes: [written] };
    }
    if (rated !== null) throw rateHeld(group, rate!, rated, holders);
    throw heldError({ group, maxUnavailable }, holders, sick, zoneWhy, queued);
  }

  /** overflowed: this member is down with its overflow record; said loudly when the group is past its budget with it. */
  #overflowed(event: ScheduledEvent, mode: HoldMode, slots: readonly Versioned[]): Grant {
    const { key: me, vm } = this.#o.me();
    const others = this.#holders.filter((h) => h.vm !== vm.name);
    return overflowed(
      this.#o.logger,
      { group: this.#o.config.group, maxUnavailable: this.#o.k() },
      { name: overflowName(me), vm: vm.name, event, mode, slots, others },
      this.#now(),
    );
  }

  /**
   * confirmed reads the slots again after this member took `name` for an early approval: when the
   * members down (holders and overflow records, this one included) are more than the group allows,
   * or its approvals within the rate's window more, or the group is paused (HELD by the pause), the slot
   * is given back at once, before IMDS is told anything.
   */
  async #confirmed(name: string, unhealthy: number, zones: (slots: readonly Versioned[]) => string | null, eventId: string) {
    const now = this.#now();
    const slots = await this.read();
    const down = slots.filter((r) => live(asSlot(r.value), now)).length + unhealthy;
    const rated = rateHold(this.#o.config.rate, slots, now, 0) !== null;
    const over = down > this.#o.k() || zones(slots) !== null;
    // a pause written between the read and the write holds it as if it had been read first
    const pause = pauseOf(slots, now);
    if (!over && !rated && pause === null) return true;
    const why = over
      ? 'another member went down meanwhile'
      : rated
        ? 'another early approval spent the rate meanwhile'
        : 'the group was paused meanwhile';
    this.#o.logger.info({ slot: name, down, group: this.#o.config.group }, `fleet budget: ${why}; slot given back`);
    await this.release(() => [], eventId);
    if (pause !== null) throw pausedError(this.#o.config.group, pause);
    return false;
  }

  /** release keeps only the events `keep` returns in this member's slot, and frees the slot when none is left (without the stamp of `retract`, an approval never given). */
  async release(keep: (eventIds: readonly string[]) => readonly string[], retract?: string): Promise<void> {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const held = this.held;
      if (held == null) return;
      const s = asSlot(held.value);
      const ids = s.eventIds ?? [];
      const left = keep(ids);
      if (left.length === ids.length) return;
      const next: SlotRecord =
        left.length === 0 ? freeSlot(retract === undefined ? s : unstamped(s, retract), this.#now()) : { ...s, eventIds: left };
      // an overflow record given back is deleted: it would be read at every later read of the slots
      const done =
        left.length === 0 && held.name.startsWith(OVERFLOW_PREFIX)
          ? await this.remove(held.name, held.version)
          : await this.write(held.name, next, held.version);
      if (done) {
        if (left.length === 0)
          this.#o.logger.info({ slot: held.name, eventIds: ids, group: this.#o.config.group }, 'fleet budget: slot given back');
        return;
      }
      await this.read();
    }
  }

  /**
   * renew moves the recorded end of the slot this member holds past its listed events' windows
   * (records.ts's renewedEnd). A write lost means another member wrote the slot: it is read back at once.
   */
  async renew(document: EventsDocument | null): Promise<void> {
    const held = this.held;
    if (held == null || document === null) return;
    const s = asSlot(held.value);
    const until = renewedEnd(s, document.events, this.#now(), this.#o.config);
    if (until !== null && !(await this.write(held.name, { ...s, until }, held.version))) await this.read();
  }

  /** readSlots reads every slot record, and from them which one this member holds and who holds the others. */
  async read(): Promise<Versioned[]> {
    let slots = await this.#o.store.list(SLOT_PREFIX);
    if ((await this.#o.look?.(slots)) === true) slots = await this.#o.store.list(SLOT_PREFIX);
    this.#last = slots;
    this.#o.warnings?.check(slots);
    const now = this.#now();
    const me = this.#o.me().key;
    const before = this.#held;
    // a record in this member's name is its slot only while live: past its recorded end it is anyone's to take
    this.#held = slots.find((r) => ownedBy(asSlot(r.value), me, now)) ?? null;
    const lost = before != null && this.#held === null ? before : null;
    if (lost !== null)
      slotLost(
        this.#o.logger,
        this.#o.config.group,
        lost,
        slots.find((r) => r.name === lost.name),
        now,
      );
    this.#holders = slots.filter((r) => live(asSlot(r.value), now)).map((r) => holderOf(asSlot(r.value)));
    const self = slots.filter((r) => ownedBy(asSlot(r.value), me, now)).length;
    this.#o.onSlots?.(self, this.#holders.length - self);
    return slots;
  }

  /** remove deletes a slot record conditionally (an overflow record given back); when it is this member's, it holds nothing. */
  async remove(name: string, version: string): Promise<boolean> {
    if (!(await this.#o.store.remove(name, version))) return false;
    if (this.#held?.name === name) this.#held = null;
    return true;
  }

  /** write writes one slot record conditionally (what it wrote, or null when another writer came first); this member's view of its slot follows. */
  async write(name: string, record: SlotRecord, version: string | null): Promise<Written | null> {
    const written = await this.#o.store.put(name, record, version);
    if (written === null) return null;
    const mine = record.member === this.#o.me().key;
    if (mine) this.#held = { name, value: record, version: written };
    else if (this.#held?.name === name) this.#held = null;
    return { name, record, version: written };
  }
}

const later = (a: string | undefined, b: string): string => (a !== undefined && Date.parse(a) > Date.parse(b) ? a : b);
