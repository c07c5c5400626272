/**
 * FleetBudget keeps a group's early approvals within its budget: before any early approval the bridge must hold one of the
 * group's slots (`take`), given back once its events are over, its preparations given back and it is whole again (`onRead`).
 * Slots are taken and released only with the store's conditional writes. When the store cannot be read or written the budget
 * fails closed (no early approval, said in `/readyz`, `status`, a log line and a metric) until it answers again. A forced
 * approval goes past the budget, on the record.
 */
import { ApprovalError, type ApprovalGate, type ApprovalRequest, type Grant } from '../../approval/service.ts';
import { affects } from '../../imds/identity.ts';
import type { EventsDocument, ScheduledEvent } from '../../imds/wire.ts';
import { errorFields } from '../../lib/errors.ts';
import { Latest } from '../../lib/latest.ts';
import { Serial } from '../../lib/serial.ts';
import { beating } from '../../lib/time.ts';
import { FleetStoreError, type Versioned } from './stores/port.ts';
import { memberKey, type MemberRecord } from './records.ts';
import { RecordWarnings } from './parse.ts';
import { budgetStateOf, forcedWithin, StoreHealth, unavailable } from './health.ts';
import { MemberSlots } from './slots.ts';
import type { BudgetOptions, BudgetState } from './types.ts';
import { MemberRecordWriter, memberRecordOf, mineOf, realDocument } from './member.ts';
import type { QueuePlace } from './queue.ts';
import { downOf, QUEUED_VIA } from './queue-order.ts';
import { earliestScheduled, QueueEntries, wantedEntry } from './queue-entries.ts';
import { forecastTurnOf, type ForecastTurn } from './forecast-turn.ts';
import { Settling } from './health-gate.ts';
import { GroupMembers } from './members-read.ts';
import { namedIn, takeForAll, type ManyContext } from './many.ts';
import { giveBackTaken, type Written } from './give-back.ts';
import { firstUnlessPaused, goesFirst } from './unhealthy-first.ts';
import { PausedError, pausedError, pauseOf } from './pause.ts';
import { Breaker } from './breaker.ts';
import { watchedPlace, type SlotWatch } from './slot-watch.ts';

export type { BudgetState } from './types.ts';
/** An event as the queue knows it. */
type Asked = Parameters<QueuePlace['me']>[2];

