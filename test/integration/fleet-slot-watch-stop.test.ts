/**
 * The watch of the slots (src/fleet/budget/slot-watch.ts) over the Lease store (the Kubernetes API
 * stand-in) does not outlive the budget's run.
 */
import { expect, it } from 'vitest';
import { budgetMember } from '../../testkit/fleet-members.ts';
import { leaseStorePerFile, outcome, scheduledFor } from '../../testkit/fleet-stores.ts';
import { waitFor } from '../helpers.ts';

const leases = leaseStorePerFile();
const policy = { by: 'policy', via: 'policy' } as const;

it('an approval under way as the bridge stops, held at the head of the queue after the run ended: no watch is opened that nothing closes', async () => {
  const watches = () => leases().kube.leases.watches.open;
  const group = 'stop-watch';
  const [a, b] = [await budgetMember(leases(), 'kubernetes', group, 'a'), await budgetMember(leases(), 'kubernetes', group, 'b')];
  const [ea, eb] = [scheduledFor('a'), scheduledFor('b')];
  await a.read([ea]);
  await a.read([ea]);
  expect(await outcome(a.budget.take(ea, policy))).toBe('granted');
  await b.read([eb]);
  await b.read([eb]);
  // b's bridge runs; it stops while b's automatic approval is under way (behind the run's first heartbeat)
  const stop = new AbortController();
  const running = b.budget.run(stop.signal);
  const asked = outcome(b.budget.take(eb, policy));
  stop.abort();
  await running;
  // the approval ends held, b at the head of the queue: after the run that closes its watch
  expect(await asked).toBe('HELD');
  // nothing that runs after this closes a watch: none may be open
  await waitFor(() => watches() > 0, 'a watch opened', 3000, 20).catch(() => undefined);
  expect(watches()).toBe(0);
}, 30_000);
