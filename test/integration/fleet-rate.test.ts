/**
 * The group's rate and a percentage budget in whole bridges, each with its own IMDS simulator,
 * over the budget's real stores (Azurite for Blob Storage, the Kubernetes API stand-in for
 * Leases). What is asserted is what the group recorded: the stamps of the early approvals in the
 * slot records, the approvals each bridge emitted, and the StartRequests each simulator received.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fleetStoresPerFile, STORE_KINDS, type StoreKind } from '../../testkit/fleet-stores.ts';
import { startBridge, stopAll } from '../../testkit/harness.ts';
import { laterReads, waitFor } from '../helpers.ts';
import { FleetConfig } from '../../src/fleet/budget/config.ts';
import { readGroup } from '../../src/fleet/budget/group.ts';
import { groupText } from '../../src/fleet/budget/group-text.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import { asSlot, SLOT_PREFIX } from '../../src/fleet/budget/records.ts';

const stores = fleetStoresPerFile();
afterEach(() => stopAll());

const policy = { approval: { rules: [{ match: {}, action: 'approve' }] } };

function member(kind: StoreKind, group: string, i: number, fleet: Record<string, unknown>) {
  return startBridge({
    sim: { vmName: `m${i}`, peers: [], tickMs: 10 },
    sinks: (dir) => [{ name: 'audit', type: 'file', path: join(dir, 'events.jsonl') }],
    config: { ...policy, fleet: { group, store: stores().config(kind), retryMs: 200, heartbeatSeconds: 5, ...fleet } },
  });
}

/** stampsOf: the early approvals the group's slot records keep (rate.ts), by EventId. */
async function stampsIn(kind: StoreKind, group: string): Promise<Map<string, number>> {
  const config = FleetConfig.parse({ group, store: stores().config(kind) });
  const store = await openFleetStore(config.store, group, 5000);
  try {
    const out = new Map<string, number>();
    for (const r of await store.list(SLOT_PREFIX)) for (const s of asSlot(r.value).approvals ?? []) out.set(s.eventId, Date.parse(s.at));
    return out;
  } finally {
    await store.close();
  }
}

describe.each(STORE_KINDS)('the rate over the %s store', (kind) => {
  it('a rate of 1 per 15 s spaces three approvals by at least 15 s, in a group whose budget would allow them at once', async () => {
    const group = `rate-${kind}`;
    const fleet = { maxUnavailable: 3, rate: { approvals: 1, perSeconds: 15 } };
    const hs = await Promise.all([0, 1, 2].map((i) => member(kind, group, i, fleet)));
    // every maintenance ready at once, and long: none ends and gives its slot back within the test
    const events = hs.map((h) => h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 600_000, DurationInSeconds: 60 }));
    // while the others wait, their records say the rate holds them, and until when (fleet status shows it)
    const config = FleetConfig.parse({ group, maxUnavailable: 3, store: stores().config(kind) });
    const byRate = await waitFor(
      async () => (await readGroup(config)).members.flatMap((m) => m.events.flatMap((e) => (e.held?.next ? [e.held] : [])))[0],
      "a record that says the group's rate holds it",
      20_000,
      100,
    );
    await waitFor(() => hs.every((h) => h.sim.startRequests.length === 1), 'every member approved', 80_000, 100);
    // the approved CloudEvent reaches the sink after the StartRequests: waited for, not raced
    await waitFor(() => hs.every((h) => h.events().some((e) => e.type.endsWith('.approved'))), 'every approval delivered', 20_000, 100);
    // the times the group recorded for its approvals, one per maintenance, none lost
    const stamps = await stampsIn(kind, group);
    const times = events.map((e) => stamps.get(e.eventId)!);
    for (const t of times) expect(t).toEqual(expect.any(Number));
    const sorted = [...times].sort((a, b) => a - b);
    for (let i = 1; i < sorted.length; i++) expect(sorted[i]! - sorted[i - 1]!).toBeGreaterThanOrEqual(15_000);
    // the record of one held said when the next might come: 15 s after an approval the group recorded
    expect(times.map((t) => t + 15_000)).toContain(Date.parse(byRate.next!));
    // each approval was given at or after the time recorded for it, and emitted once
    for (const [i, h] of hs.entries()) {
      const approved = h.events().filter((e) => e.type.endsWith('.approved'));
      expect(approved).toHaveLength(1);
      expect(Date.parse(String((approved[0]!.data as { approval: { at: string } }).approval.at))).toBeGreaterThanOrEqual(times[i]!);
      expect(h.sim.startRequests[0]!.at).toBeGreaterThanOrEqual(times[i]!);
    }
    // the budget was not what spaced them: all three hold their slots at once now
    expect((await readGroup(config)).slots).toHaveLength(3);
    // the held ones were told the rate, and when the next may come
    const held = hs.flatMap((h) => h.lines.filter((l) => String(l.msg).startsWith('approval held:')));
    expect(held.length).toBeGreaterThan(0);
    expect(held).toContainEqual(
      expect.objectContaining({
        code: 'HELD',
        msg: expect.stringMatching(
          /allows 1 early approval in any 15 s, and gave 1 within the last 15 s \(the last at .+\); the next may come at /,
        ),
      }),
    );
  }, 120_000);
});

describe.each(STORE_KINDS)('a percentage over the %s store', (kind) => {
  it('"30%" of 5 members approves 2 at once (rounded up), and fleet status says how it was counted', async () => {
    const group = `pct30-${kind}`;
    const hs = await Promise.all([0, 1, 2, 3, 4].map((i) => member(kind, group, i, { maxUnavailable: '30%' })));
    const config = FleetConfig.parse({ group, maxUnavailable: '30%', store: stores().config(kind) });
    // every member has written its record: the percentage is of five
    await waitFor(async () => (await readGroup(config)).members.length === 5, 'five member records', 30_000, 100);
    for (const h of hs) h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 600_000, DurationInSeconds: 60 });
    await waitFor(() => hs.filter((h) => h.sim.startRequests.length === 1).length === 2, 'two approved', 60_000, 100);
    // the three others are held by a budget of two, and stay held through ten more reads of each
    const heldOf = (h: (typeof hs)[number]) => h.lines.filter((l) => String(l.msg).startsWith('approval held:'));
    const waiting = hs.filter((h) => h.sim.startRequests.length === 0);
    expect(waiting).toHaveLength(3);
    await Promise.all(waiting.map((h) => laterReads(h.sim, 10, 30_000)));
    for (const h of waiting)
      expect(heldOf(h).at(-1)).toMatchObject({ msg: expect.stringContaining('allows 2 members in maintenance at once') });
    expect(hs.reduce((n, h) => n + h.sim.startRequests.length, 0)).toBe(2);
    const g = await readGroup(config);
    expect(g).toMatchObject({ maxUnavailable: 2, counted: '30 % of 5 members = 2' });
    expect(groupText(g, (h, rows) => [h, ...rows].map((r) => r.join(' | ')).join('\n'))).toContain(
      '2 of 2 slots held (30 % of 5 members = 2)',
    );
  }, 120_000);
});
