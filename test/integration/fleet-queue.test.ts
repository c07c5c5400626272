/**
 * The fleet budget's queue, renewal and overflow over its two real stores: Azure Blob Storage
 * served by Azurite (Microsoft's emulator) through the project's Blob REST client (the fleet
 * store's own, src/fleet/budget/stores/blob-rest.ts), behind a proxy that counts each request
 * and each refused conditional write, and Leases served by the project's Kubernetes API stand-in
 * (no API server can run here; written from the API reference) through the project's Kubernetes
 * client (src/kube). Members run in this process on a simulated clock.
 */
import { describe, expect, it } from 'vitest';
import { FleetBudget } from '../../src/fleet/budget/budget.ts';
import { asBudget, FleetConfig } from '../../src/fleet/budget/config.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import { KIND_LABEL, leaseName } from '../../src/fleet/budget/stores/lease.ts';
import type { FleetStore } from '../../src/fleet/budget/stores/port.ts';
import { asSlot } from '../../src/fleet/budget/records.ts';
import { DEV_ACCOUNT } from '../../src/simulator/azurite.ts';
import { CountingProxy } from '../../testkit/counting-proxy.ts';
import { budgetMember, type Member } from '../../testkit/fleet-members.ts';
import { fleetStoresPerFile, memberVm, outcome, scheduledFor, STORE_KINDS } from '../../testkit/fleet-stores.ts';
import { outOfOrder, runWave, type WaveMember } from '../../testkit/fleet-wave.ts';
import { silentLogger, waitFor } from '../helpers.ts';

const fleetStores = fleetStoresPerFile();
const api = { by: 'test', via: 'api' } as const;

