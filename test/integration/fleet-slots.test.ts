/**
 * One member's side of its group's slots (MemberSlots, src/fleet/budget/slots.ts) and the slots of
 * a maintenance of several members (takeForAll, many.ts), called in this process over the Lease
 * store (the project's Kubernetes API stand-in, written from the API reference: no API server can
 * run here; through the project's Kubernetes client), on a clock the test sets: what each take,
 * release and renewal leaves in the store, what it says to the member's gauges, and what a held
 * approval says.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ApprovalError } from '../../src/approval/service.ts';
import { asBudget, FleetConfig } from '../../src/fleet/budget/config.ts';
import { downText, namedIn, takeForAll, type Named } from '../../src/fleet/budget/many.ts';
import { asSlot, memberKey, type SlotRecord } from '../../src/fleet/budget/records.ts';
import { MemberSlots } from '../../src/fleet/budget/slots.ts';
import { servedSince, turnsOf } from '../../src/fleet/budget/served.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import type { FleetStore } from '../../src/fleet/budget/stores/port.ts';
import type { ScheduledEvent } from '../../src/imds/wire.ts';
import { Gate, gated, slotWrite } from '../../testkit/fleet-gate.ts';
import { leaseStorePerFile, memberVm, outcome, scheduledFor } from '../../testkit/fleet-stores.ts';
import { waitFor } from '../helpers.ts';

const fleetStores = leaseStorePerFile();
const api = { by: 'test', via: 'api' } as const;
const T0 = Date.parse('2030-01-01T00:00:00Z');

interface Slots {
  readonly slots: MemberSlots;
  readonly store: FleetStore;
  readonly key: string;
  readonly vm: ReturnType<typeof memberVm>;
  readonly lines: Record<string, unknown>[];
  /** What the member's gauges were told at each read: its own slots, the others'. */
  readonly gauges: [number, number][];
  clock: { now: number };
  k: number;
}

async function slotsOf(
  group: string,
  name: string,
  clock: { now: number },
  k = 1,
  zone: string | null = null,
  wrap: (s: FleetStore) => FleetStore = (s) => s,
): Promise<Slots> {
  const config = asBudget(
    FleetConfig.parse({
      group,
      maxUnavailable: k,
      store: fleetStores().config('kubernetes'),
      marginSeconds: 60,
      heartbeatSeconds: 20,
      ...(zone === null ? {} : { zones: 'one-at-a-time' }),
    }),
  );
  const store = wrap(await openFleetStore(config.store, group));
  const vm = { ...memberVm(name), zone };
  const lines: Record<string, unknown>[] = [];
  const gauges: [number, number][] = [];
  const m: Slots = {
    store,
    key: memberKey(vm),
    vm,
    lines,
    gauges,
    clock,
    k,
    slots: undefined as unknown as MemberSlots,
  };
  (m as { slots: MemberSlots }).slots = new MemberSlots({
    config,
    store,
    logger: pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) }),
    me: () => ({ key: m.key, vm }),
    k: () => m.k,
    now: () => clock.now,
    onSlots: (self, others) => void gauges.push([self, others]),
  });
  return m;
}

/** The event `more` says, for `vm`, NotBefore 15 minutes after T0 (no duration: margin only). */
const eventAt = (vm: string, more: Partial<ScheduledEvent> = {}): ScheduledEvent =>
  scheduledFor(vm, { notBefore: new Date(T0 + 15 * 60_000).toISOString(), ...more });

/** records: the group's slot records by name, as the store holds them. */
async function records(m: Slots): Promise<Record<string, SlotRecord>> {
  return Object.fromEntries((await m.store.list('slot-')).map((r) => [r.name, asSlot(r.value)]));
}

/**
 * overtaken: the store, where another writer comes first to each of the member's next `lost.max`
 * writes and removals (it writes the record again as it is, or a free slot where there is none), so
 * the member's conditional call is lost at the version it read; `lost.count` says how many were.
 */
const overtaken =
  (lost: { count: number; max: number }) =>
  (s: FleetStore): FleetStore => {
    const first = async (name: string) => {
      if (lost.count >= lost.max) return;
      lost.count++;
      const now = await s.get(name);
      await s.put(name, now?.value ?? { member: null, vm: 'vm-z', since: new Date(T0).toISOString() }, now?.version ?? null);
    };
    return {
      where: s.where,
      get: (...args) => s.get(...args),
      list: (...args) => s.list(...args),
      head: (...args) => s.head(...args),
      close: () => s.close(),
      put: async (name, value, version, signal) => (await first(name), s.put(name, value, version, signal)),
      remove: async (name, version, signal) => (await first(name), s.remove(name, version, signal)),
    };
  };

const heldOf = (p: Promise<unknown>): Promise<ApprovalError> =>
  p.then(
    () => {
      throw new Error('it was granted');
    },
    (err: unknown) => err as ApprovalError,
  );

