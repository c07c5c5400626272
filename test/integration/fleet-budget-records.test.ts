/**
 * What the records of a group's store can make its budget do: every member may write every record,
 * so a record is counted only for what it says within its bounds. Over the budget's two real
 * stores: Azure Blob Storage served by Azurite (Microsoft's emulator) and coordination.k8s.io/v1
 * Leases served by the project's Kubernetes API stand-in (no API server can run here; written from
 * the API reference), each through the project's own client. Members run in this process, each a
 * real FleetBudget (or, as the relay acts in a member's name, a MemberSlots) on its own clock.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { asBudget, FleetConfig } from '../../src/fleet/budget/config.ts';
import { readGroup } from '../../src/fleet/budget/group.ts';
import { groupText } from '../../src/fleet/budget/group-text.ts';
import { asSlot, live, memberKey, overflowName } from '../../src/fleet/budget/records.ts';
import { MemberSlots } from '../../src/fleet/budget/slots.ts';
import { budgetMember, type Member } from '../../testkit/fleet-members.ts';
import { fleetStoresPerFile, memberVm, outcome, scheduledFor, STORE_KINDS, type StoreKind } from '../../testkit/fleet-stores.ts';

const fleetStores = fleetStoresPerFile();
const api = { by: 'test', via: 'api' } as const;

const member = (kind: StoreKind, group: string, name: string, more: Partial<FleetConfig> = {}): Promise<Member> =>
  budgetMember(fleetStores(), kind, group, name, more);

const keyOf = (name: string): string => memberKey(memberVm(name));

/** A slot record in `name`'s name whose recorded end passed long ago: it counts for nobody. */
const lapsedSlot = (name: string, eventIds: string[]) => ({
  ...{ member: keyOf(name), vm: name, resourceId: memberVm(name).resourceId, eventIds, mode: 'early' },
  ...{ since: '2020-01-01T00:00:00.000Z', until: '2020-01-01T00:00:01.000Z', by: 'nobody' },
});

