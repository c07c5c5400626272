/**
 * At the head of its group's queue over Leases, a member watches the slots: a slot given back wakes
 * it, and it asks at once, with no IMDS read to wait for. Two whole bridges over the Kubernetes API
 * stand-in (no API server runs here; written from the API reference, testkit/kube-watch.ts for
 * its watches), each with its own IMDS simulator. The waiting member's IMDS refuses every read of
 * the document once it stands at the head: what it does after that comes from the watch alone.
 */
import { afterEach, expect, it } from 'vitest';
import { leaseStorePerFile } from '../../testkit/fleet-stores.ts';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { waitFor } from '../helpers.ts';

const leases = leaseStorePerFile();
afterEach(() => stopAll());

/** member: a bridge of group `group` (one slot) whose policy approves every event; the head of the queue looks at the slots every 300 s unless woken. */
function member(vm: string, group: string): Promise<Harness> {
  return startBridge({
    sim: { vmName: vm, peers: [], tickMs: 10 },
    config: {
      fleet: { group, maxUnavailable: 1, store: leases().config('kubernetes'), retryMs: 300_000, heartbeatSeconds: 30 },
      approval: { rules: [{ match: {}, action: 'approve' }] },
    },
  });
}

/** The reads of the Scheduled Events document IMDS answered (the document, or 304: unchanged since the ETag the bridge holds). */
const goodReads = (h: Harness): number =>
  h.sim.requests.filter((r) => r.method === 'GET' && r.path.includes('scheduledevents') && (r.status === 200 || r.status === 304)).length;
const REBOOT = { EventType: 'Reboot', noticeMs: 600_000, startedMs: 600_000, DurationInSeconds: 5 } as const;

it('a slot given back reaches the member at the head of the queue through the watch, with no IMDS read since', async () => {
  const watches = () => leases().kube.leases.watches.open;
  const a = await member('a', 'watch');
  const ea = a.sim.addEvent(REBOOT);
  await waitFor(() => a.sim.startRequests.length === 1, "a's approval", 30_000, 50);
  expect(watches()).toBe(0);
  const b = await member('b', 'watch');
  const eb = b.sim.addEvent(REBOOT);
  await waitFor(() => b.lines.some((l) => String(l.msg).startsWith('approval held')), 'b held by the budget', 30_000, 50);
  // b stands at the head of the queue: it watches the slots
  await waitFor(() => watches() === 1, "b's watch of the slots", 30_000, 50);
  // a few good reads more (a first ask waits out the read that first listed its maintenance), then IMDS refuses b's reads
  const read = goodReads(b);
  await waitFor(() => goodReads(b) >= read + 3, 'three more reads by b', 30_000, 50);
  b.sim.injectFault({ kind: 'status', status: 500, count: 1_000_000, target: 'scheduledevents' });
  await waitFor(() => b.sim.requests.some((r) => r.fault === 'status'), "b's first refused read", 30_000, 50);
  const frozen = goodReads(b);
  expect(b.sim.startRequests).toHaveLength(0);
  // a's maintenance is over: a gives its slot back at its next read
  a.sim.removeEvent(ea.eventId);
  await waitFor(() => b.sim.startRequests.length === 1, "b's approval", 30_000, 50);
  expect(b.sim.startRequests[0]!.eventIds).toEqual([eb.eventId]);
  expect(goodReads(b)).toBe(frozen);
  expect(a.lines.some((l) => l.msg === 'fleet budget: slot given back')).toBe(true);
  // b waits no more: its watch is closed
  await waitFor(() => watches() === 0, "b's watch closed", 30_000, 50);
}, 120_000);
