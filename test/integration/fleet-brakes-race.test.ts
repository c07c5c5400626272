/**
 * A pause against an approval under way, ordered by the test, not by timers (members in this
 * process over the Lease store, served by the project's Kubernetes API stand-in): a pause written
 * between an approving member's read of the slots and its slot write is seen at its read back,
 * and the early slot given back.
 */
import { describe, expect, it } from 'vitest';
import { pauseGroup } from '../../src/fleet/budget/pause-store.ts';
import { asSlot } from '../../src/fleet/budget/records.ts';
import { budgetMember, type Member } from '../../testkit/fleet-members.ts';
import { leaseStorePerFile, outcome, scheduledFor } from '../../testkit/fleet-stores.ts';
import { Gate, gated, slotWrite } from '../../testkit/fleet-gate.ts';
import { waitFor } from '../helpers.ts';

const fleetStores = leaseStorePerFile();
const api = { by: 'test', via: 'api' } as const;

/** live: the VMs of the group's live slot records, sorted. */
async function live(m: Member): Promise<string[]> {
  const now = Date.now();
  return (await m.store.list('slot-'))
    .map((r) => asSlot(r.value))
    .filter((s) => s.member !== null && (s.until === undefined || Date.parse(s.until) > now))
    .map((s) => s.vm!)
    .sort();
}

describe('a pause against an approval under way, over the Lease store', () => {
  it('a pause written between the read of the slots and the slot write is seen at the read back: the slot is given back', async () => {
    const group = 'pause-race-one';
    const gate = new Gate();
    const a = await budgetMember(fleetStores(), 'kubernetes', group, 'vm-a', {}, gated(slotWrite, gate));
    await a.read([]);
    const e = scheduledFor('vm-a');
    await a.read([e]);
    gate.armed = true;
    const asked = outcome(a.budget.take(e, api));
    await waitFor(() => gate.reached, "a's slot write", 10_000, 5);
    // a person pauses the group while a's write is on its way
    await pauseGroup(a.store, { who: 'alice', why: 'release 4.2' }, Date.now());
    gate.open();
    expect(await asked).toBe('HELD');
    expect(await live(a)).toEqual([]);
    expect(a.budget.state().slot).toBeNull();
  });

  it('the same for a maintenance of several members (a slot for each)', async () => {
    const group = 'pause-race-many';
    const gate = new Gate();
    const more = { maxUnavailable: 2 };
    const a = await budgetMember(fleetStores(), 'kubernetes', group, 'vm-a', more, gated(slotWrite, gate));
    const c = await budgetMember(fleetStores(), 'kubernetes', group, 'vm-c', more);
    await Promise.all([a, c].map((m) => m.budget.heartbeat()));
    await Promise.all([a, c].map((m) => m.read([])));
    const e = scheduledFor('vm-a', { resources: ['vm-a', 'vm-c'] });
    await a.read([e]);
    gate.armed = true;
    const asked = outcome(a.budget.take(e, api));
    await waitFor(() => gate.reached, "a's slot write", 10_000, 5);
    await pauseGroup(a.store, { who: 'alice', why: 'release 4.2' }, Date.now());
    gate.open();
    expect(await asked).toBe('HELD');
    expect(await live(a)).toEqual([]);
  });
});