describe.each(STORE_KINDS)('slot records in a member name, over the %s store', (kind) => {
  it("a slot record in a member's name past its recorded end is no slot of its: its take is counted, and held while the group is full", async () => {
    const group = `lapsed-${kind}`;
    const [a, b] = await Promise.all([member(kind, group, 'vm-a'), member(kind, group, 'vm-b')]);
    const [ea, eb] = [scheduledFor('vm-a'), scheduledFor('vm-b')];
    await Promise.all([a.read([ea]), b.read([eb])]);
    expect(await outcome(a.budget.take(ea, api))).toBe('granted');
    expect(await outcome(b.budget.take(eb, api))).toBe('HELD');
    // another writer puts a record in vm-b's name, holding vm-b's event, whose recorded end has passed
    const name = overflowName(keyOf('vm-b'));
    expect(await b.store.put(name, lapsedSlot('vm-b', [eb.eventId]), null)).not.toBeNull();
    await b.budget.heartbeat();
    expect(b.budget.state().slot).toBeNull();
    expect(await outcome(b.budget.take(eb, api))).toBe('HELD');
    // nothing was written in its name: the record is as it was put, and counts for nobody
    const after = await b.store.get(name);
    expect(asSlot(after?.value)).toMatchObject({ eventIds: [eb.eventId], until: '2020-01-01T00:00:01.000Z' });
    // once vm-a's maintenance is over the slot is free, and vm-b's take is counted like any other
    await a.read([]);
    expect(await b.budget.take(eb, api)).toMatchObject({ forced: false, slot: 'slot-0' });
  });

  it("as the relay acts in a member's name (MemberSlots): a lapsed record of it, with no event, is not extended past a full group", async () => {
    const group = `lapsed-relay-${kind}`;
    const a = await member(kind, group, 'vm-a');
    const ea = scheduledFor('vm-a');
    await a.read([ea]);
    expect(await outcome(a.budget.take(ea, api))).toBe('granted');
    expect(await a.store.put('slot-zzz', lapsedSlot('vm-b', []), null)).not.toBeNull();
    const config = asBudget(FleetConfig.parse({ group, maxUnavailable: 1, store: fleetStores().config(kind) }));
    const slots = new MemberSlots({
      config,
      store: a.store,
      logger: pino({ level: 'silent' }),
      me: () => ({ key: keyOf('vm-b'), vm: memberVm('vm-b') }),
      k: () => 1,
      now: Date.now,
    });
    const eb = scheduledFor('vm-b');
    expect(await outcome(slots.take(eb, 'early', { by: 'oncall', via: 'arm' }))).toBe('HELD');
    const down = (await a.store.list('slot-')).filter((r) => live(asSlot(r.value), Date.now())).map((r) => asSlot(r.value).vm);
    expect(down).toEqual(['vm-a']);
  });

  it('a member back from a reboot longer than its recorded end: said once, its Started event counted again at that read, given back after', async () => {
    const group = `long-reboot-${kind}`;
    const [a, b] = await Promise.all([member(kind, group, 'vm-a'), member(kind, group, 'vm-b')]);
    const t0 = Date.now();
    a.now = t0;
    b.now = t0;
    // NotBefore in a minute, 30 s of impact, 60 s of margin: recorded end at t0 + 150 s
    const ea = scheduledFor('vm-a', { notBefore: new Date(t0 + 60_000).toISOString(), durationInSeconds: 30 });
    await a.read([ea]);
    expect(await a.budget.take(ea, api)).toMatchObject({ slot: 'slot-0' });
    // a reboots and reads nothing until well past its recorded end; nobody took the slot over meanwhile
    a.now = t0 + 600_000;
    b.now = t0 + 600_000;
    await a.read([{ ...ea, eventStatus: 'Started', notBefore: null }]);
    expect(a.lines.filter((l) => l.code === 'FLEET_SLOT_LOST')).toMatchObject([{ slot: 'slot-0', to: null, eventIds: [ea.eventId] }]);
    expect(String(a.lines.find((l) => l.code === 'FLEET_SLOT_LOST')?.msg)).toMatch(/recorded end .* has passed/);
    expect(a.budget.state().slot).toMatchObject({ name: overflowName(keyOf('vm-a')), eventIds: [ea.eventId], mode: 'started' });
    const held = await b.budget.take(scheduledFor('vm-b'), api).catch((e: unknown) => e);
    expect(held).toMatchObject({ code: 'HELD', holders: [{ vm: 'vm-a', eventId: ea.eventId }] });
    // a renews what it holds now, at reads a heartbeat apart, and says nothing more
    a.now = t0 + 630_000;
    await a.read([{ ...ea, eventStatus: 'Started', notBefore: null }]);
    expect(a.lines.filter((l) => l.code === 'FLEET_SLOT_LOST')).toHaveLength(1);
    expect(Date.parse(a.budget.state().slot!.until!)).toBeGreaterThan(t0 + 630_000);
    // over: its overflow record is deleted, and b takes slot-0 over from a's lapsed record
    await a.read([]);
    expect(a.budget.state().slot).toBeNull();
    b.now = t0 + 631_000;
    expect(await b.budget.take(scheduledFor('vm-b'), api)).toMatchObject({ slot: 'slot-0' });
    expect((await a.store.list('slot-x-')).map((r) => r.name)).toEqual([]);
  });
});