describe.each(STORE_KINDS)('the fleet budget over the %s store', (kind) => {
  it('serves a wave in the queue order (earliest NotBefore first), and a hand-off costs no lost write', async () => {
    const proxy = await new CountingProxy(fleetStores().azurite.url).start();
    try {
      const store =
        kind === 'blob'
          ? { type: 'blob', connectionString: fleetStores().azurite.connectionString(`${proxy.url}/${DEV_ACCOUNT}`), container: 'queue' }
          : fleetStores().config(kind);
      const config = asBudget(FleetConfig.parse({ group: `queue-${kind}`, maxUnavailable: 2, store, heartbeatSeconds: 30, retryMs: 2000 }));
      let now = Date.now();
      const members: WaveMember[] = [];
      for (let i = 0; i < 8; i++) {
        const view = { vm: memberVm(`q${i}`), document: null, goodReads: 1, approvalServerUrl: null };
        const budget = new FleetBudget({
          config,
          store: await openFleetStore(config.store, config.group),
          view,
          logger: silentLogger,
          givenBack: () => true,
          now: () => now,
        });
        members.push({ vm: `q${i}`, budget, view });
      }
      await Promise.all(members.map((m) => m.budget.heartbeat()));
      proxy.take();
      const grants = await runWave(members, {
        retryMs: 2000,
        heartbeatSeconds: 30,
        holdMs: 4000,
        forMs: 60_000,
        start: now,
        setNow: (t) => (now = t),
      });
      expect(grants).toHaveLength(8);
      // q7's NotBefore comes first, q0's last; two at a time
      expect(outOfOrder(grants)).toBe(0);
      expect(grants.map((g) => g.vm)).toEqual(['q7', 'q6', 'q5', 'q4', 'q3', 'q2', 'q1', 'q0']);
      if (kind === 'blob') {
        const { counts, lost } = proxy.take();
        expect(lost).toBe(0);
        // the group is read from the listings alone (records carried in blob metadata): no blob is downloaded
        expect(counts.read).toBeUndefined();
        expect(counts.list).toBeGreaterThan(0);
      }
    } finally {
      await proxy.stop();
    }
  }, 60_000);

  it('renews a slot at the reads while its event is listed, says at once when the slot was taken over, and counts itself down again', async () => {
    const group = `renew-${kind}`;
    const [a, b] = await Promise.all([budgetMember(fleetStores(), kind, group, 'vm-a'), budgetMember(fleetStores(), kind, group, 'vm-b')]);
    const t0 = Date.now();
    a.now = t0;
    // NotBefore in 1 minute, 30 s of impact, 60 s of margin: recorded end t0 + 150 s
    const ea = scheduledFor('vm-a', { notBefore: new Date(t0 + 60_000).toISOString(), durationInSeconds: 30 });
    await a.read([ea]);
    await a.budget.take(ea, api);
    const until = () => a.budget.state().slot?.until;
    expect(until()).toBe(new Date(t0 + 150_000).toISOString());
    // past NotBefore, its end moves with the clock: written once it has moved by a heartbeat (20 s) or more
    a.now = t0 + 70_000;
    await a.read([{ ...ea, eventStatus: 'Started' }]);
    expect(until()).toBe(new Date(t0 + 150_000).toISOString());
    a.now = t0 + 90_000;
    await a.read([{ ...ea, eventStatus: 'Started' }]);
    expect(until()).toBe(new Date(t0 + 180_000).toISOString());
    const g = await b.budget.take(scheduledFor('vm-b'), api).catch((err: unknown) => err);
    expect(g).toMatchObject({ code: 'HELD' });

    // a's reads stop (the VM reboots); past its recorded end b takes the slot over, and a says so at its next look
    b.now = t0 + 181_000;
    expect(await b.budget.take(scheduledFor('vm-b'), api)).toMatchObject({ slot: 'slot-0' });
    a.now = t0 + 200_000;
    await a.read([{ ...ea, eventStatus: 'Started' }]);
    expect(a.lines.find((l) => l.code === 'FLEET_SLOT_LOST')).toMatchObject({ slot: 'slot-0', to: 'vm-b', eventIds: [ea.eventId] });
    // still down (Started) with no slot: at the same read it writes its overflow record, so the group counts it
    expect(a.budget.state().slot).toMatchObject({ name: expect.stringMatching(/^slot-x-/), mode: 'started', eventIds: [ea.eventId] });
  });

  it('never lets an early approval through once a member that went down at NotBefore has said so (the race forced 200 times)', async () => {
    const group = `overflow-${kind}`;
    // b's read back after its slot write waits at a gate the test opens, so a's word comes in between
    let armed = false;
    let gate: { at: boolean; open: () => void; opened: Promise<void> } | null = null;
    const gated = (s: FleetStore): FleetStore => ({
      where: s.where,
      get: (...args) => s.get(...args),
      remove: (...args) => s.remove(...args),
      close: () => s.close(),
      put: async (name, value, version, signal) => {
        const written = await s.put(name, value, version, signal);
        if (written !== null && name === 'slot-0' && asSlot(value).member !== null) armed = true;
        return written;
      },
      list: async (prefix, signal) => {
        if (armed && gate !== null) {
          armed = false;
          gate.at = true;
          await gate.opened;
        }
        return s.list(prefix, signal);
      },
      head: (...args) => s.head(...args),
    });
    const a = await budgetMember(fleetStores(), kind, group, 'vm-a');
    const b = await budgetMember(fleetStores(), kind, group, 'vm-b', {}, gated);
    const outcomes: string[] = [];
    for (let round = 0; round < 200; round++) {
      const ea = { ...scheduledFor('vm-a'), eventStatus: 'Started' as const, notBefore: null };
      const eb = scheduledFor('vm-b');
      await Promise.all([a.read([]), b.read([eb])]);
      let open!: () => void;
      const opened = new Promise<void>((resolve) => (open = resolve));
      gate = { at: false, open, opened };
      const asked = outcome(b.budget.take(eb, api));
      await waitFor(() => gate!.at, "b's read back after its slot write", 5000, 1);
      // a's event Started at NotBefore: it says so before anything else
      await a.read([ea]);
      gate.open();
      outcomes.push(await asked);
      expect(a.budget.state().slot).toMatchObject({ eventIds: [ea.eventId], mode: 'started' });
      expect(b.budget.state().slot).toBeNull();
      gate = null;
      await Promise.all([a.read([]), b.read([])]);
    }
    // b saw a down at its read back, and gave its slot back before IMDS heard of it, every time
    expect(outcomes.filter((o) => o !== 'HELD')).toEqual([]);
    expect(b.lines.filter((l) => l.msg === 'fleet budget: another member went down meanwhile; slot given back')).toHaveLength(200);
  }, 120_000);

  it('approves a maintenance that names three members only with three slots, each member finding its own; forced, it says three go down', async () => {
    const group = `three-${kind}`;
    const more = { maxUnavailable: 3 };
    const [a, b, c, d] = await Promise.all(
      ['vm-a', 'vm-b', 'vm-c', 'vm-d'].map((vm) => budgetMember(fleetStores(), kind, group, vm, more)),
    );
    await Promise.all([a, b, c, d].map((m) => m!.budget.heartbeat()));
    const ed = scheduledFor('vm-d');
    await d!.read([ed]);
    await d!.budget.take(ed, api);
    // one update domain: vm-a, vm-b and vm-c at once; two slots free of three
    const e = scheduledFor('vm-a', { resources: ['vm-a', 'VM-B', 'vm-c'] });
    await Promise.all([a, b, c].map((m) => m!.read([e])));
    const held = await a!.budget.take(e, api).catch((err: unknown) => err);
    expect(held).toMatchObject({
      code: 'HELD',
      message: expect.stringMatching(/takes 3 members of three-\w+ down at once \(vm-a, vm-b, vm-c\)/),
    });
    // held without keeping part of the slots: a member behind it is not blocked
    expect((await readSlots(a!)).filter((s) => s.member !== null).map((s) => s.vm)).toEqual(['vm-d']);
    await d!.read([]);
    expect(await a!.budget.take(e, api)).toMatchObject({ forced: false });
    expect(
      (await readSlots(a!))
        .filter((s) => s.member !== null)
        .map((s) => s.vm)
        .sort(),
    ).toEqual(['vm-a', 'vm-b', 'vm-c']);
    // each named member finds its own slot (the maintenance Started for all three), and gives it back when it is over
    await b!.read([{ ...e, eventStatus: 'Started' }]);
    expect(b!.budget.state().slot).toMatchObject({ eventIds: [e.eventId] });
    await b!.read([]);
    expect(b!.budget.state().slot).toBeNull();
    expect(
      (await readSlots(a!))
        .filter((s) => s.member !== null)
        .map((s) => s.vm)
        .sort(),
    ).toEqual(['vm-a', 'vm-c']);

    // one slot in all: forced, three records (one slot, two overflow), and the person is told
    const g1 = `three-forced-${kind}`;
    const [x, y, z] = await Promise.all(['vm-x', 'vm-y', 'vm-z'].map((vm) => budgetMember(fleetStores(), kind, g1, vm)));
    await Promise.all([x, y, z].map((m) => m!.budget.heartbeat()));
    const ex = scheduledFor('vm-x', { resources: ['vm-x', 'vm-y', 'vm-z'] });
    await x!.read([ex]);
    expect(await outcome(x!.budget.take(ex, api))).toBe('HELD');
    const forced = await x!.budget.take(ex, { ...api, force: true, reason: 'security patch' });
    expect(forced).toMatchObject({ forced: true, note: 'this maintenance takes 3 members of ' + g1 + ' down at once (vm-x, vm-y, vm-z)' });
    const records = (await readSlots(x!)).filter((s) => s.member !== null);
    expect(records.map((s) => s.vm).sort()).toEqual(['vm-x', 'vm-y', 'vm-z']);
    expect(records.filter((s) => s.name.startsWith('slot-x-'))).toHaveLength(2);
    // IMDS refused the approval: every record it wrote, in every member's name, is given back
    await x!.budget.abandon(ex.eventId);
    expect((await readSlots(x!)).filter((s) => s.member !== null)).toEqual([]);
  });
});

