/**
 * Two members racing for the last slot, written by ordering, not by timers: the fleet budget's
 * members run in this process over the Lease store (coordination.k8s.io/v1 Leases, written
 * conditionally at their resourceVersion, served by the project's Kubernetes API stand-in: no API
 * server can run here; written from the API reference) through the project's Kubernetes client,
 * and a member's store is wrapped so that one of its calls waits at a gate the test opens once
 * the other member has done its part. Two guards keep an early approval from taking the group
 * past its budget when another member goes down meanwhile (its event Started at NotBefore):
 *  - the read back: after its slot writes, the approving member reads the slots again and gives
 *    its writes back when the group is past its budget (slots.ts, many.ts);
 *  - the early hold: a member whose event Started says so in the store (its overflow record)
 *    before it reads anything, so an approval that reads after that moment counts it (slots.ts).
 * Each test below fails when one of them alone is taken away.
 */
import { describe, expect, it } from 'vitest';
import type { ScheduledEvent } from '../../src/imds/wire.ts';
import { budgetMember, live } from '../../testkit/fleet-members.ts';
import { leaseStorePerFile, outcome, scheduledFor } from '../../testkit/fleet-stores.ts';
import { Gate, gated, slotRead, slotWrite } from '../../testkit/fleet-gate.ts';
import { waitFor } from '../helpers.ts';

const fleetStores = leaseStorePerFile();
const api = { by: 'test', via: 'api' } as const;

const started = (vm: string): ScheduledEvent => ({ ...scheduledFor(vm), eventStatus: 'Started', notBefore: null });

/**
 * severalOf: vm-a (its store gated where `at` says), vm-b and vm-c of `group`, two slots, each
 * read once; vm-a's take of a maintenance naming vm-a and vm-c is under way and waits at the gate.
 */
async function severalOf(group: string, at: Parameters<typeof gated>[0]) {
  const more = { maxUnavailable: 2 };
  const gate = new Gate();
  const a = await budgetMember(fleetStores(), 'kubernetes', group, 'vm-a', more, gated(at, gate));
  const [b, c] = await Promise.all(['vm-b', 'vm-c'].map((vm) => budgetMember(fleetStores(), 'kubernetes', group, vm, more)));
  await Promise.all([a, b!, c!].map((m) => m.budget.heartbeat()));
  await Promise.all([a, b!, c!].map((m) => m.read([])));
  const e = scheduledFor('vm-a', { resources: ['vm-a', 'vm-c'] });
  await a.read([e]);
  gate.armed = true;
  const asked = outcome(a.budget.take(e, api));
  await waitFor(() => gate.reached, "a's slot write", 10_000, 5);
  return { a, b: b!, e, gate, asked };
}

