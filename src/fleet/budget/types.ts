/**
 * What the fleet budget is given (its options, the hooks it calls) and what it says of itself
 * (its state, in /readyz and status).
 */
import type { Logger } from 'pino';
import type { BridgeView } from '../../imds/view.ts';
import type { BudgetConfig } from './config.ts';
import type { FleetStore } from './stores/port.ts';
import type { HealthMonitor } from '../../health/monitor.ts';
import type { EventNotes, Holder, MemberCalendar, MemberRecord, SlotRecord, SlotState } from './records.ts';
import type { WaveWord } from './waves.ts';
import type { GroupFigures } from '../../observability/fleet-metrics.ts';

export interface BudgetHooks {
  /** An approval was held (via: policy, hooks, api, link, slack, cli). */
  onHeld?(via: string): void;
  /** A store operation failed. */
  onStoreError?(operation: string): void;
  /** The group's live slots as last read: held by this member, and by the others. */
  onSlots?(self: number, others: number): void;
  /** The budget's numbers (allowed disruptions, the members down by cause), as this member last read its group, whenever they change. */
  onFigures?(figures: GroupFigures): void;
  /** Whether the group is paused, when that changes (the pause calls it). */
  onPaused?(paused: boolean): void;
  /** The members' records, as read at a heartbeat and when this member learns of a new maintenance, and the slots as last read. */
  onMembers?(members: readonly MemberRecord[], slots: readonly SlotRecord[]): void;
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
  readonly calendar?: () => MemberCalendar;
  /** Who approved each event and where its preparations stand, for the member record. */
  readonly notes?: EventNotes;
  /** The last word this member said as the speaker of a collision wave, for its record. */
  readonly wave?: () => WaveWord | undefined;
  /** When this member, the speaker of a collision wave seen and not said yet, says it: the group is read again then. */
  readonly speakAt?: () => number | null;
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
}
