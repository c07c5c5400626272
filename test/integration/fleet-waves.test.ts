/**
 * The collision forecast over the fleet budget's two real stores (Azurite through the project's
 * Blob REST client; the Kubernetes API stand-in, written from the API reference since no API
 * server can run here, through the project's Kubernetes client (src/kube)), each member with its own real SQLite
 * journal: one wave of overlapping windows has one id on every member, however many find it at
 * once, and each member says it again, under the same wave id, as members complete.
 */
import { describe, expect, it } from 'vitest';
import { Forecast, ForecastReads } from '../../src/fleet/budget/collisions.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import type { MemberRecord } from '../../src/fleet/budget/records.ts';
import { Waves } from '../../src/fleet/budget/waves.ts';
import type { BridgeEvent } from '../../src/pipeline/cloudevent.ts';
import { toChatMessage } from '../../src/present/chat-model.ts';
import { Store } from '../../src/store/store.ts';
import { fleetStoresPerFile, memberVm, scheduledFor, STORE_KINDS } from '../../testkit/fleet-stores.ts';
import { silentLogger } from '../helpers.ts';

const fleetStores = fleetStoresPerFile();
const K = 2;
const NOT_BEFORE = new Date(Date.now() + 3_600_000).toISOString();

function recordOf(vm: string, eventId: string, status = 'Scheduled'): MemberRecord {
  return {
    member: `${vm}-key`,
    vm,
    resourceId: null,
    heartbeatAt: new Date().toISOString(),
    heartbeatSeconds: 30,
    slot: null,
    events: [{ eventId, eventType: 'Reboot', status, notBefore: NOT_BEFORE, durationInSeconds: -1, approved: false }],
  };
}

/** dueSet: the EventIds a collision CloudEvent says are due, sorted: what the statement is about. */
const dueSet = (e: BridgeEvent): string =>
  e.data
    .collision!.due.map((d) => d.eventId)
    .sort()
    .join(',');