describe('the last slot raced, over the Lease store', () => {
  it("read back: a member that goes down between another's read and its slot write is counted, and the early slot given back", async () => {
    const group = 'race-read-back';
    const gate = new Gate();
    const a = await budgetMember(fleetStores(), 'kubernetes', group, 'vm-a', {}, gated(slotWrite, gate));
    const b = await budgetMember(fleetStores(), 'kubernetes', group, 'vm-b');
    await Promise.all([a.read([]), b.read([])]);
    const ea = scheduledFor('vm-a');
    // a has read the slots (all free) and is about to write slot-0
    gate.armed = true;
    const asked = outcome(a.budget.take(ea, api));
    await waitFor(() => gate.reached, "a's slot write", 10_000, 5);
    // meanwhile b's maintenance Started at NotBefore: it is down, and says so
    await b.read([started('vm-b')]);
    expect(b.budget.state().slot).toMatchObject({ mode: 'started' });
    gate.open();
    expect(await asked).toBe('HELD');
    expect(a.budget.state().slot).toBeNull();
    expect(await live(a)).toEqual(['vm-b']);
    expect(a.lines.find((l) => l.msg === 'fleet budget: another member went down meanwhile; slot given back')).toMatchObject({
      slot: 'slot-0',
      down: 2,
      group,
    });
  });

  it('early hold: a member whose event Started is counted by an approval that reads after that, before its own read of the slots', async () => {
    const group = 'race-early-hold';
    const gate = new Gate();
    const a = await budgetMember(fleetStores(), 'kubernetes', group, 'vm-a');
    const b = await budgetMember(fleetStores(), 'kubernetes', group, 'vm-b', {}, gated(slotRead, gate));
    await Promise.all([a.read([]), b.read([])]);
    // b's maintenance Started: b is held just before it reads the slots
    const eb = started('vm-b');
    gate.armed = true;
    const said = b.read([eb]);
    await waitFor(() => gate.reached, "b's read of the slots", 10_000, 5);
    expect(await outcome(a.budget.take(scheduledFor('vm-a'), api))).toBe('HELD');
    gate.open();
    await said;
    expect(b.budget.state().slot).toMatchObject({ mode: 'started', eventIds: [eb.eventId] });
    expect(await live(a)).toEqual(['vm-b']);
  });

  it('read back for a maintenance of several members: every slot it wrote is given back when another went down meanwhile', async () => {
    const { a, b, e, gate, asked } = await severalOf('race-many-read-back', slotWrite);
    await b.read([started('vm-b')]);
    gate.open();
    expect(await asked).toBe('HELD');
    expect(await live(a)).toEqual(['vm-b']);
    // once b is back, the two slots are free and the maintenance is approved for both
    await b.read([]);
    expect(await outcome(a.budget.take(e, api))).toBe('granted');
    expect(await live(a)).toEqual(['vm-a', 'vm-c']);
  });

  it('early hold for a maintenance of several members: one Started before the read leaves one slot, too few for two', async () => {
    const group = 'race-many-early-hold';
    const more = { maxUnavailable: 2 };
    const gate = new Gate();
    const b = await budgetMember(fleetStores(), 'kubernetes', group, 'vm-b', more, gated(slotRead, gate));
    const [a, c] = await Promise.all(['vm-a', 'vm-c'].map((vm) => budgetMember(fleetStores(), 'kubernetes', group, vm, more)));
    await Promise.all([a!, b, c!].map((m) => m.budget.heartbeat()));
    await Promise.all([a!, b, c!].map((m) => m.read([])));
    const e = scheduledFor('vm-a', { resources: ['vm-a', 'vm-c'] });
    await a!.read([e]);
    gate.armed = true;
    const said = b.read([started('vm-b')]);
    await waitFor(() => gate.reached, "b's read of the slots", 10_000, 5);
    expect(await outcome(a!.budget.take(e, api))).toBe('HELD');
    gate.open();
    await said;
    expect(await live(a!)).toEqual(['vm-b']);
  });

  it('read back, zones one at a time: a member of another zone that took a slot meanwhile holds the early one back', async () => {
    const group = 'race-zones';
    const more = { maxUnavailable: 2, zones: 'one-at-a-time' as const };
    const gate = new Gate();
    const a = await budgetMember(fleetStores(), 'kubernetes', group, 'vm-a', more, gated(slotWrite, gate));
    const b = await budgetMember(fleetStores(), 'kubernetes', group, 'vm-b', more);
    a.view.vm = { ...a.view.vm, zone: '1' };
    b.view.vm = { ...b.view.vm, zone: '2' };
    await Promise.all([a.read([]), b.read([])]);
    gate.armed = true;
    const asked = outcome(a.budget.take(scheduledFor('vm-a'), api));
    await waitFor(() => gate.reached, "a's slot write", 10_000, 5);
    expect(await outcome(b.budget.take(scheduledFor('vm-b'), api))).toBe('granted');
    gate.open();
    expect(await asked).toBe('HELD');
    expect(await live(a)).toEqual(['vm-b']);
  });

  it('a maintenance of several members whose second write is lost: the first is given back, and it is held', async () => {
    let writes = 0;
    const second = (method: string, name: string, value?: unknown) => slotWrite(method, name, value) && ++writes === 2;
    const { a, b, gate, asked } = await severalOf('race-many-lost', second);
    expect(await outcome(b.budget.take(scheduledFor('vm-b'), api))).toBe('granted');
    gate.open();
    expect(await asked).toBe('HELD');
    expect(await live(a)).toEqual(['vm-b']);
  });
});