export class FleetBudget implements ApprovalGate {
  readonly #o: BudgetOptions;
  readonly #now: () => number;
  readonly #slots: MemberSlots;
  readonly #members: GroupMembers;
  readonly #one = new Serial();
  readonly #health: StoreHealth;
  readonly #record: MemberRecordWriter;
  readonly #settling: Settling;
  readonly #place: QueuePlace;
  /** At the head of the queue, a watch of the slots (Leases) says when one is free (slot-watch.ts). */
  readonly #watch: SlotWatch;
  /** This member's entry in the queue, and the head of the queue as read at a look. */
  readonly #entries: QueueEntries;
  /** What the last take of each event wrote (EventId: the records, at the versions written). */
  readonly #taken = new Map<string, readonly Written[]>();
  /** When this member reads the group for the collision forecast, and what it does instead. */
  readonly #turn: ForecastTurn;
  /** When IMDS last answered (a good read): past marginSeconds since, a heartbeat renews nothing from the document read then. */
  #readAt = -Infinity;
  readonly #following = new Latest<EventsDocument>((d) =>
    this.#serial(() => this.#onRead(d)).catch((err: unknown) => this.#health.failed('follow the document', err)),
  );

  constructor(options: BudgetOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#record = new MemberRecordWriter(options.store, options.calendar);
    [this.#place, this.#watch] = watchedPlace(options, { k: () => this.#k, slots: () => this.#slots.last });
    const warnings = new RecordWarnings(options.logger, options.store.where);
    this.#entries = new QueueEntries(options.store, options.config.heartbeatSeconds, warnings);
    this.#health = new StoreHealth(options.logger, options.store.where, options.hooks?.onStoreError);
    const { config, store, logger } = options;
    const { group, breaker: b } = config;
    const [checksHealth, now, answered] = [options.health !== undefined, this.#now, () => this.#health.answered()];
    this.#members = new GroupMembers({ config, store, logger, warnings, checksHealth, now, answered, figures: options.hooks?.onFigures });
    const breaker = b && new Breaker({ config: b, group, store, logger, now, opened: (p) => options.hooks?.onBreakerOpened?.(p) });
    // back, but not healthy by its checks within timeoutSeconds: a failure too, said by the member itself
    this.#settling = new Settling(options.health, options.logger, breaker && (() => void breaker.notWhole(this.#slots.held)));
    const [me, k] = [() => ({ key: this.#me, vm: this.#o.view.vm }), () => this.#k];
    const onSlots = (self: number, others: number): void => {
      this.#health.answered();
      this.#members.figures.slots(self + others);
      options.hooks?.onSlots?.(self, others);
      options.hooks?.onPaused?.(pauseOf(this.#slots.last, this.#now()) !== null);
    };
    const look = breaker && { look: (slots: readonly Versioned[]) => breaker.look(slots) };
    this.#slots = new MemberSlots({ warnings, config, store, logger, me, k, now: this.#now, onSlots, ...look });
    const [slots, readSlots, readGroup] = [() => this.#slots.last, () => this.#slots.read(), () => this.#readMembers()];
    const [atLimit, writeRecord] = [() => this.#atLimit(), () => this.#writeMember(true)];
    this.#turn = forecastTurnOf(options, { me: () => this.#me, slots, readSlots, readGroup, atLimit, writeRecord, now });
  }

  get #me(): string {
    return memberKey(this.#o.view.vm);
  }

  /** How many members may be unavailable at once: maxUnavailable, or its percentage of the live members as last read. */
  get #k(): number {
    return this.#members.k;
  }

  get #many(): ManyContext {
    return { ...this.#o, slots: this.#slots, now: this.#now, me: this.#me, k: () => this.#k };
  }

  state(): BudgetState {
    return budgetStateOf(this.#o, this.#k, this.#health, this.#slots, this.#place, this.#now());
  }

  /** take holds a slot for an early approval of `event`, or throws HELD (409, the holders) or FLEET_STORE_UNAVAILABLE (503); forced: granted past it. */
  take(event: ScheduledEvent, request: ApprovalRequest): Promise<Grant> {
    const attempt = this.#take(event, request);
    return request.force === true ? forcedWithin(attempt, this.#o.config.storeTimeoutMs) : attempt;
  }

  #take(event: ScheduledEvent, request: ApprovalRequest): Promise<Grant> {
    const forced = request.force === true;
    const queued = !forced && QUEUED_VIA.has(request.via);
    // paused as the last listing of the slots said (read again at every heartbeat): held without asking the store
    const paused = queued ? pauseOf(this.#slots.last, this.#now()) : null;
    // far back in the queue and looked recently: held again without asking the store (not for a pause that ended since)
    const resting = queued && paused === null ? this.#place.resting(this.#now()) : null;
    if (resting !== null && !(resting instanceof PausedError)) {
      this.#o.hooks?.onHeld?.(request.via);
      return Promise.reject(resting);
    }
    return this.#serial(async () => {
      let need = 1;
      // the members' records, read once for this attempt: whom it names, health, percentage, and then the place (else: the queue's head)
      let read: Promise<MemberRecord[]> | undefined;
      const all = () => (read ??= this.#members.list());
      try {
        if (paused !== null) throw pausedError(this.#o.config.group, paused);
        if (queued) this.#place.looked(this.#now());
        const mode = forced ? 'forced' : 'early';
        // a maintenance that names several members of the group needs a slot for each
        const named = event.resources.length < 2 ? [] : namedIn(event, { key: this.#me, vm: this.#o.view.vm }, await all());
        need = Math.max(1, named.length);
        // a member counted as down for its health already takes its own maintenance without a further slot (alwaysAllow), unless paused
        const first = await firstUnlessPaused(this.#many, this.#o.health?.state, { eventId: event.eventId, named: named.length, forced });
        if (first !== null) this.#place.granted(event.eventId);
        if (first !== null) return first;
        const turn = (free: number) => this.#placeOf(read, event, need, free, this.#place.asksFirst(event.eventId));
        // with health checks, an unhealthy member counts against the budget as one in maintenance; a
        // percentage is of the members with a fresh record now
        if (typeof this.#o.config.maxUnavailable === 'string') await all();
        const sick = async (slots: readonly Versioned[]) => (this.#o.health ? this.#members.counted(await all(), slots, this.#me) : []);
        const { writes, ...grant } =
          named.length > 1
            ? await takeForAll(this.#many, event, named, mode, request, queued ? turn : undefined, sick)
            : await this.#slots.take(event, mode, request, queued ? turn : undefined, sick);
        this.#place.granted(event.eventId);
        // what this take wrote, and only that, is given back if IMDS refuses the approval
        this.#taken.set(event.eventId, writes);
        return grant;
      } catch (err) {
        if (err instanceof ApprovalError && err.code === 'HELD') {
          this.#o.hooks?.onHeld?.(request.via);
          this.#place.served();
          // a member that does not know its place yet reads it (once a wait): how soon it asks again depends on it
          if (queued && this.#place.position === null)
            await this.#placeOf(read, event, need, 0, true).catch((e: unknown) => this.#health.failed('read the queue', e));
          // said in the member record, so `fleet status` and `status` show who holds it back, since when, and the queue
          throw this.#place.heldNow(event.eventId, err, request.via, need, this.#now());
        }
        if (!(err instanceof FleetStoreError)) throw err;
        this.#health.failed('take a slot', err);
        if (forced) return { forced: true, slot: null, note: `the fleet store could not be written: ${err.message}` };
        throw unavailable(this.#o.config.group, err.message);
      }
    });
  }

  /**
   * abandon gives back exactly what the last `take` of `eventId` wrote, for an approval that IMDS then refused: never a slot
   * another member wrote, nor one this member held for it before.
   */
  abandon(eventId: string): Promise<void> {
    const { store, logger, config } = this.#o;
    // read once the take before it is done (a forced one may still be writing past its deadline)
    return this.#serial(() => {
      const writes = this.#taken.get(eventId) ?? [];
      this.#taken.delete(eventId);
      return giveBackTaken(this.#slots, { store, logger, group: config.group, me: this.#me, now: this.#now() }, writes, eventId);
    }).catch((err: unknown) => {
      this.#o.logger.warn({ eventId, ...errorFields(err) }, 'fleet budget: could not give back the slot of a refused approval');
    });
  }

  /**
   * onRead keeps the slot true to the document: it gives the slot back once every event it was held for is over and its
   * preparations were given back, and takes one for an event of this VM that Started without an early approval (the member
   * is down all the same). Never throws; a read that comes while one is being handled is handled after it (the latest only).
   */
  onRead(document: EventsDocument): Promise<void> {
    this.#readAt = this.#now();
    if (this.#o.view.vm.nameKnown)
      this.#place.listed(new Set(mineOf(document, this.#o.view.vm).flatMap((e) => (e.eventStatus === 'Scheduled' ? [e.eventId] : []))));
    return this.#following.run(document);
  }

  /** healthChanged writes this member's record at once when its health changed. */
  healthChanged(): Promise<void> {
    const failed = (err: unknown) => this.#health.failed('write the member record', err);
    return this.#serial(() => this.#writeMember(false)).then(() => undefined, failed);
  }

  /** heartbeat renews the slot this member holds, writes its member record, reads the group, and now and then forgets members gone for good. */
  heartbeat(): Promise<void> {
    return this.#serial(async () => {
      await this.#slots.read();
      // from a document IMDS answered within the margin only: one that no read confirmed since says nothing of now (the slot lapses)
      const fresh = this.#now() - this.#readAt <= this.#o.config.marginSeconds * 1000;
      await this.#slots.renew(fresh ? realDocument(this.#o.view.document) : null);
      await this.#writeMember(true);
      // the group's records are read for the forecast only by a member with a maintenance ahead, at its turn (forecast-turn.ts)
      await this.#turn.after(this.#mine(), false, true);
      if (this.#o.view.vm.nameKnown) await this.#members.prune(this.#slots.last, this.#me);
    }).catch((err: unknown) => this.#health.failed('heartbeat', err));
  }

  /** run beats about every heartbeatSeconds (varied by a fifth either way: members started together drift apart) until the signal aborts. */
  run(signal: AbortSignal): Promise<void> {
    return beating(this.#o.config.heartbeatSeconds, signal, () => this.heartbeat()).finally(() => this.#watch.end());
  }

  #serial = <T>(work: () => Promise<T>): Promise<T> => this.#one.run(work);

  /** mine: the real events of the document that take this VM down. */
  #mine = (): ScheduledEvent[] => mineOf(this.#o.view.document, this.#o.view.vm);

  async #onRead(read: EventsDocument): Promise<void> {
    const [slots, vm] = [this.#slots, this.#o.view.vm];
    if (!vm.nameKnown) return;
    const document = realDocument(read)!;
    const mine = document.events.filter((e) => affects(e.resources, vm.name));
    // not read yet, or the slot it held has passed its recorded end (another may hold it now): read the slots first
    if (slots.held === undefined || slots.lapsed) await slots.read();
    const listed = new Set(mine.map((e) => e.eventId));
    // an approval is held while its event is Scheduled: one Started or gone waits no more (nor is it given back)
    const scheduled = new Set(mine.filter((e) => e.eventStatus === 'Scheduled').map((e) => e.eventId));
    this.#place.keep(scheduled);
    for (const id of this.#taken.keys()) if (!scheduled.has(id)) this.#taken.delete(id);
    // given back once over, its preparations given back, and the member whole again (healthy for settleSeconds)
    const now = this.#now();
    await slots.release((ids) => ids.filter((id) => listed.has(id) || !this.#o.givenBack(id) || !this.#settling.settled(id, now)));
    this.#settling.keep(new Set(slots.heldFor));
    // (with alwaysAllow, not while the group counts this member as down for its health: it is counted already)
    const counted = goesFirst(this.#o.config, this.#o.health?.state, now);
    for (const e of mine.filter((x) => x.eventStatus === 'Started' && !slots.heldFor.includes(x.eventId) && !counted)) {
      // a maintenance of several members may have been approved by another, with a slot in this member's name: read first
      if (e.resources.length > 1) await slots.read();
      if (!slots.heldFor.includes(e.eventId))
        await slots.take(e, 'started', { by: 'azure', via: 'imds', reason: 'Started without an early approval' });
    }
    // renewed while the events are listed, at every good read (written once its end has moved by a heartbeat)
    await slots.renew(document);
    const wrote = await this.#writeMember(false, mine);
    await this.#turn.after(mine, wrote, false);
  }

  /** placeOf: this member's turn for `free` slots in the queue for `event`, its place read from `records` when read anyway, else from the head of the queue's entries (`first`: it never asked yet). */
  async #placeOf(records: MemberRecord[] | Promise<MemberRecord[]> | undefined, event: Asked, need: number, free: number, first: boolean) {
    const known = await records;
    const [now, down] = [this.#now(), downOf(this.#slots.holders)];
    const me = this.#place.me(this.#me, this.#o.view.vm.name, event, now, need);
    return this.#place.place(known ?? (await this.#entries.read(this.#k, me, now, down, first)), me, now, free, first, down);
  }

  /** readMembers reads the group's records for the forecast (forecast-turn.ts says when). */
  async #readMembers(): Promise<MemberRecord[]> {
    const records = await this.#members.list();
    // a member that waits learns its place again (it moves up as the others are served)
    const waiting = this.#place.waiting(this.#mine());
    if (waiting !== undefined) await this.#placeOf(records, waiting, 1, 0, false);
    // a member past its bound is said once, at the heartbeat that reads it, whether or not anything is held
    this.#members.counted(records, this.#slots.last, this.#me);
    return records;
  }

  /** atLimit: how far past the budget's limit this member's earliest maintenance stands in the queue (0: the first at it), or null (queue-entries.ts). */
  async #atLimit(): Promise<number | null> {
    const [event, now] = [earliestScheduled(this.#mine()), this.#now()];
    const me = event && this.#place.me(this.#me, this.#o.view.vm.name, event, now);
    return me === undefined ? null : this.#entries.atLimit(this.#k, me, now, downOf(this.#slots.holders));
  }

  /** writeMember writes this member's record (at every heartbeat, and when what it says changes), and its entry in the queue; true when it wrote the record. */
  async #writeMember(force: boolean, mine?: readonly ScheduledEvent[]): Promise<boolean> {
    const vm = this.#o.view.vm;
    if (!vm.nameKnown) return false;
    const record = memberRecordOf({
      ...{ config: this.#o.config, vm, mine: mine ?? this.#mine(), heldFor: this.#slots.heldFor, held: this.#place.approvals },
      ...{ slot: this.#slots.held?.name ?? null, health: this.#o.health?.state, calendar: this.#o.calendar, notes: this.#o.notes },
      wave: () => this.#o.forecast?.word,
    });
    // the entry first: a member whose record says its maintenance stands in the queue already
    await this.#entries.sync(wantedEntry(record), this.#now(), force);
    return this.#record.write(record, this.#now(), force);
  }
}