describe('one member and its slot', () => {
  it('a second event joins the slot held (its end the later of the two); the same event again writes nothing', async () => {
    const clock = { now: T0 };
    const a = await slotsOf('own-slot', 'vm-a', clock);
    const e1 = eventAt('vm-a');
    expect(a.slots.held).toBeUndefined();
    const first = await a.slots.take(e1, 'early', api);
    expect(first).toMatchObject({ forced: false, slot: 'slot-0', writes: [{ name: 'slot-0' }] });
    expect(a.slots.heldFor).toEqual([e1.eventId]);
    expect(a.lines.find((l) => l.msg === 'fleet budget: slot taken')).toMatchObject({
      slot: 'slot-0',
      eventId: e1.eventId,
      group: 'own-slot',
      mode: 'early',
    });
    // a later event joins: its end is later
    const e2 = eventAt('vm-a', { notBefore: new Date(T0 + 60 * 60_000).toISOString() });
    expect(await a.slots.take(e2, 'early', api)).toMatchObject({ forced: false, slot: 'slot-0', writes: [{ name: 'slot-0' }] });
    // an earlier one joins and leaves the end where it was
    const e3 = eventAt('vm-a', { notBefore: new Date(T0 + 5 * 60_000).toISOString() });
    await a.slots.take(e3, 'early', api);
    const held = (await records(a))['slot-0']!;
    expect(held).toMatchObject({ member: a.key, vm: 'vm-a', eventIds: [e1.eventId, e2.eventId, e3.eventId], mode: 'early' });
    expect(held.until).toBe(new Date(T0 + 61 * 60_000).toISOString());
    const version = (await a.store.get('slot-0'))!.version;
    expect(await a.slots.take(e2, 'early', api)).toEqual({ forced: false, slot: 'slot-0', writes: [] });
    expect((await a.store.get('slot-0'))!.version).toBe(version);
    // its gauges: one slot of its own, none of the others
    expect(a.gauges.at(-1)).toEqual([1, 0]);
  });

  it('a forced approval with a slot free takes it as an early one; with none, an overflow record past the budget, said loudly', async () => {
    const clock = { now: T0 };
    const [a, b] = await Promise.all([slotsOf('forced', 'vm-a', clock), slotsOf('forced', 'vm-b', clock)]);
    const ea = eventAt('vm-a');
    expect(await a.slots.take(ea, 'forced', { by: 'ops', via: 'api', force: true, reason: 'patch' })).toMatchObject({
      forced: false,
      slot: 'slot-0',
    });
    expect((await records(a))['slot-0']).toMatchObject({ mode: 'early', by: 'ops', reason: 'patch' });
    const eb = eventAt('vm-b');
    const grant = await b.slots.take(eb, 'forced', { by: 'ops', via: 'api' });
    expect(grant).toMatchObject({ forced: true, slot: `slot-x-${b.key}`, writes: [{ name: `slot-x-${b.key}` }] });
    expect((await records(b))[`slot-x-${b.key}`]).toMatchObject({ member: b.key, mode: 'forced', eventIds: [eb.eventId] });
    expect(b.lines.find((l) => l.code === 'FLEET_OVER_BUDGET')).toMatchObject({ mode: 'forced', holders: [{ vm: 'vm-a' }] });
    expect(b.gauges.at(-1)).toEqual([0, 1]);
    // a's early approval of another event is its own slot's; b, holding its overflow record, adds another to it
    const eb2 = eventAt('vm-b');
    expect(await b.slots.take(eb2, 'early', api)).toMatchObject({ forced: true, slot: `slot-x-${b.key}` });
    expect((await records(b))[`slot-x-${b.key}`]!.eventIds).toEqual([eb.eventId, eb2.eventId]);
    // asked again for an event it holds: forced as it was, nothing written
    expect(await b.slots.take(eb, 'early', api)).toEqual({ forced: true, slot: `slot-x-${b.key}`, writes: [] });
    // one of its events given back: the overflow record keeps the other
    await b.slots.release((ids) => ids.filter((id) => id !== eb.eventId));
    expect((await records(b))[`slot-x-${b.key}`]).toMatchObject({ member: b.key, eventIds: [eb2.eventId] });
    // given back: the overflow record is deleted, not left free, and said
    await b.slots.release(() => []);
    expect(Object.keys(await records(b))).toEqual(['slot-0']);
    expect(b.slots.held).toBeNull();
    expect(b.lines.filter((l) => l.msg === 'fleet budget: slot given back')).toEqual([
      expect.objectContaining({ slot: `slot-x-${b.key}`, eventIds: [eb2.eventId], group: 'forced' }),
    ]);
  });

  it('a holder past its recorded end is taken over (said, with whom from); the lapsed holder learns it lost its slot', async () => {
    const clock = { now: T0 };
    const [a, b] = await Promise.all([slotsOf('lapse', 'vm-a', clock), slotsOf('lapse', 'vm-b', clock)]);
    const ea = eventAt('vm-a');
    await a.slots.take(ea, 'early', api);
    expect(await outcome(b.slots.take(eventAt('vm-b'), 'early', api))).toBe('HELD');
    expect(a.slots.lapsed).toBe(false);
    // 16 minutes on: a's slot (NotBefore + 60 s of margin) has passed its recorded end
    clock.now = T0 + 16 * 60_000 + 1;
    expect(a.slots.lapsed).toBe(true);
    expect(a.slots.held).toBeNull();
    expect(a.slots.heldFor).toEqual([]);
    const eb = eventAt('vm-b', { notBefore: new Date(T0 + 30 * 60_000).toISOString() });
    expect(await b.slots.take(eb, 'early', api)).toMatchObject({ slot: 'slot-0', forced: false });
    expect(b.lines.find((l) => l.code === 'FLEET_SLOT_TAKEN_OVER')).toMatchObject({ slot: 'slot-0', from: 'vm-a', eventIds: [ea.eventId] });
    await a.slots.read();
    expect(a.lines.find((l) => l.code === 'FLEET_SLOT_LOST')).toMatchObject({ slot: 'slot-0', to: 'vm-b', eventIds: [ea.eventId] });
    expect(a.slots.lapsed).toBe(false);
    expect(a.slots.holders).toEqual([expect.objectContaining({ vm: 'vm-b', eventId: eb.eventId })]);
    expect(a.gauges.at(-1)).toEqual([0, 1]);
  });

  it('a held approval names the holders and what the group allows; a slot of a number past the budget still counts', async () => {
    const clock = { now: T0 };
    const [a, b, c] = await Promise.all(['vm-a', 'vm-b', 'vm-c'].map((vm) => slotsOf('counted', vm, clock, 2)));
    const eb = eventAt('vm-b');
    await b!.slots.take(eb, 'early', api);
    await c!.slots.take(eventAt('vm-c'), 'early', api);
    // the group allowed two; now one: the second slot-1 still counts
    a!.k = 1;
    b!.k = 1;
    await b!.slots.release(() => []);
    const held = await heldOf(a!.slots.take(eventAt('vm-a'), 'early', api));
    expect(held.code).toBe('HELD');
    expect(held.message).toBe(
      `group counted allows 1 member in maintenance at once; held by vm-c (${(await records(a!))['slot-1']!.eventIds![0]}) since ${new Date(T0).toISOString()}`,
    );
    expect(held.holders).toEqual([expect.objectContaining({ vm: 'vm-c' })]);
  });

  it('releases only the events it is told to drop, and a write lost to another member is read again and tried again', async () => {
    const clock = { now: T0 };
    const a = await slotsOf('release', 'vm-a', clock);
    const [e1, e2] = [eventAt('vm-a'), eventAt('vm-a')];
    await a.slots.take(e1, 'early', api);
    await a.slots.take(e2, 'early', api);
    const kept = (await a.store.get('slot-0'))!.version;
    await a.slots.release((ids) => ids);
    expect((await records(a))['slot-0']!.eventIds).toEqual([e1.eventId, e2.eventId]);
    // nothing to give back: nothing written
    expect((await a.store.get('slot-0'))!.version).toBe(kept);
    await a.slots.release((ids) => ids.filter((id) => id !== e1.eventId));
    expect((await records(a))['slot-0']).toMatchObject({ member: a.key, eventIds: [e2.eventId] });
    // the record changes behind the member's back (its own renewal by another process): the release reads it again
    const current = (await a.store.get('slot-0'))!;
    expect(await a.store.put('slot-0', { ...asSlot(current.value), reason: 'changed' }, current.version)).not.toBeNull();
    await a.slots.release(() => []);
    expect((await records(a))['slot-0']).toMatchObject({ member: null });
    expect(a.slots.held).toBeNull();
    expect(a.lines.filter((l) => l.msg === 'fleet budget: slot given back')).toEqual([
      expect.objectContaining({ slot: 'slot-0', eventIds: [e2.eventId], group: 'release' }),
    ]);
    // read again: a free slot is held by nobody
    await a.slots.read();
    expect(a.slots.holders).toEqual([]);
    expect(a.gauges.at(-1)).toEqual([0, 0]);
  });

  it('counts each take in the slot, carried as it is given back and renewed; a count that does not read is none, counted on from none', async () => {
    const clock = { now: T0 };
    const [a, b] = await Promise.all(['vm-a', 'vm-b'].map((vm) => slotsOf('takes', vm, clock)));
    const turns = async () => turnsOf(await a!.slots.read(), clock.now);
    expect(await turns()).toEqual(new Map());
    const e = eventAt('vm-a');
    await a!.slots.take(e, 'early', api);
    const first = (await records(a!))['slot-0']!;
    expect(first).toMatchObject({ member: a!.key, takes: 1 });
    const taken = await turns();
    expect(taken.get('slot-0')).toEqual({ takes: 1, since: T0 });
    await a!.slots.renew({ incarnation: 2, events: [{ ...e, notBefore: new Date(T0 + 3_600_000).toISOString() }] });
    expect((await records(a!))['slot-0']).toMatchObject({ takes: 1, until: expect.not.stringMatching(first.until!) });
    await a!.slots.release(() => []);
    expect((await records(a!))['slot-0']).toMatchObject({ member: null, takes: 1 });
    clock.now += 1000;
    await b!.slots.take(eventAt('vm-b'), 'early', api);
    expect((await records(b!))['slot-0']).toMatchObject({ member: b!.key, takes: 2 });
    // two served since the first read, one since the take: the free slot had no record then
    expect(servedSince(new Map(), await turns(), T0 - 1)).toBe(2);
    expect(servedSince(taken, await turns(), T0)).toBe(1);
    await b!.slots.release(() => []);
    // a hostile or broken count reads as none: the slot is still a slot, taken on from one
    const free = (await b!.store.get('slot-0'))!;
    await b!.store.put('slot-0', { ...asSlot(free.value), takes: 'many' }, free.version);
    expect((await turns()).get('slot-0')).toEqual({ takes: null, since: null });
    await a!.slots.take(eventAt('vm-a'), 'early', api);
    expect((await records(a!))['slot-0']).toMatchObject({ member: a!.key, takes: 1 });
  });

  it('renews its slot when the end has moved by a heartbeat or more, not before; a renewal lost reads the slot again', async () => {
    const clock = { now: T0 };
    const a = await slotsOf('renew', 'vm-a', clock);
    const e = eventAt('vm-a');
    await a.slots.take(e, 'early', api);
    const until = (await records(a))['slot-0']!.until!;
    // NotBefore moved 19 s later: less than a heartbeat (20 s), no write
    const version = (await a.store.get('slot-0'))!.version;
    await a.slots.renew({ incarnation: 2, events: [{ ...e, notBefore: new Date(T0 + 15 * 60_000 + 19_000).toISOString() }] });
    expect((await a.store.get('slot-0'))!.version).toBe(version);
    await a.slots.renew({ incarnation: 2, events: [{ ...e, notBefore: new Date(T0 + 15 * 60_000 + 20_000).toISOString() }] });
    expect((await records(a))['slot-0']!.until).toBe(new Date(Date.parse(until) + 20_000).toISOString());
    // no listed event of the slot, or no document: nothing written
    const after = (await a.store.get('slot-0'))!.version;
    await a.slots.renew({ incarnation: 3, events: [eventAt('vm-a', { notBefore: new Date(T0 + 99 * 60_000).toISOString() })] });
    await a.slots.renew(null);
    expect((await a.store.get('slot-0'))!.version).toBe(after);
    // another writer took the record: the renewal is lost, and the member reads who holds it now
    const current = (await a.store.get('slot-0'))!;
    await a.store.put('slot-0', { ...asSlot(current.value), member: 'someone-else', vm: 'vm-z' }, current.version);
    await a.slots.renew({ incarnation: 4, events: [{ ...e, notBefore: new Date(T0 + 40 * 60_000).toISOString() }] });
    expect(a.slots.held).toBeNull();
    expect(a.slots.holders).toEqual([expect.objectContaining({ vm: 'vm-z' })]);
  });
});

