/**
 * FleetMember: a member of the fleet view without a budget (`fleet: {group, store}` with no
 * `maxUnavailable`). It writes the member's record to the group's store as a budgeted member does
 * (at every heartbeat, and at once when what it says changes), holds nothing and reads nothing
 * back: one write per heartbeat, and one per change.
 */
import type { Logger } from 'pino';
import type { BridgeView } from '../../imds/view.ts';
import type { EventsDocument } from '../../imds/wire.ts';
import { Latest } from '../../lib/latest.ts';
import { beating } from '../../lib/time.ts';
import type { HealthMonitor } from '../../health/monitor.ts';
import type { FleetConfig } from './config.ts';
import { StoreHealth } from './health.ts';
import { MemberRecordWriter, memberRecordOf, mineOf, type MemberCalendarOf } from './member.ts';
import type { EventNotes } from './records.ts';
import type { FleetStore } from './stores/port.ts';
import type { BudgetState } from './types.ts';
import { Serial } from '../../lib/serial.ts';

export interface FleetMemberOptions {
  readonly config: FleetConfig;
  readonly store: FleetStore;
  readonly view: BridgeView;
  readonly logger: Logger;
  readonly health?: HealthMonitor | undefined;
  readonly calendar?: MemberCalendarOf | undefined;
  readonly notes?: EventNotes | undefined;
  readonly onStoreError?: (operation: string) => void;
  readonly now?: () => number;
}

export class FleetMember {
  readonly #o: FleetMemberOptions;
  readonly #writer: MemberRecordWriter;
  readonly #store: StoreHealth;
  readonly #now: () => number;
  readonly #one = new Serial();
  readonly #following = new Latest<EventsDocument>((d) => this.#write(false, d));

  constructor(o: FleetMemberOptions) {
    this.#o = o;
    this.#now = o.now ?? Date.now;
    this.#writer = new MemberRecordWriter(o.store, o.calendar);
    this.#store = new StoreHealth(o.logger, o.store.where, o.onStoreError);
  }

  /** onRead writes the record when what it says changed (at most once a second); never throws. */
  onRead(document: EventsDocument): Promise<void> {
    return this.#following.run(document);
  }

  /** changed writes the record at once (health changed, an approval or a preparation was recorded). */
  changed(): Promise<void> {
    return this.#write(false, this.#o.view.document);
  }

  run(signal: AbortSignal): Promise<void> {
    return beating(this.#o.config.heartbeatSeconds, signal, () => this.#write(true, this.#o.view.document));
  }

  state(): BudgetState {
    return {
      group: this.#o.config.group,
      maxUnavailable: null,
      store: this.#o.store.where,
      storeReachable: this.#store.reachable,
      lastError: this.#store.lastError,
      slot: null,
      holders: [],
      held: [],
      place: null,
      pause: null,
    };
  }

  #write(force: boolean, document: EventsDocument | null): Promise<void> {
    const work = async () => {
      const vm = this.#o.view.vm;
      if (!vm.nameKnown) return;
      // a drill is never in the fleet's view
      const mine = mineOf(document, vm);
      const { config, calendar, notes } = this.#o;
      const record = memberRecordOf({ config, vm, mine, health: this.#o.health?.state, calendar, notes });
      await this.#writer.write(record, this.#now(), force);
      this.#store.answered();
    };
    return this.#one.run(work).catch((err: unknown) => this.#store.failed('write the member record', err));
  }
}