describe.each(STORE_KINDS)('collision waves over the %s store', (kind) => {
  it('ten members due at once, K = 2: one wave id on every member (found at once by all), one CloudEvent id per set of members due on every member, updated as members complete, down to within the budget', async () => {
    const group = `waves-${kind}`;
    const vms = Array.from({ length: 10 }, (_, i) => `w${i}`);
    const events = vms.map((vm) => scheduledFor(vm, { notBefore: NOT_BEFORE }));
    const members = await Promise.all(
      vms.map(async (vm, i) => {
        const store = Store.open(':memory:');
        const said: BridgeEvent[] = [];
        const fleetStore = await openFleetStore(fleetStores().config(kind) as never, group);
        const forecast = new Forecast({
          group,
          maxUnavailable: K,
          view: { vm: memberVm(vm), document: { incarnation: 1, events: [events[i]!] }, goodReads: 1, approvalServerUrl: null },
          journal: store.journal,
          logger: silentLogger,
          route: (e) => ({ id: e.id, eventId: events[i]!.eventId, transition: 'fleet.collision', json: JSON.stringify(e), sinks: [] }),
          committed: (e) => said.push(e),
          waves: new Waves(fleetStore, group),
        });
        return { vm, forecast, said, store };
      }),
    );
    try {
      // each member reads a different part of the wave first (the records arrive one by one), all at once
      const all = vms.map((vm, i) => recordOf(vm, events[i]!.eventId));
      await Promise.all(members.map((m, i) => m.forecast.foretell(all.slice(0, Math.max(K + 1, i + 1)))));
      await Promise.all(members.map((m) => m.forecast.foretell(all)));
      const first = members.map((m) => m.said[0]!);
      expect(new Set(first.map((e) => e.data.collision!.id)).size).toBe(1);
      const wave = first[0]!.data.collision!.id;
      // one statement, one id: every member's word of the same members due is one CloudEvent id
      // (whether it was that member's first word or a later one), another set of members due another
      const words = members.flatMap((m) => m.said);
      expect(words.every((e) => e.data.collision!.id === wave)).toBe(true);
      const idsBySet = new Map<string, Set<string>>();
      for (const e of words) {
        const set = dueSet(e);
        idsBySet.set(set, (idsBySet.get(set) ?? new Set()).add(e.id));
      }
      expect(idsBySet.get(dueSet(words.find((e) => e.data.collision!.due.length === 10)!))?.size).toBe(1);
      for (const [set, ids] of idsBySet) expect(ids.size, `the ids of ${set}`).toBe(1);
      const ids = [...idsBySet.values()].map((s) => [...s][0]!);
      expect(new Set(ids).size).toBe(idsBySet.size);
      for (const id of ids) expect(id).toMatch(/^fleet\.collision\/[0-9a-f]{40}$/);
      const last = members.map((m) => m.said.at(-1)!);
      for (const e of last) expect(e.data.collision).toMatchObject({ id: wave, atOnce: 10 });
      expect(last.every((e) => e.data.collision!.due.length === 10)).toBe(true);
      expect(toChatMessage(last[0]!).title).toMatch(
        /^10 of waves-\w+'s 10 members are due for maintenance between .*; the group allows 2, and Azure takes 10 down at once if nothing changes$/,
      );
      // the same records again: nothing new
      const before = members.map((m) => m.said.length);
      await Promise.all(members.map((m) => m.forecast.foretell(all)));
      expect(members.map((m) => m.said.length)).toEqual(before);

      // members complete (their events Started, then gone): w9 and w8 hear it of the wave, under the same wave id, each
      // change of the members due a new CloudEvent id, the same on both
      const [w8, w9] = [members[8]!, members[9]!];
      const seen = new Set(ids);
      for (const done of [3, 6, 8]) {
        const records = all.map((r, i) => (i < done ? recordOf(r.vm, events[i]!.eventId, 'Started') : r));
        await Promise.all([w8.forecast.foretell(records), w9.forecast.foretell(records)]);
        expect(w9.said.at(-1)).toMatchObject({ data: { collision: { id: wave } } });
        expect(w9.said.at(-1)!.data.collision!.due).toHaveLength(10 - done);
        expect(w8.said.at(-1)!.id).toBe(w9.said.at(-1)!.id);
        expect(seen.has(w9.said.at(-1)!.id)).toBe(false);
        seen.add(w9.said.at(-1)!.id);
      }
      // two left: within the budget now, said once, and the wave is done
      expect(toChatMessage(w9.said.at(-1)!).title).toMatch(
        /^2 of waves-\w+'s 10 members still due for maintenance .*: within the group's budget of 2 now$/,
      );
      expect(toChatMessage(w9.said.at(-1)!).severity).toBe('resolved');
      const n = w9.said.length;
      await w9.forecast.foretell(all.map((r, i) => (i < 8 ? recordOf(r.vm, events[i]!.eventId, 'Started') : r)));
      expect(w9.said).toHaveLength(n);
    } finally {
      for (const m of members) m.store.close();
    }
  });
});

