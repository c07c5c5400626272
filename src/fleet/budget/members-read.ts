/**
 * GroupMembers: the group's member records as one member reads them. Each record is parsed by
 * its schema (one of another shape named once); a percentage comes to a number of slots among the
 * members with a fresh record; the members not healthy that count against the group now are
 * found (the ones past their bound said once); and the records of members gone for good are
 * forgotten now and then as the member heartbeats.
 */
import type { Logger } from 'pino';
import { slotsFor, type BudgetConfig } from './config.ts';
import { Pruner } from './forget.ts';
import { membersOf, type RecordWarnings } from './parse.ts';
import { asSlot, MEMBER_PREFIX, staleAt, type MemberRecord } from './records.ts';
import type { FleetStore, Versioned } from './stores/port.ts';
import { boundsOf, CountedMembers, type Unhealthy } from './unavailable.ts';
import { BudgetFigures } from './figures.ts';
import type { GroupFigures } from '../../observability/fleet-metrics.ts';

export interface GroupMembersOptions {
  readonly config: BudgetConfig;
  readonly store: FleetStore;
  readonly logger: Logger;
  readonly warnings: RecordWarnings;
  /** Whether this member checks its health (else the members' health is not counted). */
  readonly checksHealth: boolean;
  readonly now: () => number;
  /** The store answered a call. */
  readonly answered: () => void;
  /** Told the budget's numbers (allowed disruptions, the members down by cause) whenever they change. */
  readonly figures?: ((figures: GroupFigures) => void) | undefined;
}

export class GroupMembers {
  readonly #o: GroupMembersOptions;
  readonly #counted: CountedMembers;
  readonly #pruner: Pruner;
  #k: number;
  /** The budget's numbers, as this member last read its group. */
  readonly figures: BudgetFigures;

  constructor(o: GroupMembersOptions) {
    this.#o = o;
    const { config, logger, store } = o;
    this.#counted = new CountedMembers(logger, config.group, boundsOf(config));
    this.#pruner = new Pruner({ store, logger, group: config.group, forgetAfterSeconds: config.forgetAfterSeconds });
    this.#k = slotsFor(config.maxUnavailable, 1);
    const { checksHealth, now, figures: say } = o;
    this.figures = new BudgetFigures({ k: () => this.#k, now, checksHealth, heartbeatSeconds: config.heartbeatSeconds, say });
  }

  /** k: how many members may be unavailable at once: maxUnavailable, or its percentage of the live members as last read. */
  get k(): number {
    return this.#k;
  }

  /** list reads the members' records (and, with a percentage, how many slots the group has now). */
  async list(): Promise<MemberRecord[]> {
    const members = await this.#o.store.list(MEMBER_PREFIX);
    this.#o.answered();
    this.#o.warnings.check(members);
    const records = membersOf(members);
    const now = this.#o.now();
    this.#k = slotsFor(this.#o.config.maxUnavailable, Math.max(1, records.filter((m) => !staleAt(m, now)).length));
    return records;
  }

  /**
   * counted: the other members not healthy that count against the group now (none when this
   * member does not check its health); one past its bound is said once and left out.
   */
  counted(records: readonly MemberRecord[], slots: readonly Versioned[], me: string): Unhealthy[] {
    if (!this.#o.checksHealth) return [];
    const counted = this.#counted.of(
      records,
      slots.map((r) => asSlot(r.value)),
      me,
      this.#o.now(),
    );
    this.figures.counted(counted);
    return counted;
  }

  /** prune forgets members gone for good, when it is time to look (`slots`: the group's slot records, just read). */
  prune(slots: readonly Versioned[], me: string): Promise<void> {
    return this.#pruner.prune(slots, me, this.#o.now());
  }
}
