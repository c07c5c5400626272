/**
 * The fleet budget's numbers before they reach /metrics: BudgetFigures (allowed disruptions and
 * the members down by cause, as a member last read its group) and GroupMetrics (the approvals
 * held now by reason, and how long each was held once granted), on a clock the test sets, read
 * back from the registry's exposition.
 */
import { describe, expect, it } from 'vitest';
import { BudgetFigures } from '../../src/fleet/budget/figures.ts';
import { FleetMetrics, type GroupFigures } from '../../src/observability/fleet-metrics.ts';
import { Registry } from '../../src/lib/prometheus.ts';

const HEARTBEAT_S = 30;
const sick = (n: number, stale = 0) =>
  Array.from({ length: n + stale }, (_, i) => ({ key: `k${i}`, vm: `vm-${i}`, since: '', why: '', stale: i >= n }));

function figures(k: number, checksHealth = true) {
  const clock = { now: 0 };
  const said: GroupFigures[] = [];
  const f = new BudgetFigures({ k: () => k, now: () => clock.now, checksHealth, heartbeatSeconds: HEARTBEAT_S, say: (x) => said.push(x) });
  return { f, clock, said };
}

describe('BudgetFigures', () => {
  it('says nothing before the slots were read; then the slots less those down and the members counted, never below 0', () => {
    const { f, said } = figures(3);
    f.counted(sick(1));
    expect(said).toEqual([]);
    f.slots(1);
    expect(said.at(-1)).toEqual({ allowed: 1, unavailable: { slot: 1, unhealthy: 1, stale: 0 } });
    f.counted(sick(1, 2));
    expect(said.at(-1)).toEqual({ allowed: 0, unavailable: { slot: 1, unhealthy: 1, stale: 2 } });
    // forced past the budget: more down than allowed, and allowed stays at 0
    f.slots(4);
    expect(said.at(-1)).toEqual({ allowed: 0, unavailable: { slot: 4, unhealthy: 1, stale: 2 } });
  });

  it('leaves out a count of the members older than three heartbeats, and counts the slots alone then', () => {
    const { f, clock, said } = figures(2);
    f.slots(0);
    // not counted yet: the causes of health are not known
    expect(said.at(-1)).toEqual({ allowed: 2, unavailable: { slot: 0 } });
    f.counted(sick(1));
    clock.now = 3 * HEARTBEAT_S * 1000;
    f.slots(0);
    expect(said.at(-1)).toEqual({ allowed: 1, unavailable: { slot: 0, unhealthy: 1, stale: 0 } });
    clock.now += 1;
    f.slots(0);
    expect(said.at(-1)).toEqual({ allowed: 2, unavailable: { slot: 0 } });
  });

  it('without health checks, nobody counts for health: known, and 0', () => {
    const { f, said } = figures(1, false);
    f.slots(0);
    expect(said.at(-1)).toEqual({ allowed: 1, unavailable: { slot: 0, unhealthy: 0, stale: 0 } });
  });
});

/** sample: the value of one series in the exposition (undefined when absent). */
async function sample(r: Registry, series: string): Promise<number | undefined> {
  const line = (await r.metrics()).split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('GroupMetrics', () => {
  const setUp = () => {
    const r = new Registry();
    const clock = { now: 1_000_000 };
    const g = new FleetMetrics(r).group('kafka', () => clock.now);
    return { r, clock, g };
  };
  const heldBy = (reason: string) => `sebridge_fleet_approvals_held{group="kafka",reason="${reason}"}`;

  it('counts the approvals held now by their latest reason, and observes how long each was held, from its first hold, once granted', async () => {
    const { r, clock, g } = setUp();
    expect(await sample(r, heldBy('rate'))).toBe(0);
    expect(await sample(r, 'sebridge_fleet_paused{group="kafka"}')).toBe(0);
    g.held('E1', 'calendar');
    g.held('E2', 'budget');
    expect([await sample(r, heldBy('calendar')), await sample(r, heldBy('budget'))]).toEqual([1, 1]);
    clock.now += 60_000;
    // the blackout is over, and the budget holds it now: one approval, counted once
    g.held('E1', 'budget');
    expect([await sample(r, heldBy('calendar')), await sample(r, heldBy('budget'))]).toEqual([0, 2]);
    clock.now += 30_000;
    g.granted('E1');
    expect(await sample(r, heldBy('budget'))).toBe(1);
    expect(await sample(r, 'sebridge_fleet_approval_hold_seconds_count{group="kafka"}')).toBe(1);
    expect(await sample(r, 'sebridge_fleet_approval_hold_seconds_sum{group="kafka"}')).toBe(90);
    expect(await sample(r, 'sebridge_fleet_approval_hold_seconds_bucket{group="kafka",le="60"}')).toBe(0);
    expect(await sample(r, 'sebridge_fleet_approval_hold_seconds_bucket{group="kafka",le="120"}')).toBe(1);
    // granted without a hold: nothing observed
    g.granted('E3');
    expect(await sample(r, 'sebridge_fleet_approval_hold_seconds_count{group="kafka"}')).toBe(1);
  });

  it('forgets a held approval whose event is no longer Scheduled, observing nothing; never counts a drill; says the pause', async () => {
    const { r, g } = setUp();
    g.held('E1', 'zone');
    g.held('drill-0001', 'budget');
    expect([await sample(r, heldBy('zone')), await sample(r, heldBy('budget'))]).toEqual([1, 0]);
    g.keep(new Set(['E9']));
    expect(await sample(r, heldBy('zone'))).toBe(0);
    g.granted('E1');
    expect(await sample(r, 'sebridge_fleet_approval_hold_seconds_count{group="kafka"}')).toBeUndefined();
    g.paused(true);
    expect(await sample(r, 'sebridge_fleet_paused{group="kafka"}')).toBe(1);
    g.figures({ allowed: -1, unavailable: { slot: 2 } });
    expect(await sample(r, 'sebridge_fleet_allowed_disruptions{group="kafka"}')).toBe(0);
    expect(await sample(r, 'sebridge_fleet_unavailable{group="kafka",cause="slot"}')).toBe(2);
    expect(await sample(r, 'sebridge_fleet_unavailable{group="kafka",cause="unhealthy"}')).toBeUndefined();
  });
});
