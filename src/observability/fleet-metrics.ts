/**
 * The fleet budget's numbers, per group (label `group`), as Karpenter and a Kubernetes
 * PodDisruptionBudget's status say theirs: how many more members may go down now (allowed
 * disruptions), what makes the others unavailable (by cause), the approvals held now (by the
 * brake that holds them), how long approvals waited before they were granted, and whether the
 * group is paused. The hold reasons are named here, once: what decides a hold says its reason
 * with it (ApprovalError's `reason`), and the metrics count it.
 *
 * @see https://kubernetes.io/docs/reference/kubernetes-api/policy-resources/pod-disruption-budget-v1/#PodDisruptionBudgetStatus
 */
import { isDrill } from '../imds/drill-id.ts';
import { Gauge, Histogram, type Registry } from '../lib/prometheus.ts';

/**
 * HOLD_REASONS: what may hold an early approval. budget: no slot free (or not this member's turn
 * in the queue); calendar: a blackout, or outside the windows a rule is bound to; health: members
 * not healthy take the room the slots leave; zone: another zone is in maintenance; pause: the
 * group is paused; breaker: the group paused itself (members did not come back); rate: the
 * group's approvals per period are spent.
 */
export const HOLD_REASONS = ['budget', 'calendar', 'health', 'zone', 'pause', 'breaker', 'rate'] as const;
export type HoldReason = (typeof HOLD_REASONS)[number];

/** UNAVAILABLE_CAUSES: why a member counts as down: it holds a slot (or an overflow record), it is not healthy, or its record went stale. */
export const UNAVAILABLE_CAUSES = ['slot', 'unhealthy', 'stale'] as const;
export type UnavailableCause = (typeof UNAVAILABLE_CAUSES)[number];

/** The budget as one member last read its group: how many more may go down, and the members down now by cause. */
export interface GroupFigures {
  readonly allowed: number;
  /** Members down by cause; a cause left out is not known now (the members' records not read lately). */
  readonly unavailable: Readonly<Partial<Record<UnavailableCause, number>>>;
}

/** Hold times run from seconds (the next IMDS read) to hours (a long queue, a blackout). */
const HOLD_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14_400, 28_800, 86_400];

/** FleetMetrics: the families, registered with every bridge's metrics; `group` binds them to the group a budget serves. */
export class FleetMetrics {
  readonly allowed: Gauge;
  readonly unavailable: Gauge;
  readonly held: Gauge;
  readonly holdSeconds: Histogram;
  readonly paused: Gauge;

  constructor(r: Registry) {
    this.allowed = r.register(
      new Gauge(
        'sebridge_fleet_allowed_disruptions',
        "How many more members of the fleet group may go down for an early approval now, as this member last read the group: the budget's slots less those held and the members counted unavailable without one (never below 0).",
        ['group'],
      ),
    );
    this.unavailable = r.register(
      new Gauge(
        'sebridge_fleet_unavailable',
        'Members of the fleet group counted as down, as this member last read the group, by cause (slot, unhealthy, stale).',
        ['group', 'cause'],
      ),
    );
    this.held = r.register(
      new Gauge(
        'sebridge_fleet_approvals_held',
        "This member's early approvals held now, by reason (budget, calendar, health, zone, pause, breaker, rate).",
        ['group', 'reason'],
      ),
    );
    this.holdSeconds = r.register(
      new Histogram(
        'sebridge_fleet_approval_hold_seconds',
        'How long early approvals of this member were held before they were granted.',
        ['group'],
        HOLD_BUCKETS,
      ),
    );
    this.paused = r.register(
      new Gauge('sebridge_fleet_paused', '1 while the fleet group is paused (no early approval but a forced one), else 0.', ['group']),
    );
  }

  /** group: the series of one group, its held approvals counted from 0 and its pause at 0. */
  group(group: string, now: () => number = Date.now): GroupMetrics {
    return new GroupMetrics(this, group, now);
  }
}

/** GroupMetrics: one group's series, and the approvals held now (since when, and by what). */
export class GroupMetrics {
  readonly #m: FleetMetrics;
  readonly #group: string;
  readonly #now: () => number;
  readonly #held = new Map<string, { since: number; reason: HoldReason }>();

  constructor(m: FleetMetrics, group: string, now: () => number) {
    this.#m = m;
    this.#group = group;
    this.#now = now;
    this.#count();
    this.paused(false);
  }

  /** figures sets allowed disruptions and the members down by cause (a cause not known is left out). */
  figures(f: GroupFigures): void {
    const group = this.#group;
    this.#m.allowed.set({ group }, Math.max(0, f.allowed));
    this.#m.unavailable.reset();
    for (const cause of UNAVAILABLE_CAUSES) {
      const n = f.unavailable[cause];
      if (n !== undefined) this.#m.unavailable.set({ group, cause }, n);
    }
  }

  /** paused sets whether the group is paused: the pause calls it when it begins and ends. */
  paused(paused: boolean): void {
    this.#m.paused.set({ group: this.#group }, paused ? 1 : 0);
  }

  /** held: the early approval of `eventId` is held by `reason` now (held since its first hold; a drill is never counted). */
  held(eventId: string, reason: HoldReason): void {
    if (isDrill(eventId)) return;
    const since = this.#held.get(eventId)?.since ?? this.#now();
    this.#held.set(eventId, { since, reason });
    this.#count();
  }

  /** granted: the approval of `eventId` went through; if it was held, how long it was held is observed. */
  granted(eventId: string): void {
    const h = this.#held.get(eventId);
    if (h === undefined) return;
    this.#held.delete(eventId);
    this.#m.holdSeconds.observe({ group: this.#group }, Math.max(0, this.#now() - h.since) / 1000);
    this.#count();
  }

  /** keep forgets the holds of events no longer Scheduled (started at NotBefore, or gone): nothing was granted. */
  keep(scheduled: ReadonlySet<string>): void {
    let changed = false;
    for (const id of this.#held.keys())
      if (!scheduled.has(id)) {
        this.#held.delete(id);
        changed = true;
      }
    if (changed) this.#count();
  }

  #count(): void {
    const group = this.#group;
    for (const reason of HOLD_REASONS) this.#m.held.set({ group, reason }, 0);
    for (const { reason } of this.#held.values()) this.#m.held.inc({ group, reason });
  }
}
