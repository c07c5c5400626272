/**
 * The fleet budget over its two real stores: Azure Blob Storage served by Azurite (Microsoft's
 * emulator, started on 127.0.0.1 at a free port) through the project's Blob REST client (the
 * fleet store's own, src/fleet/budget/stores/blob-rest.ts), and coordination.k8s.io/v1 Leases
 * served by the project's Kubernetes API stand-in (no API server can run here; written from the
 * API reference) through the project's Kubernetes client (src/kube). Each store sits behind a TCP
 * gate so a test can make it unreachable and bring it back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApprovalError } from '../../src/approval/service.ts';
import { FleetConfig } from '../../src/fleet/budget/config.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import { readGroup } from '../../src/fleet/budget/group.ts';
import { groupText } from '../../src/fleet/budget/group-text.ts';
import { asSlot, type MemberRecord } from '../../src/fleet/budget/records.ts';
import { windowsOf } from '../../src/fleet/budget/windows.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ROOT, waitFor } from '../helpers.ts';
import { FleetStores, outcome, scheduledFor, STORE_KINDS, type StoreKind } from '../../testkit/fleet-stores.ts';
import { budgetMember, type Member } from '../../testkit/fleet-members.ts';
import { leaseVerb } from '../../testkit/kube-lease-meter.ts';

let stores: FleetStores;

beforeAll(async () => {
  stores = await FleetStores.start();
}, 60_000);

afterAll(async () => {
  await stores?.stop();
});

const storeConfig = (kind: StoreKind) => stores.config(kind);

const eventFor = scheduledFor;

const member = (kind: StoreKind, group: string, name: string, more: Partial<FleetConfig> = {}): Promise<Member> =>
  budgetMember(stores, kind, group, name, more);

const api = { by: 'test', via: 'api' } as const;

describe.each(STORE_KINDS)('fleet budget over the %s store', (kind) => {
  it('two members racing for the last slot 200 times: exactly one wins each time, and both win some', async () => {
    const group = `race-${kind}`;
    const [a, b] = await Promise.all([member(kind, group, 'vm-a'), member(kind, group, 'vm-b')]);
    const wins = { a: 0, b: 0 };
    for (let round = 0; round < 200; round++) {
      const ea = eventFor('vm-a');
      const eb = eventFor('vm-b');
      // who asks first changes from round to round: both reach the store's conditional write
      const takeA = () => outcome(a.budget.take(ea, api));
      const takeB = () => outcome(b.budget.take(eb, api));
      const [ra, rb] = round % 2 === 0 ? await Promise.all([takeA(), takeB()]) : (await Promise.all([takeB(), takeA()])).reverse();
      expect([ra, rb].sort(), `round ${round}`).toEqual(['HELD', 'granted']);
      const winner = ra === 'granted' ? a : b;
      if (winner === a) wins.a += 1;
      else wins.b += 1;
      // the winner's maintenance is over: it gives the slot back at its next read
      await winner.read([]);
      expect(winner.budget.state().slot).toBeNull();
    }
    expect(wins.a + wins.b).toBe(200);
    expect(wins.a).toBeGreaterThan(0);
    expect(wins.b).toBeGreaterThan(0);
    // the stand-in counts its answers: losers of the conditional write were told 409
    if (kind === 'kubernetes') expect(stores.kube.leases.writes.get(409) ?? 0).toBeGreaterThan(0);
  }, 120_000);

  it('a held approval names who holds the slot; forced goes past the budget on the record, and counts against it', async () => {
    const group = `held-${kind}`;
    const [a, b, c] = await Promise.all([member(kind, group, 'vm-a'), member(kind, group, 'vm-b'), member(kind, group, 'vm-c')]);
    const ea = eventFor('vm-a');
    expect(await a.budget.take(ea, api)).toMatchObject({ forced: false, slot: 'slot-0' });
    const eb = eventFor('vm-b');
    const held = await b.budget.take(eb, api).catch((e: unknown) => e as ApprovalError);
    expect(held).toBeInstanceOf(ApprovalError);
    expect((held as ApprovalError).status).toBe(409);
    expect((held as ApprovalError).body(eb.eventId)).toMatchObject({
      eventId: eb.eventId,
      status: 'held',
      holders: [{ vm: 'vm-a', eventId: ea.eventId }],
      error: { code: 'HELD' },
    });
    expect((held as ApprovalError).reason).toBe('budget');
    expect(await b.budget.take(eb, { ...api, force: true, reason: 'hotfix' })).toMatchObject({ forced: true });
    // vm-a is back, but vm-b (forced) is still down: the group's one slot is spoken for
    await a.read([]);
    const ec = eventFor('vm-c');
    const heldByForced = await c.budget.take(ec, api).catch((e: unknown) => e as ApprovalError);
    expect((heldByForced as ApprovalError).holders.map((h) => h.vm)).toEqual(['vm-b']);
    await b.read([]);
    // its overflow record given back is deleted, not left for every later read of the slots
    const store = await openFleetStore(FleetConfig.parse({ group, maxUnavailable: 1, store: storeConfig(kind) }).store, group);
    expect((await store.list('slot-x-')).map((r) => r.name)).toEqual([]);
    expect(await c.budget.take(ec, api)).toMatchObject({ forced: false, slot: 'slot-0' });
  });

  it('a slot is given back only once the event is over and its preparations were given back', async () => {
    const group = `release-${kind}`;
    const [a, b] = await Promise.all([member(kind, group, 'vm-a'), member(kind, group, 'vm-b')]);
    const ea = eventFor('vm-a');
    await a.budget.take(ea, api);
    await a.read([{ ...ea, eventStatus: 'Started', notBefore: null }]);
    expect(a.budget.state().slot?.eventIds).toEqual([ea.eventId]);
    a.givenBack = false;
    await a.read([]);
    expect(a.budget.state().slot?.eventIds).toEqual([ea.eventId]);
    expect(await outcome(b.budget.take(eventFor('vm-b'), api))).toBe('HELD');
    a.givenBack = true;
    await a.read([]);
    expect(a.budget.state().slot).toBeNull();
    expect(await outcome(b.budget.take(eventFor('vm-b'), api))).toBe('granted');
  });

  it('IMDS refused the approval: the slot its take wrote is given back, even renewed since; an event the slot held before keeps it', async () => {
    const group = `abandon-${kind}`;
    const [a, b] = await Promise.all([member(kind, group, 'vm-a', { maxUnavailable: 2 }), member(kind, group, 'vm-b')]);
    const ea = eventFor('vm-a');
    await a.read([ea]);
    expect(await a.budget.take(ea, api)).toMatchObject({ slot: 'slot-0' });
    // a read past its NotBefore, within its margin, renews it (its recorded end moved by more than a heartbeat): a new version
    const renewedFrom = a.budget.state().slot!.until;
    a.now = Date.parse(ea.notBefore!) + 30_000;
    await a.read([ea]);
    expect(a.budget.state().slot!.until).not.toBe(renewedFrom);
    await a.budget.abandon(ea.eventId);
    expect(a.budget.state().slot).toBeNull();
    expect(await outcome(b.budget.take(eventFor('vm-b'), api))).toBe('granted');

    // vm-c is down for its own maintenance (Started): another of its events shares the slot; that one refused, the first keeps it
    const c = await member(kind, group, 'vm-c', { maxUnavailable: 2 });
    const started = eventFor('vm-c', { eventStatus: 'Started', notBefore: null });
    const next = eventFor('vm-c');
    await c.read([started, next]);
    expect(c.budget.state().slot).toMatchObject({ eventIds: [started.eventId], mode: 'started' });
    expect(await c.budget.take(next, api)).toMatchObject({ slot: c.budget.state().slot!.name });
    expect(c.budget.state().slot!.eventIds).toEqual([started.eventId, next.eventId]);
    await c.budget.abandon(next.eventId);
    expect(c.budget.state().slot!.eventIds).toEqual([started.eventId]);
    // asked for an event its slot held already, the take writes nothing, and a refusal gives nothing back
    expect(await c.budget.take({ ...started, eventStatus: 'Scheduled' }, api)).toMatchObject({ slot: c.budget.state().slot!.name });
    await c.budget.abandon(started.eventId);
    expect(c.budget.state().slot!.eventIds).toEqual([started.eventId]);
    const store = await openFleetStore(FleetConfig.parse({ group, maxUnavailable: 2, store: storeConfig(kind) }).store, group);
    expect(
      (await store.list('slot-'))
        .map((r) => asSlot(r.value))
        .filter((x) => x.member !== null)
        .map((x) => x.vm)
        .sort(),
    ).toEqual(['vm-b', 'vm-c']);
  });

  it('an event that Started at NotBefore without an early approval takes a slot: the others wait for it', async () => {
    const group = `started-${kind}`;
    const [a, b] = await Promise.all([member(kind, group, 'vm-a'), member(kind, group, 'vm-b')]);
    const ea = eventFor('vm-a', { eventStatus: 'Started', notBefore: null });
    await a.read([ea]);
    expect(a.budget.state().slot).toMatchObject({ eventIds: [ea.eventId], mode: 'started' });
    expect(await outcome(b.budget.take(eventFor('vm-b'), api))).toBe('HELD');
  });

  it('a holder that stops renewing keeps its slot until its recorded end, then it is taken over', async () => {
    const group = `takeover-${kind}`;
    const [a, b] = await Promise.all([member(kind, group, 'vm-a'), member(kind, group, 'vm-b')]);
    const t0 = Date.now();
    a.now = t0;
    b.now = t0;
    // NotBefore in 1 minute, 30 s of impact, 60 s of margin: recorded end at t0 + 150 s
    const ea = eventFor('vm-a', { notBefore: new Date(t0 + 60_000).toISOString(), durationInSeconds: 30 });
    await a.budget.take(ea, api);
    b.now = t0 + 149_000;
    expect(await outcome(b.budget.take(eventFor('vm-b'), api))).toBe('HELD');
    b.now = t0 + 151_000;
    expect(await b.budget.take(eventFor('vm-b'), api)).toMatchObject({ slot: 'slot-0' });
    expect(b.lines.find((l) => l.code === 'FLEET_SLOT_TAKEN_OVER')).toMatchObject({ from: 'vm-a', eventIds: [ea.eventId] });
    // the old holder learns it at its next heartbeat, and gives back nothing of the new holder's
    await a.budget.heartbeat();
    expect(a.budget.state().slot).toBeNull();
    await a.read([]);
    expect(b.budget.state().slot?.name).toBe('slot-0');
  });

  it('the store unreachable: early approvals fail closed (503), forced ones pass on the record, and it recovers by itself', async () => {
    const group = `outage-${kind}`;
    const [a, b] = await Promise.all([member(kind, group, 'vm-a'), member(kind, group, 'vm-b')]);
    await a.budget.heartbeat();
    const gate = stores.gates[kind];
    gate.close();
    try {
      const err = await a.budget.take(eventFor('vm-a'), api).catch((e: unknown) => e as ApprovalError);
      expect(err).toBeInstanceOf(ApprovalError);
      expect((err as ApprovalError).code).toBe('FLEET_STORE_UNAVAILABLE');
      expect((err as ApprovalError).status).toBe(503);
      expect((err as ApprovalError).body('x')).toMatchObject({ status: 'held', error: { code: 'FLEET_STORE_UNAVAILABLE' } });
      expect(a.budget.state()).toMatchObject({ storeReachable: false });
      expect(a.budget.state().lastError).toMatch(/./);
      expect(a.lines.filter((l) => l.code === 'FLEET_STORE_UNAVAILABLE')).toHaveLength(1);
      const forced = await b.budget.take(eventFor('vm-b'), { ...api, force: true, reason: 'the store is down and this cannot wait' });
      expect(forced).toMatchObject({ forced: true, slot: null });
      expect(forced.note).toMatch(/could not be/);
    } finally {
      gate.open();
    }
    expect(await a.budget.take(eventFor('vm-a'), api)).toMatchObject({ slot: 'slot-0' });
    expect(a.budget.state()).toMatchObject({ storeReachable: true, lastError: null });
  }, 60_000);

  it('each member writes its record at a heartbeat: its events, its slot, when it beat', async () => {
    const group = `members-${kind}`;
    const [a, b] = await Promise.all([
      member(kind, group, 'vm-a', { maxUnavailable: 2 }),
      member(kind, group, 'vm-b', { maxUnavailable: 2 }),
    ]);
    const ea = eventFor('vm-a');
    await a.read([ea]);
    await a.budget.take(ea, api);
    await a.budget.heartbeat();
    const beat = Date.now();
    b.now = beat;
    await b.budget.heartbeat();
    const store = await openFleetStore(FleetConfig.parse({ group, maxUnavailable: 2, store: storeConfig(kind) }).store, group);
    const members = (await store.list('member-')).map((r) => r.value as MemberRecord).sort((x, y) => x.vm.localeCompare(y.vm));
    expect(members.map((m) => m.vm)).toEqual(['vm-a', 'vm-b']);
    expect(members[0]).toMatchObject({ slot: 'slot-0', events: [{ eventId: ea.eventId, status: 'Scheduled', approved: true }] });
    expect(members[1]).toMatchObject({ slot: null, events: [] });
    expect(members[1]!.heartbeatAt).toBe(new Date(beat).toISOString());
    const slots = await store.list('slot-');
    expect(slots.map((s) => asSlot(s.value).vm)).toEqual(['vm-a']);
  });

  it('a held approval is seen outside the log: the member record says held by the budget, by whom, since when; fleet status and status print it', async () => {
    const group = `held-seen-${kind}`;
    const [a, b] = await Promise.all([member(kind, group, 'vm-a'), member(kind, group, 'vm-b')]);
    const ea = eventFor('vm-a');
    const eb = eventFor('vm-b');
    const heldAt = Date.now();
    b.now = heldAt;
    await a.read([ea]);
    await b.read([eb]);
    await a.budget.take(ea, api);
    expect(await outcome(b.budget.take(eb, api))).toBe('HELD');
    await b.budget.heartbeat();
    const config = FleetConfig.parse({ group, maxUnavailable: 1, store: storeConfig(kind) });
    const g = await readGroup(config);
    const held = g.members.find((m) => m.vm === 'vm-b')!.events[0]!.held!;
    expect(held.by).toEqual(['vm-a']);
    expect(held.since).toBe(new Date(heldAt).toISOString());
    expect(groupText(g, (h, rows) => [h, ...rows].map((r) => r.join(' | ')).join('\n'))).toContain(
      `Reboot Scheduled not before ${eb.notBefore}, held by the budget (slot held by vm-a) since ${held.since}`,
    );
    // once the slot is free and the approval goes through, the record says so no more
    a.givenBack = true;
    await a.read([]);
    await b.budget.take(eb, api);
    await b.budget.heartbeat();
    expect((await readGroup(config)).members.find((m) => m.vm === 'vm-b')!.events[0]!.held).toBeUndefined();
  });

  it("a drill is nobody else's business: never in a member record, at a read or a heartbeat, so no other member foretells a collision with it", async () => {
    const group = `drill-${kind}`;
    const [a, b] = await Promise.all([member(kind, group, 'vm-a'), member(kind, group, 'vm-b')]);
    const drill = eventFor('vm-a', { eventId: 'drill-7f1c2a3b-0000-4000-8000-000000000001' });
    const real = eventFor('vm-a');
    // what the read model holds while a drill plays: the drill's event beside the real ones
    await a.read([drill, real]);
    await a.budget.heartbeat();
    // vm-b is due at the same moment as the drill: only a real event could collide with it
    const eb = eventFor('vm-b', { notBefore: drill.notBefore });
    await b.read([eb]);
    const seen: MemberRecord[][] = [];
    const store = await openFleetStore(FleetConfig.parse({ group, maxUnavailable: 1, store: storeConfig(kind) }).store, group);
    seen.push((await store.list('member-')).map((r) => r.value as MemberRecord));
    const recordOf = (vm: string) => seen[0]!.find((m) => m.vm === vm)!;
    expect(recordOf('vm-a').events.map((e) => e.eventId)).toEqual([real.eventId]);
    expect(JSON.stringify(seen)).not.toContain('drill-');
    expect(windowsOf(seen[0]!, Date.now()).map((w) => w.eventId)).not.toContain(drill.eventId);
    // a record written by an older version that still shows a drill is read without it
    const old = { ...recordOf('vm-a'), events: [...recordOf('vm-a').events, { ...recordOf('vm-a').events[0]!, eventId: drill.eventId }] };
    expect(windowsOf([old], Date.now()).map((w) => w.eventId)).toEqual([real.eventId]);
  });
  it('a member held at the head of the queue watches the slots over Leases until it is granted (Blob Storage has no watch)', async () => {
    const group = `head-${kind}`;
    const [a, b] = await Promise.all([member(kind, group, 'vm-a'), member(kind, group, 'vm-b')]);
    const [ea, eb] = [eventFor('vm-a'), eventFor('vm-b')];
    await a.read([ea]);
    expect(await outcome(a.budget.take(ea, api))).toBe('granted');
    const policy = { by: 'policy', via: 'policy' } as const;
    const open = () => stores.kube.leases.watches.open;
    const before = open();
    for (let read = 0; read < 3; read++) await b.read([eb]);
    expect(await outcome(b.budget.take(eb, policy))).toBe('HELD');
    if (kind === 'kubernetes') await waitFor(() => open() === before + 1, "b's watch of the slots", 10_000, 10);
    else expect(open()).toBe(before);
    // a's maintenance is over: b, woken by its watch (Leases) or asking at its next read, takes the slot, and its watch is closed
    await a.read([]);
    if (kind === 'kubernetes') await waitFor(() => b.wakes > 0, 'b woken', 10_000, 10);
    expect(await outcome(b.budget.take(eb, policy))).toBe('granted');
    await waitFor(() => open() === before, "b's watch closed", 10_000, 10);
  });
});

describe('the Lease store, after the tests above', () => {
  it('uses exactly the verbs config/kubernetes/rbac.yaml grants it', () => {
    // the API server's verbs (a GET with watch=1 is a watch: the head of the queue watches the slots)
    const used = new Set(stores.kube.requests.flatMap((r) => leaseVerb(r.method, r.path) ?? []));
    const role = parseAllDocuments(readFileSync(join(ROOT, 'config', 'kubernetes', 'rbac.yaml'), 'utf8'))
      .map((d) => d.toJS() as { kind: string; rules?: { resources: string[]; verbs: string[] }[] })
      .find((d) => d.kind === 'Role')!;
    expect([...used].sort()).toEqual([...role.rules![0]!.verbs].sort());
  });
});