describe.each(STORE_KINDS)('times in slot records, over the %s store', (kind) => {
  it('an event whose NotBefore is 9999-12-31: its slot reads back by its schema, live, its end at most a month on; the next member is held', async () => {
    const group = `far-${kind}`;
    const [a, b] = await Promise.all([member(kind, group, 'vm-a'), member(kind, group, 'vm-b')]);
    const ea = scheduledFor('vm-a', { notBefore: '9999-12-31T23:59:59Z', durationInSeconds: 2 ** 53 - 1 });
    await a.read([ea]);
    expect(await a.budget.take(ea, api)).toMatchObject({ slot: 'slot-0' });
    const now = Date.now();
    const written = asSlot((await b.store.get('slot-0'))?.value);
    expect(written).toMatchObject({ vm: 'vm-a', eventIds: [ea.eventId] });
    expect(live(written, now)).toBe(true);
    expect(Date.parse(written.until!)).toBeLessThanOrEqual(now + 31 * 86_400_000);
    expect(await outcome(b.budget.take(scheduledFor('vm-b'), api))).toBe('HELD');
  });

  it('a slot record that names a holder but does not read counts as held, with no end: no member takes it, and fleet status says why', async () => {
    const group = `unread-${kind}`;
    const a = await member(kind, group, 'vm-a');
    // an end no member can write as a time its schema reads (an older version wrote such ends)
    const odd = {
      member: 'vm-x-0000',
      vm: 'vm-x',
      eventIds: ['E-X'],
      since: new Date().toISOString(),
      until: '+010000-01-01T00:00:00.000Z',
    };
    expect(await a.store.put('slot-0', odd, null)).not.toBeNull();
    const held = await a.budget.take(scheduledFor('vm-a'), api).catch((e: unknown) => e);
    expect(held).toMatchObject({ code: 'HELD', holders: [{ vm: 'vm-x', eventId: 'E-X', until: null }] });
    expect(asSlot((await a.store.get('slot-0'))?.value)).toMatchObject({ member: 'vm-x-0000', unread: expect.stringMatching(/^until: /) });
    const g = await readGroup(FleetConfig.parse({ group, maxUnavailable: 1, store: fleetStores().config(kind) }));
    expect(g.slots).toMatchObject([{ slot: 'slot-0', vm: 'vm-x', until: null }]);
    expect(g.skipped).toMatchObject([{ key: 'slot-0', holder: 'vm-x' }]);
    const text = groupText(g, (h, rows) => [h, ...rows].map((r) => r.join(' | ')).join('\n'));
    expect(text).toContain(
      'Record slot-0 does not read (until: not an RFC 3339 time of the years 0000 to 9999): counted as held by vm-x, with no end, until it is written whole again or removed from the store.',
    );
    expect(a.lines.find((l) => l.code === 'FLEET_RECORD_SKIPPED')).toMatchObject({ key: 'slot-0', holder: 'vm-x' });
  });
});

describe.each(STORE_KINDS)('the members a percentage counts, over the %s store', (kind) => {
  it('"50%" of two members is one slot, whatever records that never go stale or beat from the future say', async () => {
    const group = `pct-${kind}`;
    const [a, b] = await Promise.all([
      member(kind, group, 'vm-a', { maxUnavailable: '50%' }),
      member(kind, group, 'vm-b', { maxUnavailable: '50%' }),
    ]);
    const [ea, eb] = [scheduledFor('vm-a'), scheduledFor('vm-b')];
    await Promise.all([a.read([ea]), b.read([eb])]);
    // records of no bridge: a heartbeat of 1970 that never goes stale (its period a trillion seconds), and heartbeats of the year 9999
    const fake = (i: number, more: Record<string, unknown>) =>
      a.store.put(
        `member-fake-${i}`,
        {
          member: `fake-${i}`,
          vm: `fake-${i}`,
          resourceId: null,
          slot: null,
          events: [],
          heartbeatAt: new Date().toISOString(),
          heartbeatSeconds: 30,
          ...more,
        },
        null,
      );
    for (let i = 0; i < 5; i++) expect(await fake(i, { heartbeatAt: '1970-01-01T00:00:00.000Z', heartbeatSeconds: 1e12 })).not.toBeNull();
    for (let i = 5; i < 10; i++) expect(await fake(i, { heartbeatAt: '9999-12-31T23:59:59.999Z' })).not.toBeNull();
    expect(await outcome(a.budget.take(ea, api))).toBe('granted');
    const held = await b.budget.take(eb, api).catch((e: unknown) => e);
    expect(held).toMatchObject({ code: 'HELD', message: expect.stringContaining('allows 1 member in maintenance at once') });
  });
});
