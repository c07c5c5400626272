/**
 * The collision forecast over the fleet budget's two real stores (Azurite through the project's
 * Blob REST client; the Kubernetes API stand-in, written from the API reference since no API
 * server can run here, through the project's Kubernetes client (src/kube)), each member with its
 * own real SQLite journal and its own record written by the project's writer, the group read by
 * the listing each member makes: the wave's speaker says it once it has seen it whole, again at
 * most once a minute (the clock is the test's), and once within the budget; every other member
 * repeats each word under the same CloudEvent id, read from the speaker's record in its listing.
 */
import { describe, expect, it } from 'vitest';
import { Forecast } from '../../src/fleet/budget/collisions.ts';
import { ForecastReads } from '../../src/fleet/budget/forecast-reads.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import { MemberRecordWriter } from '../../src/fleet/budget/member.ts';
import { membersOf } from '../../src/fleet/budget/parse.ts';
import { MEMBER_PREFIX, type MemberRecord } from '../../src/fleet/budget/records.ts';
import type { BridgeEvent } from '../../src/pipeline/cloudevent.ts';
import { SETTLE_MS } from '../../src/fleet/budget/waves.ts';
import { toChatMessage } from '../../src/present/chat-model.ts';
import { Store } from '../../src/store/store.ts';
import { fleetStoresPerFile, memberVm, scheduledFor, STORE_KINDS } from '../../testkit/fleet-stores.ts';
import { silentLogger } from '../helpers.ts';

const fleetStores = fleetStoresPerFile();
const K = 2;
const NOT_BEFORE = new Date(Date.now() + 3_600_000).toISOString();

function recordOf(vm: string, eventId: string, status = 'Scheduled', heartbeatAt = new Date().toISOString()): MemberRecord {
  return {
    member: `${vm}-key`,
    vm,
    resourceId: null,
    heartbeatAt,
    heartbeatSeconds: 30,
    slot: null,
    events: [{ eventId, eventType: 'Reboot', status, notBefore: NOT_BEFORE, durationInSeconds: -1, approved: false }],
  };
}

