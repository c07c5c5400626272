/**
 * BudgetFigures: the budget's numbers as this member last read its group, for the metrics
 * (sebridge_fleet_allowed_disruptions, sebridge_fleet_unavailable), counted as a Kubernetes
 * disruption budget counts its status: the slots the group allows now, less the members down
 * (a live slot or overflow record each), less the members counted unavailable without one (not
 * healthy, or their record stale), never below 0. The slots are read at every heartbeat; the
 * members' health is counted only when this member reads their records (with health checks: at
 * every heartbeat while it has a maintenance ahead, and when it asks for a slot), so no request
 * is added for the figures. A count older than three heartbeats is not said (its causes left
 * out, allowed disruptions counting the slots alone) rather than said as if it were now.
 */
import type { GroupFigures } from '../../observability/fleet-metrics.ts';
import type { Unhealthy } from './unavailable.ts';

export interface BudgetFiguresOptions {
  /** How many members may be unavailable at once now. */
  readonly k: () => number;
  readonly now: () => number;
  /** Whether this member counts the members' health (else none counts, and the count is known: 0). */
  readonly checksHealth: boolean;
  readonly heartbeatSeconds: number;
  /** Told the figures whenever they change. */
  readonly say?: ((figures: GroupFigures) => void) | undefined;
}

export class BudgetFigures {
  readonly #o: BudgetFiguresOptions;
  /** The live slot records (holders and overflow records) at the last read of the slots. */
  #down: number | null = null;
  #counted: { readonly at: number; readonly unhealthy: number; readonly stale: number } | null = null;

  constructor(o: BudgetFiguresOptions) {
    this.#o = o;
  }

  /** slots: the group's live slot records, as just read. */
  slots(down: number): void {
    this.#down = down;
    this.#say();
  }

  /** counted: the members that count as unavailable without a slot, as just counted from their records. */
  counted(members: readonly Unhealthy[]): void {
    const stale = members.filter((m) => m.stale === true).length;
    this.#counted = { at: this.#o.now(), unhealthy: members.length - stale, stale };
    this.#say();
  }

  /** figures: the numbers now (null before the slots were read). */
  figures(): GroupFigures | null {
    const down = this.#down;
    if (down === null) return null;
    const c = this.#counted;
    const known = !this.#o.checksHealth
      ? { unhealthy: 0, stale: 0 }
      : c !== null && this.#o.now() - c.at <= 3 * this.#o.heartbeatSeconds * 1000
        ? { unhealthy: c.unhealthy, stale: c.stale }
        : null;
    const allowed = this.#o.k() - down - (known === null ? 0 : known.unhealthy + known.stale);
    return { allowed: Math.max(0, allowed), unavailable: { slot: down, ...known } };
  }

  #say(): void {
    const f = this.figures();
    if (f !== null) this.#o.say?.(f);
  }
}