describe('what else holds an early approval', () => {
  const sick = (m: Slots) => [{ key: m.key, vm: m.vm.name, since: new Date(T0).toISOString(), why: 'its check failed' }];

  it('a member of another zone in maintenance; members of one zone go together, a forced approval goes past it', async () => {
    const clock = { now: T0 };
    const [a, b, c] = await Promise.all([
      slotsOf('zones', 'vm-a', clock, 3, '1'),
      slotsOf('zones', 'vm-b', clock, 3, '2'),
      slotsOf('zones', 'vm-c', clock, 3, '1'),
    ]);
    await a.slots.take(eventAt('vm-a'), 'early', api);
    expect((await records(a))['slot-0']).toMatchObject({ zone: '1' });
    expect(await c.slots.take(eventAt('vm-c'), 'early', api)).toMatchObject({ slot: 'slot-1' });
    const held = await heldOf(b.slots.take(eventAt('vm-b'), 'early', api));
    expect(held.message).toMatch(/; zone 1 is in maintenance \(vm-a\); the group takes one zone at a time$/);
    expect(held.reason).toBe('zone');
    expect(Object.keys(await records(b))).toEqual(['slot-0', 'slot-1']);
    expect(await b.slots.take(eventAt('vm-b'), 'forced', api)).toMatchObject({ forced: false, slot: 'slot-2' });
  });

  it('a member not healthy counts as one in maintenance: asked only when a slot is free, and named when it holds the last one', async () => {
    const clock = { now: T0 };
    const [a, b, c] = await Promise.all(['vm-a', 'vm-b', 'vm-c'].map((vm) => slotsOf('sick', vm, clock, 2)));
    let asked = 0;
    const unhealthy = async () => (asked++, sick(c!));
    // two slots, one member not healthy: one is left
    expect(await a!.slots.take(eventAt('vm-a'), 'early', api, undefined, unhealthy)).toMatchObject({ slot: 'slot-0' });
    const held = await heldOf(b!.slots.take(eventAt('vm-b'), 'early', api, undefined, unhealthy));
    expect(held.message).toMatch(/^group sick allows 2 members in maintenance at once; held by vm-a \(.+\) since .+; .*vm-c/);
    expect(held.unhealthy).toEqual(sick(c!));
    expect(asked).toBe(2);
    // held before any write: the member not healthy leaves no slot to try
    expect(Object.keys(await records(b!))).toEqual(['slot-0']);
    // no slot free: the members' health is not read at all
    await c!.slots.take(eventAt('vm-c'), 'forced', api);
    expect(await outcome(b!.slots.take(eventAt('vm-b'), 'early', api, undefined, unhealthy))).toBe('HELD');
    expect(asked).toBe(2);
  });

  it('a member not healthy still counts at the read back: a member down meanwhile takes the group past its budget', async () => {
    const clock = { now: T0 };
    const gate = new Gate();
    const a = await slotsOf('sick-read-back', 'vm-a', clock, 2, null, gated(slotWrite, gate));
    const b = await slotsOf('sick-read-back', 'vm-b', clock, 2);
    await b.slots.read();
    gate.armed = true;
    const asked = outcome(a.slots.take(eventAt('vm-a'), 'early', api, undefined, async () => sick(b)));
    await waitFor(() => gate.reached, "a's slot write", 10_000, 5);
    const down = await b.slots.take({ ...eventAt('vm-b'), eventStatus: 'Started' }, 'started', { by: 'azure', via: 'imds' });
    expect(down.slot).toBe(`slot-x-${b.key}`);
    gate.open();
    expect(await asked).toBe('HELD');
    expect((await records(a))['slot-0']).toMatchObject({ member: null });
  });

  it("waits its turn in the group's queue: told how many are free for it, it tries the free slot its place names", async () => {
    const clock = { now: T0 };
    const [a, b] = await Promise.all(['vm-a', 'vm-b'].map((vm) => slotsOf('turns', vm, clock, 3)));
    await b!.slots.take(eventAt('vm-b'), 'early', api);
    const asked: number[] = [];
    const held = await heldOf(a!.slots.take(eventAt('vm-a'), 'early', api, async (free) => (asked.push(free), null)));
    expect(held.message).toBe(
      `group turns allows 3 members in maintenance at once; held by vm-b (${b!.slots.heldFor[0]}) since ${new Date(T0).toISOString()}`,
    );
    expect(asked).toEqual([2]);
    // second in line: the second free slot (slot-2); one member not healthy leaves one free for it
    expect(await a!.slots.take(eventAt('vm-a'), 'early', api, async (free) => (asked.push(free), 1))).toMatchObject({ slot: 'slot-2' });
    await a!.slots.release(() => []);
    const one = async () => [{ key: 'k-z', vm: 'vm-z', since: new Date(T0).toISOString(), why: 'down' }];
    await a!.slots.take(eventAt('vm-a'), 'early', api, async (free) => (asked.push(free), 0), one);
    expect(asked).toEqual([2, 2, 1]);
    // a forced approval does not wait in the queue
    await a!.slots.release(() => []);
    expect(await a!.slots.take(eventAt('vm-a'), 'forced', api, async () => null)).toMatchObject({ slot: 'slot-1' });
  });

  it('an empty queue holds with its reason: the slot free, the member waiting its turn', async () => {
    const clock = { now: T0 };
    const a = await slotsOf('turn-empty', 'vm-a', clock, 1);
    const held = await heldOf(a.slots.take(eventAt('vm-a'), 'early', api, async () => null));
    expect(held.message).toBe(
      "group turn-empty allows 1 member in maintenance at once; a slot is free, and this member waits its turn in the group's queue",
    );
  });

  it('its own overflow record past its end is written again at the version read, not lost to itself', async () => {
    const clock = { now: T0 };
    const [a, b] = await Promise.all(['vm-a', 'vm-b'].map((vm) => slotsOf('overflow-again', vm, clock)));
    await a!.slots.take(eventAt('vm-a', { notBefore: new Date(T0 + 60 * 60_000).toISOString() }), 'early', api);
    await b!.slots.take(eventAt('vm-b'), 'forced', api);
    clock.now = T0 + 30 * 60_000;
    const again = eventAt('vm-b', { notBefore: new Date(T0 + 45 * 60_000).toISOString() });
    expect(await b!.slots.take(again, 'forced', api)).toMatchObject({ forced: true, slot: `slot-x-${b!.key}` });
    expect((await records(b!))[`slot-x-${b!.key}`]!.eventIds).toEqual([again.eventId]);
  });

  it('an event Started while the member holds nothing: its overflow record is written before the read; counted, not past the budget', async () => {
    const clock = { now: T0 };
    const a = await slotsOf('started', 'vm-a', clock);
    await a.slots.read();
    const e = { ...eventAt('vm-a'), eventStatus: 'Started' as const };
    expect(await a.slots.take(e, 'started', { by: 'azure', via: 'imds' })).toMatchObject({
      forced: false,
      slot: `slot-x-${a.key}`,
      writes: [{ name: `slot-x-${a.key}` }],
    });
    expect(a.lines.find((l) => l.msg === 'fleet budget: down, counted')).toMatchObject({ mode: 'started', eventId: e.eventId });
    expect(a.lines.some((l) => l.code === 'FLEET_OVER_BUDGET')).toBe(false);
    expect(a.slots.heldFor).toEqual([e.eventId]);
  });

  it('a group full with members down outside its slots (a Started overflow record): its health not read, no slot written, held', async () => {
    const clock = { now: T0 };
    const [z, a] = await Promise.all(['vm-z', 'vm-a'].map((vm) => slotsOf('full-overflow', vm, clock, 1)));
    await z!.slots.read();
    await z!.slots.take({ ...eventAt('vm-z'), eventStatus: 'Started' }, 'started', { by: 'azure', via: 'imds' });
    let asked = 0;
    const held = await heldOf(a!.slots.take(eventAt('vm-a'), 'early', api, undefined, async () => (asked++, [])));
    expect(held.message).toMatch(/^group full-overflow allows 1 member in maintenance at once; held by vm-z /);
    expect(asked).toBe(0);
    expect(Object.keys(await records(a!))).toEqual([`slot-x-${z!.key}`]);
  });

  it('an event Started while the member holds a slot joins it; one Started before any read takes a free slot, as started', async () => {
    const clock = { now: T0 };
    const a = await slotsOf('started-held', 'vm-a', clock);
    const e1 = eventAt('vm-a');
    await a.slots.take(e1, 'early', api);
    const e2 = { ...eventAt('vm-a'), eventStatus: 'Started' as const };
    expect(await a.slots.take(e2, 'started', { by: 'azure', via: 'imds' })).toMatchObject({ slot: 'slot-0', writes: [{ name: 'slot-0' }] });
    expect(await records(a)).toEqual({ 'slot-0': expect.objectContaining({ eventIds: [e1.eventId, e2.eventId] }) });
    const b = await slotsOf('started-unread', 'vm-b', clock);
    const eb = { ...eventAt('vm-b'), eventStatus: 'Started' as const };
    expect(await b.slots.take(eb, 'started', { by: 'azure', via: 'imds' })).toMatchObject({ slot: 'slot-0', writes: [{ name: 'slot-0' }] });
    expect(await records(b)).toEqual({ 'slot-0': expect.objectContaining({ member: b.key, mode: 'started', eventIds: [eb.eventId] }) });
  });

  it('down past the budget when its event Started: said loudly, naming the other holders, not itself', async () => {
    const clock = { now: T0 };
    const [c, a] = await Promise.all(['vm-c', 'vm-a'].map((vm) => slotsOf('started-past', vm, clock, 1)));
    await c!.slots.take(eventAt('vm-c'), 'early', api);
    await a!.slots.read();
    await a!.slots.take({ ...eventAt('vm-a'), eventStatus: 'Started' }, 'started', { by: 'azure', via: 'imds' });
    expect(a!.lines.find((l) => l.code === 'FLEET_OVER_BUDGET')).toMatchObject({
      slot: `slot-x-${a!.key}`,
      mode: 'started',
      holders: [expect.objectContaining({ vm: 'vm-c' })],
    });
  });

  it('zones not configured: members of different zones go down together', async () => {
    const clock = { now: T0 };
    const [a, b] = await Promise.all(['vm-a', 'vm-b'].map((vm) => slotsOf('no-zones', vm, clock, 2)));
    Object.assign(a!.vm, { zone: '1' });
    Object.assign(b!.vm, { zone: '2' });
    await b!.slots.take(eventAt('vm-b'), 'early', api);
    expect((await records(b!))['slot-0']).toMatchObject({ zone: '2' });
    expect(await a!.slots.take(eventAt('vm-a'), 'early', api)).toMatchObject({ slot: 'slot-1' });
  });

  it('read back, zones one at a time: a member of another zone that took another slot meanwhile holds the early one back', async () => {
    const clock = { now: T0 };
    const gate = new Gate();
    const a = await slotsOf('zones-read-back', 'vm-a', clock, 2, '1', gated(slotWrite, gate));
    const b = await slotsOf('zones-read-back', 'vm-b', clock, 2, '2');
    gate.armed = true;
    const asked = outcome(a.slots.take(eventAt('vm-a'), 'early', api));
    await waitFor(() => gate.reached, "a's slot write", 10_000, 5);
    // b is second in the queue: it takes slot-1, a writes slot-0
    expect(await b.slots.take(eventAt('vm-b'), 'early', api, async () => 1)).toMatchObject({ slot: 'slot-1' });
    gate.open();
    expect(await asked).toBe('HELD');
    expect(await records(a)).toMatchObject({ 'slot-0': { member: null }, 'slot-1': { member: b.key } });
  });

  it('renewed, the recorded end is the latest of its events', async () => {
    const clock = { now: T0 };
    const a = await slotsOf('renew-two', 'vm-a', clock);
    const e1 = eventAt('vm-a');
    const e2 = eventAt('vm-a', { notBefore: new Date(T0 + 60 * 60_000).toISOString() });
    await a.slots.take(e1, 'early', api);
    await a.slots.take(e2, 'early', api);
    const moved = (e: ScheduledEvent, minutes: number) => ({ ...e, notBefore: new Date(T0 + minutes * 60_000).toISOString() });
    await a.slots.renew({ incarnation: 2, events: [moved(e1, 100), moved(e2, 70)] });
    expect((await records(a))['slot-0']!.until).toBe(new Date(T0 + 101 * 60_000).toISOString());
  });

  it('a slot lost while another is held: said with who holds the one it lost', async () => {
    const clock = { now: T0 };
    const [c, a, b] = await Promise.all(['vm-c', 'vm-a', 'vm-b'].map((vm) => slotsOf('lost-second', vm, clock, 2)));
    await c!.slots.take(eventAt('vm-c', { notBefore: new Date(T0 + 120 * 60_000).toISOString() }), 'early', api);
    await a!.slots.take(eventAt('vm-a'), 'early', api);
    clock.now = T0 + 16 * 60_000 + 1;
    expect(await b!.slots.take(eventAt('vm-b', { notBefore: new Date(T0 + 30 * 60_000).toISOString() }), 'early', api)).toMatchObject({
      slot: 'slot-1',
    });
    await a!.slots.read();
    expect(a!.lines.find((l) => l.code === 'FLEET_SLOT_LOST')).toMatchObject({ slot: 'slot-1', to: 'vm-b' });
  });

  it("a record in its name without events (another writer's): held for nothing, kept by a release, an event added to it alone", async () => {
    const clock = { now: T0 };
    const a = await slotsOf('no-events', 'vm-a', clock);
    const until = new Date(T0 + 60 * 60_000).toISOString();
    await a.store.put('slot-0', { member: a.key, vm: 'vm-a', since: new Date(T0).toISOString(), until, mode: 'early' }, null);
    await a.slots.read();
    expect(a.slots.heldFor).toEqual([]);
    await a.slots.release(() => []);
    expect((await records(a))['slot-0']).toMatchObject({ member: a.key });
    const e = eventAt('vm-a');
    await a.slots.take(e, 'early', api);
    expect((await records(a))['slot-0']!.eventIds).toEqual([e.eventId]);
  });

  it("its view of its slot follows its own writes: another member's record written, or another record removed, leaves its slot held", async () => {
    const clock = { now: T0 };
    const a = await slotsOf('own-view', 'vm-a', clock, 2);
    await a.slots.take(eventAt('vm-a'), 'early', api);
    const other = { ...(await records(a))['slot-0']!, member: 'k-other', vm: 'vm-o' };
    expect(await a.slots.write('slot-1', other, null)).toMatchObject({ name: 'slot-1' });
    expect(a.slots.held?.name).toBe('slot-0');
    expect(await a.slots.remove('slot-1', (await a.store.get('slot-1'))!.version)).toBe(true);
    expect(a.slots.held?.name).toBe('slot-0');
  });

  it('an overflow record given back after another writer rewrote it: read again, and deleted at its new version', async () => {
    const clock = { now: T0 };
    const lost = { count: 0, max: 0 };
    const a = await slotsOf('overflow-moved', 'vm-a', clock);
    const b = await slotsOf('overflow-moved', 'vm-b', clock, 1, null, overtaken(lost));
    await a.slots.take(eventAt('vm-a'), 'early', api);
    await b.slots.take(eventAt('vm-b'), 'forced', api);
    lost.max = 1;
    await b.slots.release(() => []);
    expect(lost.count).toBe(1);
    expect(Object.keys(await records(b))).toEqual(['slot-0']);
  });
});