describe.each(STORE_KINDS)('collision waves over the %s store', (kind) => {
  it('ten members due at once, K = 2: the speaker says the wave once whole, updates it at most once a minute (the latest set), and says it resolved once; every member repeats each word under one id', async () => {
    const group = `waves-${kind}`;
    let clock = Date.parse('2026-11-25T09:00:00.000Z');
    const vms = Array.from({ length: 10 }, (_, i) => `w${i}`);
    const events = vms.map((vm) => scheduledFor(vm, { notBefore: NOT_BEFORE }));
    const store = await openFleetStore(fleetStores().config(kind) as never, group);
    const members = vms.map((vm, i) => {
      const journal = Store.open(':memory:');
      const said: BridgeEvent[] = [];
      const forecast = new Forecast({
        group,
        maxUnavailable: K,
        view: { vm: memberVm(vm), document: { incarnation: 1, events: [events[i]!] }, goodReads: 1, approvalServerUrl: null },
        journal: journal.journal,
        logger: silentLogger,
        route: (e) => ({ id: e.id, eventId: events[i]!.eventId, transition: 'fleet.collision', json: JSON.stringify(e), sinks: [] }),
        committed: (e) => said.push(e),
        now: () => clock,
      });
      return { vm, forecast, said, journal, writer: new MemberRecordWriter(store), status: 'Scheduled' };
    });
    // one read of the group: each member writes its record (its word with it), then lists the group and foretells, in a varied order
    const round = async (at: number, order = 1) => {
      clock = at;
      const ordered = order === 1 ? members : [...members].reverse();
      for (const m of ordered) {
        const { heartbeatAt: _at, ...record } = recordOf(m.vm, events[members.indexOf(m)]!.eventId, m.status);
        const word = m.forecast.word;
        await m.writer.write(word === undefined ? record : { ...record, wave: word }, clock, true);
      }
      await Promise.all(ordered.map(async (m) => m.forecast.foretell(membersOf(await store.list(MEMBER_PREFIX)))));
    };
    const start = (...done: number[]) => done.forEach((i) => (members[i]!.status = 'Started'));
    const words = () => members.flatMap((m) => m.said);
    try {
      // seen, not said yet: the speaker waits a few seconds to see the wave whole
      await round(clock);
      expect(words()).toHaveLength(0);
      // the speaker reads the group again when it is time to say it
      expect(members[9]!.forecast.speakAt).toBe(clock + SETTLE_MS);
      expect(members[0]!.forecast.speakAt).toBeNull();
      // the speaker (w9: the queue serves it last, all due at once) says it; the others repeat it at their next read, under its id
      await round(clock + 5000, -1);
      expect(members[9]!.said).toHaveLength(1);
      expect(words()).toHaveLength(1);
      await round(clock + 1000);
      const foreseen = members[9]!.said[0]!;
      expect(foreseen.data.collision).toMatchObject({ state: 'foreseen', atOnce: 10 });
      expect(foreseen.id).toMatch(/^fleet\.collision\/[0-9a-f]{40}$/);
      for (const m of members) expect(m.said.map((e) => e.id)).toEqual([foreseen.id]);
      expect(new Set(words().map((e) => e.data.collision!.id))).toEqual(new Set([foreseen.data.collision!.id]));
      expect(toChatMessage(foreseen).title).toMatch(
        /^10 of waves-\w+'s 10 members are due for maintenance between .*; the group allows 2, and Azure takes 10 down at once if nothing changes$/,
      );

      // members complete, several times within a minute: nothing is said until a minute has passed since the last word
      start(0, 1, 2);
      await round(clock + 10_000);
      start(3);
      await round(clock + 20_000, -1);
      await round(clock + 20_000);
      expect(words()).toHaveLength(10);
      // a minute after the foreseen word: the speaker says the latest set once, and the others repeat it
      await round(Date.parse(foreseen.time) + 60_000);
      await round(clock + 1000, -1);
      const updated = words().filter((e) => e.id !== foreseen.id);
      expect(new Set(updated.map((e) => e.id)).size).toBe(1);
      expect(updated.map((e) => e.data.vm.name).sort()).toEqual(['w4', 'w5', 'w6', 'w7', 'w8', 'w9']);
      for (const e of updated) expect(e.data.collision).toMatchObject({ id: foreseen.data.collision!.id, state: 'updated' });
      expect(updated[0]!.data.collision!.due).toHaveLength(6);
      await round(clock + 1000);
      expect(words()).toHaveLength(16);

      // within the budget: said at once (not a minute later), once, by the speaker, repeated by w8
      start(4, 5, 6, 7);
      await round(clock + 2000);
      await round(clock + 1000, -1);
      await round(clock + 1000);
      const resolved = words().filter((e) => e.data.collision!.state === 'resolved');
      expect(words()).toHaveLength(18);
      expect(resolved.map((e) => e.data.vm.name).sort()).toEqual(['w8', 'w9']);
      expect(new Set(resolved.map((e) => e.id)).size).toBe(1);
      expect(resolved[0]!.data.collision).toMatchObject({ id: foreseen.data.collision!.id, state: 'resolved' });
      expect(toChatMessage(resolved[0]!).severity).toBe('resolved');
      expect(toChatMessage(resolved[0]!).title).toMatch(
        /^2 of waves-\w+'s 10 members still due for maintenance .*: within the group's budget of 2 now$/,
      );
      // and nothing more, however long
      await round(clock + 120_000);
      await round(clock + 120_000, -1);
      expect(words()).toHaveLength(18);
    } finally {
      for (const m of members) m.journal.close();
      await store.close();
    }
  });
});

