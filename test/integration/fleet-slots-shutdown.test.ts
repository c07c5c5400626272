/**
 * A slot and a StartRequests whose answer never came: a bridge that stops (its signal aborted)
 * after IMDS took its StartRequests but before the answer reached it cannot tell that IMDS
 * refused it (it did not), and keeps the slot (its maintenance may be going on). Over the budget's real stores;
 * what is measured is the slot record in the store, once the approval attempt is over. A refusal
 * IMDS answered gives the slot back, as before.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fleetStoresPerFile, STORE_KINDS } from '../../testkit/fleet-stores.ts';
import { startBridge, stopAll } from '../../testkit/harness.ts';
import { waitFor } from '../helpers.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import { asSlot } from '../../src/fleet/budget/records.ts';

const stores = fleetStoresPerFile();
afterEach(() => stopAll());

/** member: a bridge of one group whose policy approves every event, over the store of `kind`. */
function member(kind: (typeof STORE_KINDS)[number], group: string) {
  return startBridge({
    sim: { vmName: 'm0', peers: [], tickMs: 10 },
    sinks: (dir) => [{ name: 'audit', type: 'file', path: join(dir, 'events.jsonl') }],
    config: {
      fleet: { group, maxUnavailable: 1, store: stores().config(kind), retryMs: 200, heartbeatSeconds: 5 },
      approval: { rules: [{ match: {}, action: 'approve' }] },
    },
  });
}

describe.each(STORE_KINDS)('a StartRequests cut short over the %s store', (kind) => {
  it('a bridge stopped after IMDS took its StartRequests, before the answer, keeps its slot', async () => {
    const group = `cut-${kind}`;
    const h = await member(kind, group);
    // IMDS takes the StartRequests (the maintenance starts), and the bridge stops before it reads the answer:
    // the abort runs within the simulator's handler, before the answer is written
    let stopping: Promise<void> | undefined;
    const start = h.sim.start.bind(h.sim);
    h.sim.start = (ids: string[]) => {
      const taken = start(ids);
      stopping ??= h.bridge.stop(1000);
      return taken;
    };
    const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 600_000, DurationInSeconds: 5 });
    await waitFor(() => stopping !== undefined, "the StartRequests at IMDS, and the bridge's stop", 30_000, 50);
    await stopping;
    expect(h.sim.startRequests).toHaveLength(1);
    // the approval attempt is over (its slot given back or kept) once it says it failed
    await waitFor(() => h.lines.some((l) => l.msg === 'automatic approval failed; it will be tried again'), 'the attempt over', 15_000, 50);
    const store = await openFleetStore(stores().config(kind) as never, group);
    try {
      const held = (await store.list('slot-')).map((r) => asSlot(r.value)).filter((s) => s.member !== null);
      expect(held.map((s) => [s.vm, s.eventIds])).toEqual([['m0', [e.eventId]]]);
    } finally {
      await store.close();
    }
    expect(h.lines.filter((l) => l.msg === 'fleet budget: slot given back')).toHaveLength(0);
    // said as unanswered, not as refused: the log and the approval's error
    expect(h.lines.filter((l) => l.msg === 'IMDS refused StartRequests')).toHaveLength(0);
    expect(h.lines.some((l) => l.msg === 'no answer to StartRequests')).toBe(true);
    const failed = h.lines.find((l) => l.msg === 'automatic approval failed; it will be tried again');
    expect(failed?.err).toMatch(/^IMDS did not answer StartRequests \(it may have taken it\)/);
  }, 60_000);

  it('a StartRequests IMDS answered with a refusal gives its slot back', async () => {
    const group = `refused-${kind}`;
    const h = await member(kind, group);
    h.sim.injectFault({ kind: 'status', status: 400, target: 'start' });
    const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 600_000, DurationInSeconds: 5 });
    const said = (msg: string) => h.lines.some((l) => l.msg === msg && l.eventId === e.eventId);
    await waitFor(() => said('IMDS refused StartRequests'), 'the refusal', 30_000, 50);
    await waitFor(() => said('automatic approval failed; it will be tried again'), 'the attempt over', 15_000, 50);
    expect(h.lines.some((l) => l.msg === 'fleet budget: slot given back')).toBe(true);
    expect(h.lines.find((l) => l.msg === 'automatic approval failed; it will be tried again')?.err).toMatch(
      /^IMDS did not accept StartRequests/,
    );
  }, 60_000);
});