describe('the Lease store lists one kind of record', () => {
  it('asks the API server for slots or members by label, and still lists a Lease written before the kind label', async () => {
    const group = 'kinds';
    const store = await openFleetStore(
      FleetConfig.parse({ group, maxUnavailable: 1, store: fleetStores().config('kubernetes') }).store,
      group,
    );
    await store.put('slot-0', { member: null }, null);
    await store.put('member-a', { member: 'a' }, null);
    await store.put('slot-1', { member: null }, null);
    // slot-1 as an older version wrote it: the group's label only
    const old = fleetStores().kube.leases.leases.get(`se-bridge/${leaseName(group, 'slot-1')}`)!;
    delete old.metadata.labels![KIND_LABEL];
    const before = fleetStores().kube.requests.length;
    expect((await store.list('slot-')).map((r) => r.name).sort()).toEqual(['slot-0', 'slot-1']);
    expect((await store.list('member-')).map((r) => r.name)).toEqual(['member-a']);
    const lists = fleetStores()
      .kube.requests.slice(before)
      .map((r) => decodeURIComponent(r.path));
    expect(lists).toEqual([
      expect.stringContaining(
        'labelSelector=se-bridge.io/group=kinds,se-bridge.io/kind!=member,se-bridge.io/kind!=queue,se-bridge.io/kind!=asking,se-bridge.io/kind!=record',
      ),
      expect.stringContaining(
        'labelSelector=se-bridge.io/group=kinds,se-bridge.io/kind!=slot,se-bridge.io/kind!=queue,se-bridge.io/kind!=asking,se-bridge.io/kind!=record',
      ),
    ]);
  });
});

/** readSlots: the group's slot records as the member's store has them. */
async function readSlots(m: Member) {
  return (await m.store.list('slot-')).map((r) => ({ name: r.name, ...asSlot(r.value) }));
}