describe('a maintenance of several members', () => {
  const named = (ms: Slots[]): Named[] => ms.map((m) => ({ key: m.key, vm: m.vm }));
  const ctx = (m: Slots, config: ReturnType<typeof asBudget>) => ({
    config,
    store: m.store,
    logger: pino({ level: 'debug' }, { write: (s: string) => void m.lines.push(JSON.parse(s) as Record<string, unknown>) }),
    slots: m.slots,
    now: () => m.clock.now,
    me: m.key,
    k: () => m.k,
  });
  const configOf = (group: string, k: number) =>
    asBudget(
      FleetConfig.parse({ group, maxUnavailable: k, store: fleetStores().config('kubernetes'), marginSeconds: 60, heartbeatSeconds: 20 }),
    );

  it('names the members an event lists, itself first; none when it lists no other', () => {
    const me = { key: 'k-a', vm: { name: 'vm-a', resourceId: null } };
    const members = [
      { member: 'k-a', vm: 'vm-a', resourceId: null },
      { member: 'k-b', vm: 'vm-b', resourceId: null, zone: '2' },
      { member: 'k-c', vm: 'vm-c', resourceId: null },
    ] as never;
    expect(namedIn({ resources: ['vm-a', 'VM-B'] }, me, members)).toEqual([
      me,
      { key: 'k-b', vm: { name: 'vm-b', resourceId: null, zone: '2' } },
    ]);
    expect(namedIn({ resources: ['vm-a'] }, me, members)).toEqual([]);
    expect(downText('g', named([]))).toBe('this maintenance takes 0 members of g down at once ()');
    expect(downText('g', [me, { key: 'k-b', vm: { name: 'vm-b', resourceId: null } }])).toBe(
      'this maintenance takes 2 members of g down at once (vm-a, vm-b)',
    );
  });

  it("writes a slot in each named member's name, adds the event to a slot one holds already, and writes nothing once all hold it", async () => {
    const clock = { now: T0 };
    const group = 'many-extend';
    const [a, b, c] = await Promise.all(['vm-a', 'vm-b', 'vm-c'].map((vm) => slotsOf(group, vm, clock, 3)));
    const config = configOf(group, 3);
    const eb = eventAt('vm-b');
    await b!.slots.take(eb, 'early', api);
    const e = eventAt('vm-a', { resources: ['vm-a', 'vm-b', 'vm-c'] });
    const taken = await takeForAll(ctx(a!, config), e, named([a!, b!, c!]), 'early', api);
    expect(taken).toMatchObject({ forced: false, slot: 'slot-1' });
    expect(taken.writes.map((w) => w.name).sort()).toEqual(['slot-0', 'slot-1', 'slot-2']);
    const held = await records(a!);
    expect(held['slot-0']).toMatchObject({ vm: 'vm-b', eventIds: [eb.eventId, e.eventId] });
    expect(held['slot-1']).toMatchObject({ vm: 'vm-a', eventIds: [e.eventId], mode: 'early' });
    expect(held['slot-2']).toMatchObject({ vm: 'vm-c', eventIds: [e.eventId], mode: 'early' });
    // each slot written anew counts its take; the slot a member held already is not taken again
    expect([held['slot-0']!.takes, held['slot-1']!.takes, held['slot-2']!.takes]).toEqual([1, 1, 1]);
    expect(a!.slots.heldFor).toEqual([e.eventId]);
    expect(a!.lines.find((l) => l.msg === 'fleet budget: 3 slots taken for one maintenance')).toMatchObject({
      eventId: e.eventId,
      group,
      mode: 'early',
      members: ['vm-a', 'vm-b', 'vm-c'],
      slots: ['slot-0', 'slot-1', 'slot-2'],
    });
    expect(await takeForAll(ctx(a!, config), e, named([a!, b!, c!]), 'early', api)).toEqual({ forced: false, slot: 'slot-1', writes: [] });
    // the group allows one now: what all hold already is still theirs, not held
    a!.k = 1;
    expect(await takeForAll(ctx(a!, config), e, named([a!, b!, c!]), 'early', api)).toEqual({ forced: false, slot: 'slot-1', writes: [] });
  });

  it('forced with too few slots: an overflow record for each member left, the note says how many go down; early, held and nothing kept', async () => {
    const clock = { now: T0 };
    const group = 'many-forced';
    const [a, b, c, d] = await Promise.all(['vm-a', 'vm-b', 'vm-c', 'vm-d'].map((vm) => slotsOf(group, vm, clock, 2)));
    const config = configOf(group, 2);
    await d!.slots.take(eventAt('vm-d'), 'early', api);
    const e = eventAt('vm-a', { resources: ['vm-a', 'vm-b', 'vm-c'] });
    const held = await heldOf(takeForAll(ctx(a!, config), e, named([a!, b!, c!]), 'early', api));
    expect(held).toMatchObject({
      code: 'HELD',
      message: `${downText(group, named([a!, b!, c!]))}; the group allows 2 and has not that many slots free`,
    });
    expect(held.holders).toEqual([expect.objectContaining({ vm: 'vm-d' })]);
    expect(Object.keys(await records(a!))).toEqual(['slot-0']);
    const forced = await takeForAll(ctx(a!, config), e, named([a!, b!, c!]), 'forced', api);
    expect(forced).toMatchObject({ forced: true, slot: 'slot-1', note: downText(group, named([a!, b!, c!])) });
    const now = await records(a!);
    expect(now['slot-1']).toMatchObject({ vm: 'vm-a', mode: 'early' });
    expect(now[`slot-x-${b!.key}`]).toMatchObject({ vm: 'vm-b', mode: 'forced' });
    expect(now[`slot-x-${c!.key}`]).toMatchObject({ vm: 'vm-c', mode: 'forced' });
  });

  it('counts a member not healthy that it does not take down and that holds no slot; its turn in the queue holds it too', async () => {
    const clock = { now: T0 };
    const unwell = (key: string, vm: string) => ({ key, vm, since: new Date(T0).toISOString(), why: 'its check failed' });
    // c is taken down by it anyway: not counted; z holds a slot: counted once, as a holder
    const [a, c, z] = await Promise.all(['vm-a', 'vm-c', 'vm-z'].map((vm) => slotsOf('many-sick', vm, clock, 3)));
    await z!.slots.take(eventAt('vm-z'), 'early', api);
    const e = eventAt('vm-a', { resources: ['vm-a', 'vm-c'] });
    const taken = await takeForAll(ctx(a!, configOf('many-sick', 3)), e, named([a!, c!]), 'early', api, undefined, async () => [
      unwell(c!.key, 'vm-c'),
      unwell(z!.key, 'vm-z'),
    ]);
    expect(taken.writes).toHaveLength(2);
    // two members not healthy, not named: one slot left of three, too few for two
    const [b, d] = await Promise.all(['vm-b', 'vm-d'].map((vm) => slotsOf('many-sick-2', vm, clock, 3)));
    const sick = [unwell('k-x', 'vm-x'), unwell('k-y', 'vm-y')];
    const e2 = eventAt('vm-b', { resources: ['vm-b', 'vm-d'] });
    const held = await heldOf(
      takeForAll(ctx(b!, configOf('many-sick-2', 3)), e2, named([b!, d!]), 'early', api, undefined, async () => sick),
    );
    expect(held.message).toMatch(/the group allows 3 and has not that many slots free; .*vm-x.*vm-y/);
    expect(held.unhealthy).toEqual(sick);
    // its turn has not come: asked with three free for two
    const turns: [number, number][] = [];
    await heldOf(
      takeForAll(ctx(b!, configOf('many-sick-2', 3)), e2, named([b!, d!]), 'early', api, async (f, n) => (turns.push([f, n]), null)),
    );
    expect(turns).toEqual([[3, 2]]);
    expect(await records(b!)).toEqual({});
  });

  it('zones one at a time: a maintenance that spans two zones is held, early', async () => {
    const clock = { now: T0 };
    const group = 'many-zones';
    const [a, c] = await Promise.all([slotsOf(group, 'vm-a', clock, 2, '1'), slotsOf(group, 'vm-c', clock, 2, '2')]);
    const config = asBudget(
      FleetConfig.parse({
        group,
        maxUnavailable: 2,
        store: fleetStores().config('kubernetes'),
        marginSeconds: 60,
        heartbeatSeconds: 20,
        zones: 'one-at-a-time',
      }),
    );
    const e = eventAt('vm-a', { resources: ['vm-a', 'vm-c'] });
    const held = await heldOf(takeForAll(ctx(a, config), e, named([a, c]), 'early', api));
    expect(held.message).toMatch(/; this maintenance spans zones 1 and 2$/);
    expect(held.reason).toBe('zone');
    expect(await takeForAll(ctx(a, config), e, named([a, c]), 'forced', api)).toMatchObject({
      forced: true,
      note: downText(group, named([a, c])),
    });
    // all hold it now: forced again, nothing written, the note said again
    expect(await takeForAll(ctx(a, config), e, named([a, c]), 'forced', api)).toEqual({
      forced: true,
      slot: 'slot-0',
      writes: [],
      note: downText(group, named([a, c])),
    });
  });

  it('second in the queue, it writes the free slots its place names', async () => {
    const clock = { now: T0 };
    const group = 'many-turn';
    const [a, c] = await Promise.all([slotsOf(group, 'vm-a', clock, 3), slotsOf(group, 'vm-c', clock, 3)]);
    const config = configOf(group, 3);
    const e = eventAt('vm-a', { resources: ['vm-a', 'vm-c'] });
    const taken = await takeForAll(ctx(a, config), e, named([a, c]), 'early', api, async () => 1);
    expect(taken.writes.map((w) => [w.name, w.record.vm])).toEqual([
      ['slot-1', 'vm-a'],
      ['slot-2', 'vm-c'],
    ]);
    expect(taken.slot).toBe('slot-1');
    // forced, it waits for no turn
    await a.slots.release(() => []);
    await c.slots.read();
    await c.slots.release(() => []);
    const forced = eventAt('vm-a', { resources: ['vm-a', 'vm-c'] });
    expect(await takeForAll(ctx(a, config), forced, named([a, c]), 'forced', api, async () => null)).toMatchObject({ forced: true });
  });

  it('zones not configured: a maintenance across two zones is approved early', async () => {
    const clock = { now: T0 };
    const group = 'many-no-zones';
    const [a, c] = await Promise.all([slotsOf(group, 'vm-a', clock, 2), slotsOf(group, 'vm-c', clock, 2)]);
    Object.assign(a.vm, { zone: '1' });
    Object.assign(c.vm, { zone: '2' });
    const e = eventAt('vm-a', { resources: ['vm-a', 'vm-c'] });
    expect(await takeForAll(ctx(a, configOf(group, 2)), e, named([a, c]), 'early', api)).toMatchObject({ forced: false, slot: 'slot-0' });
  });

  it('members down outside the slots (a Started overflow record) leave too few: held before any slot is written', async () => {
    const clock = { now: T0 };
    const group = 'many-overflow';
    const [z, a, c] = await Promise.all(['vm-z', 'vm-a', 'vm-c'].map((vm) => slotsOf(group, vm, clock, 2)));
    await z!.slots.read();
    await z!.slots.take({ ...eventAt('vm-z'), eventStatus: 'Started' }, 'started', { by: 'azure', via: 'imds' });
    const e = eventAt('vm-a', { resources: ['vm-a', 'vm-c'] });
    expect(await outcome(takeForAll(ctx(a!, configOf(group, 2)), e, named([a!, c!]), 'early', api))).toBe('HELD');
    expect(Object.keys(await records(a!))).toEqual([`slot-x-${z!.key}`]);
  });

  it("a member's slot without events (another writer's) gets this one alone", async () => {
    const clock = { now: T0 };
    const group = 'many-no-events';
    const [a, c] = await Promise.all([slotsOf(group, 'vm-a', clock, 2), slotsOf(group, 'vm-c', clock, 2)]);
    const until = new Date(T0 + 60 * 60_000).toISOString();
    await c.store.put('slot-0', { member: c.key, vm: 'vm-c', since: new Date(T0).toISOString(), until, mode: 'early' }, null);
    const e = eventAt('vm-a', { resources: ['vm-a', 'vm-c'] });
    await takeForAll(ctx(a, configOf(group, 2)), e, named([a, c]), 'early', api);
    expect(await records(a)).toMatchObject({ 'slot-0': { member: c.key, eventIds: [e.eventId] }, 'slot-1': { member: a.key } });
  });

  it('writes lost to another writer round after round: tried eight times, then held; a release tried eight times, then left', async () => {
    const clock = { now: T0 };
    const group = 'overtaken';
    const lost = { count: 0, max: Infinity };
    const a = await slotsOf(group, 'vm-a', clock, 2, null, overtaken(lost));
    const c = await slotsOf(group, 'vm-c', clock, 2);
    const words = `group ${group} allows 2 members in maintenance at once; the slots were being taken by other members`;
    expect((await heldOf(a.slots.take(eventAt('vm-a'), 'early', api))).message).toBe(words);
    expect(lost.count).toBe(8);
    // its turn come, the same
    lost.count = 0;
    expect((await heldOf(a.slots.take(eventAt('vm-a'), 'early', api, async () => 0))).message).toBe(words);
    expect(lost.count).toBe(8);
    lost.count = 0;
    const e = eventAt('vm-a', { resources: ['vm-a', 'vm-c'] });
    expect(await outcome(takeForAll(ctx(a, configOf(group, 2)), e, named([a, c]), 'early', api))).toBe('HELD');
    expect(lost.count).toBe(8);
    // a slot held, and every write of its release lost: tried eight times, the slot left in its name
    lost.max = 0;
    await a.slots.take(eventAt('vm-a'), 'early', api);
    lost.count = 0;
    lost.max = Infinity;
    await a.slots.release(() => []);
    expect(lost.count).toBe(8);
    expect((await records(a))['slot-0']).toMatchObject({ member: a.key });
  });

  it('a write lost once is tried again from a fresh read, and the maintenance approved', async () => {
    const clock = { now: T0 };
    const group = 'overtaken-once';
    const lost = { count: 0, max: 1 };
    const a = await slotsOf(group, 'vm-a', clock, 2, null, overtaken(lost));
    const c = await slotsOf(group, 'vm-c', clock, 2);
    const e = eventAt('vm-a', { resources: ['vm-a', 'vm-c'] });
    const taken = await takeForAll(ctx(a, configOf(group, 2)), e, named([a, c]), 'early', api);
    expect(taken.writes.map((w) => w.name).sort()).toEqual(['slot-0', 'slot-1']);
    expect(lost.count).toBe(1);
  });

  it('read back with a member not healthy: one more down meanwhile takes the group past its budget, and every slot written is given back', async () => {
    const clock = { now: T0 };
    const group = 'many-sick-read-back';
    const gate = new Gate();
    const a = await slotsOf(group, 'vm-a', clock, 3, null, gated(slotWrite, gate));
    const [b, c] = await Promise.all(['vm-b', 'vm-c'].map((vm) => slotsOf(group, vm, clock, 3)));
    await b!.slots.read();
    let asked = 0;
    const unwell = async () => (asked++, [{ key: 'k-z', vm: 'vm-z', since: new Date(T0).toISOString(), why: 'its check failed' }]);
    gate.armed = true;
    const e = eventAt('vm-a', { resources: ['vm-a', 'vm-c'] });
    const taken = outcome(takeForAll(ctx(a, configOf(group, 3)), e, named([a, c!]), 'early', api, undefined, unwell));
    await waitFor(() => gate.reached, "a's slot write", 10_000, 5);
    await b!.slots.take({ ...eventAt('vm-b'), eventStatus: 'Started' }, 'started', { by: 'azure', via: 'imds' });
    gate.open();
    expect(await taken).toBe('HELD');
    expect(await records(a)).toMatchObject({ 'slot-0': { member: null }, 'slot-1': { member: null } });
    // held at once, not tried again while the group is past its budget: the members' health read once
    expect(asked).toBe(1);
  });
});
