/**
 * Members that no longer exist, over the fleet budget's two real stores (Azurite, Microsoft's Blob
 * Storage emulator; the Kubernetes API stand-in for Leases, written from the API reference since
 * no API server can run here, through the project's Kubernetes client): a member stale or not
 * healthy past `unhealthyCountsForSeconds` stops counting and is named, one down for its own
 * maintenance counts until its slot's recorded end and settle time, records silent past
 * `forgetAfterSeconds` are forgotten by the members as they heartbeat, and the store deletes a
 * record only at the version read. Members run in this process on clocks the test sets, with real
 * health checks (an HTTP endpoint on 127.0.0.1 whose answer the test sets).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetConfig } from '../../src/fleet/budget/config.ts';
import { groupOf, readGroup } from '../../src/fleet/budget/group.ts';
import { groupText } from '../../src/fleet/budget/group-text.ts';
import { memberKey, memberName } from '../../src/fleet/budget/records.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import { FleetStoreError, type FleetStore } from '../../src/fleet/budget/stores/port.ts';
import { budgetMember, type Member } from '../../testkit/fleet-members.ts';
import { fleetStoresPerFile, memberVm, outcome, scheduledFor, STORE_KINDS, type StoreKind } from '../../testkit/fleet-stores.ts';
import { toCollisionCloudEvent } from '../../src/pipeline/notices.ts';
import { toChatMessage } from '../../src/present/chat-model.ts';
import { table } from '../../src/lib/table.ts';
import { Pruner } from '../../src/fleet/budget/forget.ts';
import { DEV_ACCOUNT } from '../../src/simulator/azurite.ts';
import { CountingProxy } from '../../testkit/counting-proxy.ts';
import { silentLogger } from '../helpers.ts';

const fleetStores = fleetStoresPerFile();
const api = { by: 'test', via: 'api' } as const;
const DAY = 86_400_000;

/** Each VM's health endpoint: /<path> answers the status the test set for it (200 unless set). */
const statuses = new Map<string, number>();
let server: Server;
beforeAll(async () => {
  server = createServer((req, res) => res.writeHead(statuses.get(req.url?.slice(1) ?? '') ?? 200).end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

/** withHealth: a member's fleet keys with its health check at /<group>-<vm>. */
const withHealth = (group: string, vm: string, more: Record<string, unknown> = {}) => ({
  health: {
    http: { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/${group}-${vm}` },
    intervalSeconds: 1,
    settleSeconds: 120,
  },
  ...more,
});

/** at: the member's clock set to `t`, its health checked then, and its record written (a heartbeat). */
async function at(m: Member, t: number): Promise<void> {
  m.now = t;
  await m.health?.check();
  await m.budget.heartbeat();
}

const configOf = (kind: StoreKind, group: string, more: Record<string, unknown> = {}) =>
  FleetConfig.parse({ group, maxUnavailable: 1, store: fleetStores().config(kind), ...more });

describe.each(STORE_KINDS)('members that no longer exist, over the %s store', (kind) => {
  it('the store deletes a record only at the version read: another version, or none, is refused and changes nothing', async () => {
    const store = await openFleetStore(configOf(kind, `remove-${kind}`).store, `remove-${kind}`);
    try {
      const first = (await store.put('member-x', { member: 'x', n: 1 }, null))!;
      const second = (await store.put('member-x', { member: 'x', n: 2 }, first))!;
      expect(await store.remove('member-x', first)).toBe(false);
      expect((await store.get('member-x'))?.value).toEqual({ member: 'x', n: 2 });
      expect(await store.remove('member-x', second)).toBe(true);
      expect(await store.get('member-x')).toBeNull();
      expect(await store.remove('member-x', second)).toBe(false);
    } finally {
      await store.close();
    }
  });

  it('a scaled-in VM, its record 30 days stale with health on, no longer holds the group: it is left out and named', async () => {
    const group = `retired-${kind}`;
    const [old, a] = await Promise.all(['vm-old', 'vm-a'].map((vm) => budgetMember(fleetStores(), kind, group, vm, withHealth(group, vm))));
    await at(old!, Date.now() - 30 * DAY);
    await at(a!, Date.now());
    const ea = scheduledFor('vm-a');
    await a!.read([ea]);
    expect(await a!.budget.take(ea, api)).toMatchObject({ slot: 'slot-0' });
    // said loudly: the log, fleet status (text and JSON)
    expect(a!.lines.filter((l) => l.code === 'FLEET_MEMBER_IGNORED')).toEqual([
      expect.objectContaining({ vm: 'vm-old', why: 'its record went stale' }),
    ]);
    const g = await readGroup(configOf(kind, group));
    expect(g.members.find((m) => m.vm === 'vm-old')?.unavailable).toMatchObject({
      counts: false,
      why: expect.stringMatching(/went stale/),
    });
    expect(groupText(g, table)).toMatch(
      /^Left out of the count: vm-old, not healthy since \S+ \(its record went stale\), no longer counts since .* If it is gone for good: se-bridge fleet forget vm-old$/m,
    );
  });

  it('a member whose check never passes holds the group for unhealthyCountsForSeconds, then no longer: named in the log, the held answer and fleet status', async () => {
    const group = `never-${kind}`;
    const more = { unhealthyCountsForSeconds: 600 };
    const [sick, a] = await Promise.all(
      ['vm-sick', 'vm-a'].map((vm) => budgetMember(fleetStores(), kind, group, vm, withHealth(group, vm, more))),
    );
    statuses.set(`${group}-vm-sick`, 503);
    const t0 = Date.now();
    await Promise.all([at(sick!, t0), at(a!, t0)]);
    const ea = scheduledFor('vm-a');
    await a!.read([ea]);
    // just within the bound (its record fresh all along): it counts, and the held answer names it
    await Promise.all([at(sick!, t0 + 599_000), at(a!, t0 + 599_000)]);
    const held = await a!.budget.take(ea, api).catch((err: unknown) => err);
    expect(held).toMatchObject({
      code: 'HELD',
      message: expect.stringMatching(/none in maintenance; vm-sick is not healthy since .*answered 503/),
    });
    await a!.budget.heartbeat();
    const g = await readGroup(configOf(kind, group, more), t0 + 599_000);
    expect(g.members.find((m) => m.vm === 'vm-a')!.events[0]!.held?.unhealthy).toEqual([
      { vm: 'vm-sick', since: new Date(t0).toISOString() },
    ]);
    expect(groupText(g, table)).toMatch(/held by the budget \(vm-sick not healthy since \S+, counted as down\) since /);
    // past it: left out, said once, and the approval goes through
    await Promise.all([at(sick!, t0 + 601_000), at(a!, t0 + 601_000)]);
    expect(await a!.budget.take(ea, api)).toMatchObject({ slot: 'slot-0' });
    expect(a!.lines.filter((l) => l.code === 'FLEET_MEMBER_IGNORED')).toEqual([
      expect.objectContaining({ vm: 'vm-sick', countsUntil: new Date(t0 + 600_000).toISOString() }),
    ]);
    const after = await readGroup(configOf(kind, group, more), t0 + 601_000);
    expect(after.members.find((m) => m.vm === 'vm-sick')?.unavailable).toMatchObject({ counts: false, since: new Date(t0).toISOString() });
    statuses.delete(`${group}-vm-sick`);
  });

  it("a member down for its own maintenance counts until its slot's recorded end and settle time, however long it has been silent", async () => {
    const group = `own-${kind}`;
    const more = { unhealthyCountsForSeconds: 60 };
    const [m, a] = await Promise.all(
      ['vm-m', 'vm-a'].map((vm) => budgetMember(fleetStores(), kind, group, vm, withHealth(group, vm, more))),
    );
    const t0 = Date.now();
    await Promise.all([at(m!, t0), at(a!, t0)]);
    const em = scheduledFor('vm-m');
    await m!.read([em]);
    await m!.budget.take(em, api);
    const until = Date.parse(m!.budget.state().slot!.until!);
    // vm-m reboots and writes nothing more: silent far longer than the bound, its slot's recorded end passed
    const ea = scheduledFor('vm-a');
    await at(a!, until + 30_000);
    await a!.read([ea]);
    expect(await a!.budget.take(ea, api).catch((err: unknown) => err)).toMatchObject({
      code: 'HELD',
      message: expect.stringMatching(/vm-m is not healthy since .* \(its record went stale/),
    });
    // still within the settle time (120 s) and the bound after it (60 s)
    await at(a!, until + 179_000);
    expect(await outcome(a!.budget.take(ea, api))).toBe('HELD');
    await at(a!, until + 181_000);
    expect(await a!.budget.take(ea, api)).toMatchObject({ slot: 'slot-0' });
  });

  it('a member silent past forgetAfterSeconds is forgotten by the others as they heartbeat, a few a look, each at the version read; never one that holds a slot, nor one that wrote meanwhile', async () => {
    const group = `forget-${kind}`;
    const gone = ['g0', 'g1', 'g2', 'g3', 'back', 'holder'];
    const members = await Promise.all(gone.map((vm) => budgetMember(fleetStores(), kind, group, vm)));
    const t0 = Date.now();
    for (const m of members) await at(m, t0 - 30 * DAY);
    // `holder` went silent eight days ago (past forgetAfterSeconds), holding a slot whose recorded end is ahead
    const holder = members[5]!;
    holder.now = t0 - 8 * DAY;
    const eh = scheduledFor('holder', { notBefore: new Date(t0 + 10 * DAY).toISOString() });
    await holder.read([eh]);
    await holder.budget.take(eh, api);
    const raw = await openFleetStore(configOf(kind, group).store, group);
    // `back` writes its record again between the look and the delete: the delete is refused, and it stays
    let comeBack = true;
    let removes = 0;
    const wrap = (s: FleetStore): FleetStore => ({
      ...s,
      where: s.where,
      remove: async (name, version, signal) => {
        removes += 1;
        if (comeBack && name === memberName(memberKey(members[4]!.view.vm))) {
          comeBack = false;
          const r = (await raw.get(name))!;
          await raw.put(name, { ...(r.value as object), heartbeatAt: new Date(t0).toISOString() }, r.version);
        }
        return s.remove(name, version, signal);
      },
    });
    const a = await budgetMember(fleetStores(), kind, group, 'vm-a', {}, wrap);
    try {
      await at(a, t0);
      const names = async () => (await raw.list('member-')).map((r) => r.name).sort();
      const all = await names();
      expect(all).toHaveLength(7);
      // its first look comes within a day of its start; one look tries three at most, each a conditional delete
      await at(a, t0 + DAY);
      expect(removes).toBe(3);
      expect(all.length - (await names()).length).toBeGreaterThanOrEqual(2);
      // an hour on, it looks again: the rest that are gone; `back` wrote meanwhile, `holder` holds a slot
      await at(a, t0 + DAY + 3_600_000);
      expect((await readGroup(configOf(kind, group))).members.map((m) => m.vm).sort()).toEqual(['back', 'holder', 'vm-a']);
      const forgotten = a.lines.filter((l) => l.code === 'FLEET_MEMBER_FORGOTTEN').map((l) => l.vm);
      expect(forgotten.sort()).toEqual(['g0', 'g1', 'g2', 'g3']);
      expect(comeBack).toBe(false);
    } finally {
      await raw.close();
    }
  });

  it('forgets only records named as a member names its own, and a look that fails never closes the budget', async () => {
    const group = `forget-odd-${kind}`;
    const raw = await openFleetStore(configOf(kind, group).store, group);
    const t0 = Date.now();
    const old = new Date(t0 - 30 * DAY).toISOString();
    // silent for a month, but not named member-<its member key>: another program's, or edited by hand
    const odd = { member: 'Someone-Else', vm: 'odd', resourceId: null, heartbeatAt: old, heartbeatSeconds: 30, events: [], slot: null };
    await raw.put('member-Someone-Else', odd, null);
    await raw.put('member-other', { ...odd, member: 'not-other' }, null);
    let refuse = true;
    const wrap = (s: FleetStore): FleetStore => ({
      ...s,
      where: s.where,
      remove: async (name, version, signal) => {
        if (refuse) throw new FleetStoreError(`delete ${name}`, 'Blob Storage answered 403 AuthorizationPermissionMismatch');
        return s.remove(name, version, signal);
      },
    });
    const gone = await budgetMember(fleetStores(), kind, group, 'gone');
    await at(gone, t0 - 30 * DAY);
    const a = await budgetMember(fleetStores(), kind, group, 'vm-a', {}, wrap);
    try {
      await at(a, t0);
      await at(a, t0 + DAY);
      // the delete refused: said, and the budget still answers
      expect(a.lines.filter((l) => String(l.msg).startsWith('fleet budget: could not forget'))).toHaveLength(1);
      expect(a.budget.state()).toMatchObject({ storeReachable: true, lastError: null });
      refuse = false;
      await at(a, t0 + DAY + 3_600_000);
      const names = (await raw.list('member-')).map((r) => r.name).sort();
      expect(names).toEqual(['member-Someone-Else', 'member-other', `member-${memberKey(a.view.vm)}`]);
    } finally {
      await raw.close();
    }
  });
});

describe('a member down for its own maintenance with no slot in its name', () => {
  it('counts until the end a slot would have recorded (its last word, the duration, the margin) and the settle time, then for the bound', () => {
    const heartbeatAt = Date.parse('2026-11-25T10:00:00.000Z');
    const started = { eventId: 'E', eventType: 'Reboot', status: 'Started', notBefore: null, durationInSeconds: 300, approved: false };
    const records = [
      {
        name: 'member-m',
        version: '1',
        value: {
          ...{ member: 'm', vm: 'm', resourceId: null, heartbeatAt: new Date(heartbeatAt).toISOString(), heartbeatSeconds: 30 },
          ...{ events: [started], slot: null, health: { healthy: true, since: '2026-11-24T00:00:00.000Z' } },
        },
      },
    ];
    const bounds = { unhealthyCountsForSeconds: 60, settleSeconds: 120, marginSeconds: 1800 };
    const at = (t: number) => groupOf({ group: 'g', maxUnavailable: 1, store: 'test', bounds }, records, [], t).members[0]!.unavailable;
    // silent (its record stale) since its maintenance Started: 300 s, 1800 s of margin, 120 s to settle, then 60 s
    const end = heartbeatAt + (300 + 1800 + 120 + 60) * 1000;
    expect(at(end - 1000)).toMatchObject({ counts: true, why: 'its record went stale', countsUntil: new Date(end).toISOString() });
    expect(at(end + 1000)).toMatchObject({ counts: false });
  });
});

describe('a collision in words', () => {
  it('says why it is one: who is due when, the member not healthy counted as down, and what the group allows; one member is one member', () => {
    const now = Date.parse('2026-11-25T10:00:00.000Z');
    const notBefore = '2026-11-25T10:30:00.000Z';
    const record = (vm: string, more: Record<string, unknown>) => ({
      name: `member-${vm}`,
      version: '1',
      value: {
        ...{ member: vm, vm, resourceId: null, heartbeatAt: new Date(now).toISOString(), heartbeatSeconds: 30, events: [], slot: null },
        ...more,
      },
    });
    const g = groupOf(
      { group: 'kafka', maxUnavailable: 1, store: 'test' },
      [
        record('kafka-0', {
          events: [{ eventId: 'E0', eventType: 'Reboot', status: 'Scheduled', notBefore, durationInSeconds: -1, approved: false }],
        }),
        record('kafka-1', { health: { healthy: false, since: '2026-11-25T09:55:00.000Z', detail: 'answered 503' } }),
      ],
      [],
      now,
    );
    expect(g.collision).toMatchObject({ vms: ['kafka-0'], unhealthy: ['kafka-1'] });
    expect(groupText(g, table)).toContain(
      `Collision foretold: 1 of kafka's 2 members is due for maintenance between ${notBefore} and 2026-11-25T10:40:00.000Z (kafka-0: Reboot not before ${notBefore}), while kafka-1 is not healthy and counted as down: 2 down at once, and the group allows 1.`,
    );
    expect(groupText(g, table)).toMatch(/^Group kafka: 0 of 1 slot held; 2 members /);
    // and chat, from the member due
    const collision = {
      ...{ id: 'wave', group: 'kafka', maxUnavailable: 1, members: 2, from: notBefore, to: '2026-11-25T10:40:00.000Z' },
      ...{ due: [{ vm: 'kafka-0', eventId: 'E0', eventType: 'Reboot', notBefore }], atOnce: 1, unhealthy: ['kafka-1'] },
    };
    const ce = toCollisionCloudEvent('fleet.collision/' + '0'.repeat(40), scheduledFor('kafka-0'), 1, collision, {
      vm: memberVm('kafka-0'),
      observedAt: notBefore,
    });
    expect(toChatMessage(ce).title).toBe(
      "1 of kafka's 2 members is due for maintenance between 10:30 UTC and 10:40 UTC; the group allows 1 and kafka-1 is not healthy",
    );
  });
});

describe('what forgetting costs the store', () => {
  it('twenty members at every heartbeat of twelve hours: each looks at most once an hour (a list), and each record gone is deleted once', async () => {
    const proxy = await new CountingProxy(fleetStores().azurite.url).start();
    const group = 'prune-cost';
    const config = {
      type: 'blob',
      connectionString: fleetStores().azurite.connectionString(`${proxy.url}/${DEV_ACCOUNT}`),
      container: 'cost',
    };
    const store = await openFleetStore(FleetConfig.parse({ group, store: config }).store, group);
    try {
      const t0 = Date.now();
      const vms = Array.from({ length: 22 }, (_, i) => (i < 20 ? `m${i}` : `gone${i}`));
      for (const [i, vm] of vms.entries()) {
        const heartbeatAt = new Date(i < 20 ? t0 : t0 - 30 * DAY).toISOString();
        const member = memberKey(memberVm(vm));
        await store.put(
          `member-${member}`,
          { member, vm, resourceId: null, heartbeatAt, heartbeatSeconds: 30, events: [], slot: null },
          null,
        );
      }
      const pruners = vms.slice(0, 20).map((vm) => ({
        me: memberKey(memberVm(vm)),
        pruner: new Pruner({ store, logger: silentLogger, group, forgetAfterSeconds: 7 * 86_400 }),
      }));
      proxy.take();
      for (let t = t0; t < t0 + 12 * 3_600_000; t += 30_000) for (const p of pruners) await p.pruner.prune([], p.me, t);
      const { counts, lost } = proxy.take();
      expect(counts.list ?? 0).toBeGreaterThan(0);
      expect(counts.list).toBeLessThanOrEqual(20 * 13);
      expect((counts.delete ?? 0) - lost).toBe(2);
      expect((await store.list('member-')).map((r) => (r.value as { vm: string }).vm).filter((vm) => vm.startsWith('gone'))).toEqual([]);
    } finally {
      await store.close();
      await proxy.stop();
    }
  });
});

describe('records whose times and durations do not read', () => {
  it('are left out and named (a slot that names its holder counts as held); fleet status and the budget still read the group', () => {
    const now = Date.parse('2026-11-25T10:00:00.000Z');
    const base = { resourceId: null, heartbeatSeconds: 30, slot: null, health: { healthy: false, since: '2026-11-25T09:00:00.000Z' } };
    const member = (vm: string, more: Record<string, unknown>) => ({
      name: `member-${vm}`,
      version: '1',
      value: { ...base, member: vm, vm, heartbeatAt: new Date(now).toISOString(), events: [], ...more },
    });
    const event = { eventId: 'E', eventType: 'Reboot', status: 'Scheduled', durationInSeconds: -1, approved: false };
    const records = [
      member('long', { events: [{ ...event, notBefore: '2026-11-25T10:30:00Z', durationInSeconds: 1e300 }] }),
      member('far', { heartbeatAt: '+275760-09-13T00:00:00.000Z' }),
      member('later', { events: [{ ...event, notBefore: '+275760-09-13T00:00:00.000Z' }] }),
      member('ok', {}),
      member('settle', { settleSeconds: 1e300 }),
      { name: 'slot-0', version: '1', value: { member: 'ok', vm: 'ok', eventIds: ['E'], until: '+275760-09-13T00:00:00.000Z' } },
    ];
    const g = groupOf({ group: 'g', maxUnavailable: 1, store: 'test' }, records, [], now);
    expect(g.skipped.map((s) => s.key).sort()).toEqual(['member-far', 'member-long', 'member-settle', 'slot-0']);
    expect(g.members.map((m) => m.vm).sort()).toEqual(['later', 'ok']);
    expect(g.collision).toBeNull();
    // the slot's end cannot be read: it counts as held by the member it names, with no end
    expect(g.slots).toMatchObject([{ slot: 'slot-0', vm: 'ok', until: null }]);
    expect(g.members.find((m) => m.vm === 'ok')?.holdsSlot).toBe(true);
    expect(groupText(g, table)).toContain(
      'Record slot-0 does not read (until: not an RFC 3339 time of the years 0000 to 9999): counted as held by ok',
    );
  });
});