describe('the forecast with health checks', () => {
  it('counts a member that is not healthy now, and the settle time, against the group: two due with two slots collide when a third is not healthy', async () => {
    const group = 'waves-health';
    const events = ['h0', 'h1'].map((vm) => scheduledFor(vm, { notBefore: NOT_BEFORE }));
    const store = Store.open(':memory:');
    const said: BridgeEvent[] = [];
    // the speaker says a collision once it has seen it a few seconds: the test's clock moves on
    let clock = Date.now();
    // (each forecast is the speaker's: the member the queue serves last, its VM name sorting last)
    const seen = async (f: Forecast, records: readonly MemberRecord[]) => {
      expect(await f.foretell(records)).toBeNull();
      clock += SETTLE_MS;
      return f.foretell(records);
    };
    try {
      const forecast = new Forecast({
        group,
        maxUnavailable: 2,
        view: { vm: memberVm('h1'), document: { incarnation: 1, events: [events[1]!] }, goodReads: 1, approvalServerUrl: null },
        journal: store.journal,
        logger: silentLogger,
        route: (e) => ({ id: e.id, eventId: events[1]!.eventId, transition: 'fleet.collision', json: JSON.stringify(e), sinks: [] }),
        committed: (e) => said.push(e),
        settleSeconds: 600,
        now: () => clock,
      });
      const healthy = { healthy: true, since: new Date().toISOString() };
      const due = [0, 1].map((i) => ({ ...recordOf(`h${i}`, events[i]!.eventId), health: healthy }));
      const sick = { ...recordOf('h2', 'none'), events: [], health: { healthy: false, since: new Date().toISOString(), detail: '503' } };
      // all healthy: two due, two slots, no collision
      expect(await forecast.foretell([...due, { ...sick, health: healthy }])).toBeNull();
      const ce = await seen(forecast, [...due, sick]);
      expect(ce?.data.collision).toMatchObject({ atOnce: 2, unhealthy: ['h2'], maxUnavailable: 2 });
      // the window runs on for the settle time: NotBefore + 10 minutes + 600 s
      expect(Date.parse(ce!.data.collision!.to) - Date.parse(NOT_BEFORE)).toBe(20 * 60_000);
      expect(toChatMessage(ce!).title).toMatch(/; the group allows 2 and h2 is not healthy$/);

      // five due at once, one slot, one of the five not healthy now: all five go down together at NotBefore
      const five = ['f0', 'f1', 'f2', 'f3', 'f4'].map((vm) => scheduledFor(vm, { notBefore: NOT_BEFORE }));
      const one = new Forecast({
        group: `${group}-five`,
        maxUnavailable: 1,
        view: { vm: memberVm('f4'), document: { incarnation: 1, events: [five[4]!] }, goodReads: 1, approvalServerUrl: null },
        journal: store.journal,
        logger: silentLogger,
        route: (e) => ({ id: e.id, eventId: five[4]!.eventId, transition: 'fleet.collision', json: JSON.stringify(e), sinks: [] }),
        committed: (e) => said.push(e),
        settleSeconds: 600,
        now: () => clock,
      });
      const records = five.map((e, i) => ({
        ...recordOf(`f${i}`, e.eventId),
        health: i === 3 ? { healthy: false, since: new Date().toISOString(), detail: '503' } : healthy,
      }));
      // a record whose word of the wave says it was said far ahead of any clock (or does not read) silences nothing
      const word = { wave: 'f'.repeat(40), said: `fleet.collision/${'e'.repeat(40)}`, kind: 'updated', due: 1 };
      const span = { from: NOT_BEFORE, to: new Date(Date.parse(NOT_BEFORE) + 600_000).toISOString() };
      const liar = { ...recordOf('f9', 'none'), events: [], wave: { ...word, ...span, at: '2099-01-01T00:00:00.000Z' } };
      const garbled = {
        ...recordOf('f8', 'none'),
        events: [],
        wave: { ...word, ...span, said: 'https://x', at: new Date(clock).toISOString() },
      };
      const c5 = await seen(one, membersOf([...records, liar, garbled].map((r, i) => ({ name: `member-${i}`, value: r, version: '1' }))));
      expect(c5?.id).not.toBe(word.said);
      expect(c5?.data.collision).toMatchObject({ atOnce: 5, maxUnavailable: 1, members: 7, state: 'foreseen' });
      expect(c5!.data.collision!.due).toHaveLength(5);
      expect(toChatMessage(c5!).title).toMatch(
        /^5 of .*'s 7 members are due .*; the group allows 1, and Azure takes 5 down at once if nothing changes/,
      );
    } finally {
      store.close();
    }
  });
});

