/**
 * A member whose IMDS stops answering (its reads fail for hours; the document it last read stays
 * its view) while it holds a slot: its heartbeats must not renew the slot from that old document,
 * or the slot's recorded end moves with the clock for as long as IMDS is unreachable, the group
 * stalls behind it, and the breaker never counts it ("one whose bridge never reads again renews
 * nothing, and its slot passes its recorded end still in its name", docs/fleet-budgets.md). Since
 * a StartRequests that got no answer keeps its slot (67eea51), an unreachable IMDS leads straight
 * here. Over the Lease store, on a clock the test sets.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { FleetBudget } from '../../src/fleet/budget/budget.ts';
import { asBudget, FleetConfig } from '../../src/fleet/budget/config.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import type { BridgeView } from '../../src/imds/view.ts';
import { leaseStorePerFile, memberVm, outcome, scheduledFor } from '../../testkit/fleet-stores.ts';

const fleetStores = leaseStorePerFile();
const T0 = Date.parse('2030-01-01T00:00:00Z');

describe('a holder whose IMDS stops answering', () => {
  it('renews nothing at its heartbeats from the document it read last: its slot lapses at its recorded end, and another member takes it', async () => {
    const group = 'stale-document';
    const config = asBudget(
      FleetConfig.parse({ group, maxUnavailable: 1, store: fleetStores().config('kubernetes'), marginSeconds: 60, heartbeatSeconds: 20 }),
    );
    const clock = { now: T0 };
    const now = () => clock.now;
    const logger = pino({ level: 'silent' });
    const event = scheduledFor('vm-a', { notBefore: new Date(T0 + 60_000).toISOString(), durationInSeconds: 600 });
    /** memberOf: a member of the group whose view lists `e` (the document it read last). */
    const memberOf = async (vm: string, e: ReturnType<typeof scheduledFor>) => {
      const view: BridgeView = { vm: memberVm(vm), document: { incarnation: 1, events: [e] }, goodReads: 1, approvalServerUrl: null };
      const store = await openFleetStore(config.store, group);
      return { view, budget: new FleetBudget({ config, store, view, logger, givenBack: () => true, now }) };
    };
    const { view: viewA, budget: a } = await memberOf('vm-a', event);
    const other = scheduledFor('vm-b', { notBefore: new Date(T0 + 600_000).toISOString() });
    const { budget: b } = await memberOf('vm-b', other);
    await a.onRead(viewA.document!);
    expect(await outcome(a.take(event, { by: 'ops', via: 'api' }))).toBe('granted');
    // its recorded end: NotBefore + 10 min + the margin; IMDS answers no more from here (goodReads stays, the view keeps the old document)
    const end = T0 + 60_000 + 600_000 + 60_000;
    // two hours of heartbeats (every 20 s), bounded
    for (let i = 0; i < 360; i++) {
      clock.now += 20_000;
      await a.heartbeat();
    }
    expect(clock.now).toBeGreaterThan(end + 3_600_000);
    // its slot, if it still holds one, ends where its last read put it (not two hours on)
    const held = a.state().slot;
    expect(held === null ? 0 : Date.parse(held.until ?? '')).not.toBeGreaterThan(end + 20_000);
    expect(await outcome(b.take(other, { by: 'ops', via: 'api' }))).toBe('granted');
  }, 60_000);
});
