/**
 * What the fleet budget is given (its options, the hooks it calls) and what it says of itself
 * (its state, in /readyz and status).
 */
import type { Logger } from 'pino';
import type { BridgeView } from '../../imds/view.ts';
import type { BudgetConfig, FleetConfig } from './config.ts';
import type { FleetStore, Versioned } from './stores/port.ts';
import type { VmIdentity } from '../../imds/identity.ts';
import type { RecordWarnings } from './parse.ts';
import type { HealthMonitor } from '../../health/monitor.ts';
import type { EventNotes, Holder, MemberRecord, SlotRecord, SlotState } from './records.ts';
import type { MemberCalendarOf } from './member.ts';
import type { SeenWave, WaveHint, WaveWord } from './waves.ts';
import type { BridgeEvent } from '../../pipeline/cloudevent.ts';
import type { GroupFigures } from '../../observability/fleet-metrics.ts';
import type { Pause, PauseState } from './pause.ts';

export interface BudgetHooks {
  /** An approval was held (via: policy, hooks, api, link, slack, cli). */
  onHeld?(via: string): void;
  /** A store operation failed. */
  onStoreError?(operation: string): void;
  /** The group's live slots as last read: held by this member, and by the others. */
  onSlots?(self: number, others: number): void;
  /** The budget's numbers (allowed disruptions, the members down by cause), as this member last read its group, whenever they change. */
  onFigures?(figures: GroupFigures): void;
  /** Whether the group is paused, as this member last read its slots. */
  onPaused?(paused: boolean): void;
  /** The group was paused by this member's circuit breaker (its write opened it: said once in the group). */
  onBreakerOpened?(pause: Pause): void;
  /** A watch of the slots saw one given back while this member waits at the head of the queue: ask again now (slot-watch.ts). */
  onWake?(): void;
}

/** What the budget asks of the collision forecast (collisions.ts Forecast; forecast-turn.ts says when). */
export interface ForecastPort {
  foretell(members: readonly MemberRecord[], slots: readonly SlotRecord[]): Promise<BridgeEvent | null>;
  readonly word: WaveWord | undefined;
  readonly speakAt: number | null;
  readonly seen: SeenWave | undefined;
  adopt(hint: WaveHint | undefined): void;
  repeat(word: WaveWord): BridgeEvent | null;
  said(id: string): boolean;
}

export interface BudgetOptions {
  readonly config: BudgetConfig;
  readonly store: FleetStore;
  readonly view: BridgeView;
  readonly logger: Logger;
  /** Whether an ended event's preparations were given back (nothing prepared is still out). */
  readonly givenBack: (eventId: string) => boolean;
  readonly hooks?: BudgetHooks;
  readonly now?: () => number;
  /** This member's health checks, when `fleet.health` is configured (their loop runs beside the budget's). */
  readonly health?: HealthMonitor;
  /** What this member's calendar says now, for its record (`fleet.calendar`). */
  readonly calendar?: MemberCalendarOf;
  /** Who approved each event and where its preparations stand, for the member record. */
  readonly notes?: EventNotes;
  /** The collision forecast: when it reads the group, and the word it last said as a wave's speaker, for the record (forecast-turn.ts). */
  readonly forecast?: ForecastPort;
}

/** What /readyz and status say of the budget. */
export interface BudgetState {
  readonly group: string;
  /** null: a member without a budget (`fleet: {group, store}`), written in the fleet view only. */
  readonly maxUnavailable: number | null;
  readonly store: string;
  readonly storeReachable: boolean;
  readonly lastError: string | null;
  /** The slot this member holds, if any. */
  readonly slot: SlotState | null;
  /** The group's holders as last read. */
  readonly holders: readonly Holder[];
  /** This member's early approvals the budget holds (EventIds), and its place in the group's queue when it last read it. */
  readonly held: readonly string[];
  readonly place: number | null;
  /** The pause that holds the group, as the last listing of the slots said it (null: none). */
  readonly pause: PauseState | null;
}

/** What MemberSlots (slots.ts) is given: the group's store and budget, this member, the clock, and what it says. */
export interface MemberSlotsOptions {
  readonly config: FleetConfig;
  readonly store: FleetStore;
  readonly logger: Logger;
  /** This member's key and identity, as they are now. */
  readonly me: () => { readonly key: string; readonly vm: VmIdentity };
  /** How many members may be unavailable at once now (`maxUnavailable`, or its percentage of the live members). */
  readonly k: () => number;
  readonly now: () => number;
  /** The group's live slots at each read: held by this member, and by the others. */
  readonly onSlots?: (self: number, others: number) => void;
  /** Names each slot record of another shape once. */
  readonly warnings?: RecordWarnings;
  /** Looks at each listing of the slots (the circuit breaker): true when it wrote, and the slots are listed again. */
  readonly look?: (slots: readonly Versioned[]) => Promise<boolean>;
}