describe('the speaker leaving the wave', () => {
  it('says the wave within the budget once its own maintenance started, even when no other member is still due', async () => {
    const events = ['s0', 's1', 's2'].map((vm) => scheduledFor(vm, { notBefore: NOT_BEFORE }));
    const journal = Store.open(':memory:');
    const said: BridgeEvent[] = [];
    let clock = Date.now();
    try {
      const forecast = new Forecast({
        group: 'leaving',
        maxUnavailable: 1,
        view: { vm: memberVm('s2'), document: { incarnation: 1, events: [events[2]!] }, goodReads: 1, approvalServerUrl: null },
        journal: journal.journal,
        logger: silentLogger,
        route: (e) => ({ id: e.id, eventId: events[2]!.eventId, transition: 'fleet.collision', json: JSON.stringify(e), sinks: [] }),
        committed: (e) => said.push(e),
        now: () => clock,
      });
      const due = events.map((e, i) => recordOf(`s${i}`, e.eventId));
      await forecast.foretell(due);
      clock += SETTLE_MS;
      expect((await forecast.foretell(due))?.data.collision).toMatchObject({ state: 'foreseen' });
      // the others are over and gone, and the speaker's own maintenance started: within the budget, said once
      const over = [{ ...due[0]!, events: [] }, { ...due[1]!, events: [] }, recordOf('s2', events[2]!.eventId, 'Started')];
      clock += 1000;
      const resolved = await forecast.foretell(over);
      expect(resolved?.data.collision).toMatchObject({ state: 'resolved', due: [] });
      expect(toChatMessage(resolved!).severity).toBe('resolved');
      expect(await forecast.foretell(over)).toBeNull();
      expect(said).toHaveLength(2);
    } finally {
      journal.close();
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
    // the speaker of a wave not said yet: once when it is time to say it, not before, and not again for the same time
    expect(reads.due([f], false, t + 190_000)).toBe(true);
    expect(reads.due([f], false, t + 200_000, undefined, t + 201_000)).toBe(false);
    expect(reads.due([f], false, t + 201_000, undefined, t + 201_000)).toBe(true);
    expect(reads.due([f], false, t + 201_500, undefined, t + 201_000)).toBe(false);
  });
});

describe('whose word a member repeats', () => {
  it("only the speaker's: a word in the record of a member outside the wave, or of another member due, is not repeated", async () => {
    const events = ['w0', 'w1', 'w2'].map((vm) => scheduledFor(vm, { notBefore: NOT_BEFORE }));
    const journal = Store.open(':memory:');
    let clock = Date.now();
    try {
      // w0 listens; w2 is the wave's speaker (the queue serves it last: the same NotBefore, the name that sorts last)
      const forecast = new Forecast({
        group: 'whose',
        maxUnavailable: 1,
        view: { vm: memberVm('w0'), document: { incarnation: 1, events: [events[0]!] }, goodReads: 1, approvalServerUrl: null },
        journal: journal.journal,
        logger: silentLogger,
        route: (e) => ({ id: e.id, eventId: events[0]!.eventId, transition: 'fleet.collision', json: JSON.stringify(e), sinks: [] }),
        committed: () => undefined,
        now: () => clock,
      });
      const due = events.map((e, i) => recordOf(`w${i}`, e.eventId));
      const span = { from: NOT_BEFORE, to: new Date(Date.parse(NOT_BEFORE) + 600_000).toISOString() };
      const wordOf = (hex: string, kind: 'foreseen' | 'updated' | 'resolved') => ({
        ...{ wave: hex.repeat(40), said: `fleet.collision/${hex.repeat(40)}`, kind, due: 3 },
        ...span,
        at: new Date(clock).toISOString(),
      });
      await forecast.foretell(due);
      clock += SETTLE_MS;
      // an outsider (no event of the wave) and a member due that is not the speaker each write a word: neither is repeated
      const outsider = { ...recordOf('w9', 'none'), events: [], wave: wordOf('a', 'resolved') };
      const other = { ...due[1]!, wave: wordOf('b', 'updated') };
      expect(await forecast.foretell([due[0]!, other, due[2]!, outsider])).toBeNull();
      // the speaker's word is
      const speaker = { ...due[2]!, wave: wordOf('c', 'foreseen') };
      const repeated = await forecast.foretell([due[0]!, other, speaker, outsider]);
      expect(repeated?.id).toBe(`fleet.collision/${'c'.repeat(40)}`);
      expect(repeated?.data.collision).toMatchObject({ id: 'c'.repeat(40), state: 'foreseen' });
    } finally {
      journal.close();
    }
  });
});

describe('a wave the queue serves before it was said', () => {
  const vms = ['d0', 'd1', 'd2'];
  const events = vms.map((vm) => scheduledFor(vm, { notBefore: NOT_BEFORE }));
  let clock = Date.parse('2026-11-25T09:00:00.000Z');
  // each member its own journal (every member's copy of a word has the same CloudEvent id)
  const forecastOf = (i: number, said: BridgeEvent[], journal: Store) =>
    new Forecast({
      group: 'served',
      maxUnavailable: 1,
      view: { vm: memberVm(vms[i]!), document: { incarnation: 1, events: [events[i]!] }, goodReads: 1, approvalServerUrl: null },
      journal: journal.journal,
      logger: silentLogger,
      route: (e) => ({ id: e.id, eventId: events[i]!.eventId, transition: 'fleet.collision', json: JSON.stringify(e), sinks: [] }),
      committed: (e) => said.push(e),
      now: () => clock,
    });
  const record = (i: number, o: { held?: number; status?: string } = {}) => {
    const r = recordOf(vms[i]!, events[i]!.eventId, o.status);
    const held = o.held === undefined ? {} : { held: { since: new Date(o.held).toISOString(), by: [], via: 'policy' } };
    return { ...r, events: [{ ...r.events[0]!, ...held }] };
  };

  it('the speaker is the member the queue serves last (held last, though another name sorts last), and a wave brought within the budget before it was said is said as seen at its largest', async () => {
    const journal = Store.open(':memory:');
    const said: BridgeEvent[] = [];
    const f1 = forecastOf(1, said, journal);
    const t0 = clock;
    try {
      expect(await f1.foretell([record(0), record(1), record(2)])).toBeNull();
      // a read later, every member held: d2 first (served first), d0, d1 last: d1 speaks, and reads again at SETTLE_MS
      clock = t0 + 1000;
      const held = { 0: t0 + 400, 1: t0 + 500, 2: t0 + 300 } as const;
      expect(await f1.foretell([record(0, { held: held[0] }), record(1, { held: held[1] }), record(2, { held: held[2] })])).toBeNull();
      expect(f1.speakAt).toBe(t0 + SETTLE_MS);
      // d2 served, then d0: the wave is within the budget before SETTLE_MS; said all the same, with the three it was
      clock = t0 + 2000;
      const started = (i: number) => record(i, { status: 'Started' });
      expect(await f1.foretell([record(0, { held: held[0] }), record(1, { held: held[1] }), started(2)])).toBeNull();
      clock = t0 + 3000;
      const ce = await f1.foretell([started(0), record(1, { held: held[1] }), started(2)]);
      expect(ce?.data.collision).toMatchObject({ state: 'foreseen', atOnce: 3 });
      expect(ce!.data.collision!.due.map((d) => d.vm).sort()).toEqual(['d0', 'd1', 'd2']);
      expect(said).toHaveLength(1);
    } finally {
      journal.close();
    }
  });

  it('a speaker whose own maintenance starts before it said its wave says it then, as seen at its largest, and resolved at its next read once the members still due are within the budget', async () => {
    const journal = Store.open(':memory:');
    const said: BridgeEvent[] = [];
    const f1 = forecastOf(1, said, journal);
    const t0 = clock;
    try {
      const held = [record(0, { held: t0 - 600 }), record(1, { held: t0 - 500 }), record(2, { held: t0 - 900 })];
      expect(await f1.foretell(held)).toBeNull();
      // d1, the speaker, approved by a person out of turn: its maintenance started, the wave not said yet
      clock = t0 + 1000;
      const ce = await f1.foretell([held[0]!, record(1, { status: 'Started' }), held[2]!]);
      expect(ce?.data.collision).toMatchObject({ state: 'foreseen', atOnce: 3 });
      expect(ce!.data.collision!.due).toHaveLength(3);
      // d0 alone still due, within the budget: d1 says the wave resolved under the same wave id (d0, which reads the group
      // only at its turn, never takes the wave over)
      clock = t0 + 2000;
      const done = await f1.foretell([held[0]!, record(1, { status: 'Started' }), record(2, { status: 'Started' })]);
      expect(done?.data.collision).toMatchObject({ state: 'resolved', id: ce!.data.collision!.id });
      expect(done!.data.collision!.due.map((d: { vm: string }) => d.vm)).toEqual(['d0']);
      // and nothing more, once none is due
      clock = t0 + 3000;
      expect(
        await f1.foretell([record(0, { status: 'Started' }), record(1, { status: 'Started' }), record(2, { status: 'Started' })]),
      ).toBeNull();
      expect(said).toHaveLength(2);
    } finally {
      journal.close();
    }
  });

  it('a speaker served early is still heard once its record no longer lists the wave, by a member that saw it due in the wave; a member never seen in the wave is not', async () => {
    const journal = Store.open(':memory:');
    const said: BridgeEvent[] = [];
    const f0 = forecastOf(0, said, journal);
    const t0 = clock;
    try {
      const held = [record(0, { held: t0 - 600 }), record(1, { held: t0 - 500 }), record(2, { held: t0 - 900 })];
      expect(await f0.foretell(held)).toBeNull();
      // d1 spoke for the wave and is over and gone; a stranger (never due in it) writes a resolved word of its own
      const span = { from: NOT_BEFORE, to: new Date(Date.parse(NOT_BEFORE) + 600_000).toISOString() };
      const spoke = {
        wave: 'c'.repeat(40),
        said: `fleet.collision/${'c'.repeat(40)}`,
        kind: 'foreseen' as const,
        due: 3,
        at: new Date(t0).toISOString(),
        ...span,
      };
      const stranger = {
        ...recordOf('zz', 'none'),
        events: [],
        wave: { ...spoke, wave: 'd'.repeat(40), kind: 'resolved' as const, at: new Date(t0 + 500).toISOString() },
      };
      clock = t0 + 1000;
      const ce = await f0.foretell([
        held[0]!,
        { ...recordOf('d1', 'none'), events: [], wave: spoke },
        record(2, { status: 'Started' }),
        stranger,
      ]);
      // d0, the speaker now and within the budget, says the wave resolved under d1's wave id, not the stranger's
      expect(ce?.data.collision).toMatchObject({ state: 'resolved', id: 'c'.repeat(40) });
    } finally {
      journal.close();
    }
  });

  it('a wave not served is not said before SETTLE_MS, nor when it shrinks by a cancellation; the next speaker goes on under the same wave id once the record that said it no longer lists the wave', async () => {
    const journals = vms.map(() => Store.open(':memory:'));
    const said = vms.map(() => [] as BridgeEvent[]);
    const [f0, f1] = [forecastOf(0, said[0]!, journals[0]!), forecastOf(1, said[1]!, journals[1]!)];
    const t0 = clock;
    try {
      const held = [record(0, { held: t0 - 600 }), record(1, { held: t0 - 500 }), record(2, { held: t0 - 900 })];
      expect(await f0.foretell(held)).toBeNull();
      expect(await f1.foretell(held)).toBeNull();
      clock = t0 + 1000;
      expect(await f1.foretell(held)).toBeNull();
      clock = t0 + SETTLE_MS;
      const foreseen = await f1.foretell(held);
      expect(foreseen?.data.collision).toMatchObject({ state: 'foreseen', atOnce: 3 });
      // d0 repeats it from d1's record
      const word = f1.word!;
      clock += 500;
      expect((await f0.foretell([held[0]!, { ...held[1]!, wave: word }, held[2]!]))?.id).toBe(foreseen!.id);
      // d2 and d1 are over and gone (d1 taken out of turn, by a person): d1's record no longer lists the wave, so its word is
      // not heard; d0, the speaker now, within the budget, says it resolved under the wave's id it repeated
      clock += 1000;
      const resolved = await f0.foretell([held[0]!, { ...recordOf('d1', 'none'), events: [], wave: word }]);
      expect(resolved?.data.collision).toMatchObject({ state: 'resolved', id: foreseen!.data.collision!.id });
      expect(resolved!.id).not.toBe(foreseen!.id);

      // another wave, seen and then canceled in part before SETTLE_MS, none of it served: nothing is said
      const quiet = forecastOf(1, said[1]!, journals[2]!);
      const again = [record(0, { held: clock }), record(1, { held: clock })];
      expect(await quiet.foretell(again)).toBeNull();
      clock += 1000;
      expect(await quiet.foretell([{ ...again[0]!, events: [] }, again[1]!])).toBeNull();
    } finally {
      for (const j of journals) j.close();
    }
  });
});