describe('the forecast with health checks', () => {
  it('counts a member that is not healthy now, and the settle time, against the group: two due with two slots collide when a third is not healthy', async () => {
    const group = 'waves-health';
    const events = ['h0', 'h1'].map((vm) => scheduledFor(vm, { notBefore: NOT_BEFORE }));
    const store = Store.open(':memory:');
    const said: BridgeEvent[] = [];
    try {
      const forecast = new Forecast({
        group,
        maxUnavailable: 2,
        view: { vm: memberVm('h0'), document: { incarnation: 1, events: [events[0]!] }, goodReads: 1, approvalServerUrl: null },
        journal: store.journal,
        logger: silentLogger,
        route: (e) => ({ id: e.id, eventId: events[0]!.eventId, transition: 'fleet.collision', json: JSON.stringify(e), sinks: [] }),
        committed: (e) => said.push(e),
        waves: new Waves(await openFleetStore(fleetStores().config('blob') as never, group), group),
        settleSeconds: 600,
      });
      const healthy = { healthy: true, since: new Date().toISOString() };
      const due = [0, 1].map((i) => ({ ...recordOf(`h${i}`, events[i]!.eventId), health: healthy }));
      const sick = { ...recordOf('h2', 'none'), events: [], health: { healthy: false, since: new Date().toISOString(), detail: '503' } };
      // all healthy: two due, two slots, no collision
      expect(await forecast.foretell([...due, { ...sick, health: healthy }])).toBeNull();
      const ce = await forecast.foretell([...due, sick]);
      expect(ce?.data.collision).toMatchObject({ atOnce: 2, unhealthy: ['h2'], maxUnavailable: 2 });
      // the window runs on for the settle time: NotBefore + 10 minutes + 600 s
      expect(Date.parse(ce!.data.collision!.to) - Date.parse(NOT_BEFORE)).toBe(20 * 60_000);
      expect(toChatMessage(ce!).title).toMatch(/; the group allows 2 and h2 is not healthy$/);

      // five due at once, one slot, one of the five not healthy now: all five go down together at NotBefore
      const five = ['f0', 'f1', 'f2', 'f3', 'f4'].map((vm) => scheduledFor(vm, { notBefore: NOT_BEFORE }));
      const one = new Forecast({
        group: `${group}-five`,
        maxUnavailable: 1,
        view: { vm: memberVm('f0'), document: { incarnation: 1, events: [five[0]!] }, goodReads: 1, approvalServerUrl: null },
        journal: store.journal,
        logger: silentLogger,
        route: (e) => ({ id: e.id, eventId: five[0]!.eventId, transition: 'fleet.collision', json: JSON.stringify(e), sinks: [] }),
        committed: (e) => said.push(e),
        waves: new Waves(await openFleetStore(fleetStores().config('blob') as never, `${group}-five`), `${group}-five`),
        settleSeconds: 600,
      });
      const records = five.map((e, i) => ({
        ...recordOf(`f${i}`, e.eventId),
        health: i === 3 ? { healthy: false, since: new Date().toISOString(), detail: '503' } : healthy,
      }));
      const c5 = await one.foretell(records);
      expect(c5?.data.collision).toMatchObject({ atOnce: 5, maxUnavailable: 1, members: 5 });
      expect(c5!.data.collision!.due).toHaveLength(5);
      expect(toChatMessage(c5!).title).toMatch(
        /^5 of .*'s 5 members are due .*; the group allows 1, and Azure takes 5 down at once if nothing changes/,
      );
    } finally {
      store.close();
    }
  });
});

describe('when a member reads the group for the forecast', () => {
  it('at the read that writes a new or changed maintenance, and again one and five seconds later; not otherwise', () => {
    const reads = new ForecastReads();
    const e = scheduledFor('vm-a');
    const t = 1_000_000;
    expect(reads.due([e], true, t)).toBe(true);
    expect(reads.due([e], true, t + 500)).toBe(false);
    expect(reads.due([e], false, t + 1000)).toBe(true);
    expect(reads.due([e], false, t + 3000)).toBe(false);
    expect(reads.due([e], false, t + 5200)).toBe(true);
    expect(reads.due([e], true, t + 60_000)).toBe(false);
    // NotBefore moved: a changed maintenance
    const moved = { ...e, notBefore: new Date(t).toISOString() };
    expect(reads.due([moved], true, t + 61_000)).toBe(true);
    // a read long after: the reads due since are one read
    expect(reads.due([moved], false, t + 100_000)).toBe(true);
    expect(reads.due([moved], false, t + 101_000)).toBe(false);
    // not written (a write at most once a second): read when it is
    const f = scheduledFor('vm-a');
    expect(reads.due([f], false, t + 170_000)).toBe(false);
    expect(reads.due([f], true, t + 170_500)).toBe(true);
  });
});
