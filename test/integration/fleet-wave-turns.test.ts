/**
 * Whose turn it is to read the group for the collision forecast, and what the others do instead
 * (forecast-turn.ts, wave-board.ts): members in the test's process, each a real FleetBudget and
 * Forecast over a real store (Azurite's Blob Storage; the Kubernetes Lease stand-in for one), on a
 * clock the test moves. Every wave is said whoever stands at the queue's head, every member due
 * says each word its speaker said, and a notice or word a member forged neither silences a wave nor
 * puts words in another member's mouth.
 */
import { describe, expect, it } from 'vitest';
import { memberKey, memberName, WAVE_PREFIX } from '../../src/fleet/budget/records.ts';
import { noticesOf, WaveBoard, waveName } from '../../src/fleet/budget/wave-board.ts';
import type { FleetStore } from '../../src/fleet/budget/stores/port.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import { FleetConfig } from '../../src/fleet/budget/config.ts';
import { pino } from 'pino';
import { fleetStoresPerFile, memberVm, type StoreKind } from '../../testkit/fleet-stores.ts';
import { rebootOf, waveMember, type WaveMember } from '../../testkit/wave-members.ts';

const stores = fleetStoresPerFile();
const H = 3_600_000;
const T0 = Date.parse('2026-12-01T08:00:00.000Z');
const iso = (t: number) => new Date(t).toISOString();

/** A group on the test's clock: its members, each with one Reboot (or already Started). */
async function groupOf(kind: StoreKind, group: string, k: number, waves: { names: string[]; at: number }[], down: string[] = [], hb = 5) {
  let clock = T0;
  const now = () => clock;
  const due = await Promise.all(
    waves.flatMap((w) =>
      w.names.map(async (n, i) => ({
        m: await waveMember(stores(), kind, group, n, { k, clock: now, heartbeatSeconds: hb }),
        at: w.at + i * 1000,
      })),
    ),
  );
  const gone = await Promise.all(down.map((n) => waveMember(stores(), kind, group, n, { k, clock: now, heartbeatSeconds: hb })));
  const eventOf = (m: WaveMember, at: number) => rebootOf(m.name, `${m.name.toUpperCase()}-E`, T0 + at);
  const started = (m: WaveMember) => [rebootOf(m.name, `${m.name.toUpperCase()}-E`, clock, 'Started')];
  for (const d of gone) await d.read(started(d));
  for (const { m, at } of due) await m.read([eventOf(m, at)]);
  return {
    due: due.map((d) => d.m),
    /** steps seconds: every member reads its document each second, and beats every `hb` seconds (in turn, as they would). */
    async run(seconds: number) {
      for (let s = 0; s < seconds; s++) {
        clock += 1000;
        const beat = s % hb === 0;
        for (const d of gone) {
          if (beat) await d.budget.heartbeat();
          await d.read(started(d));
        }
        for (const { m, at } of [...due].reverse()) {
          if (beat) await m.budget.heartbeat();
          await m.read([eventOf(m, at)]);
        }
      }
    },
  };
}

/** watched: the store, with each listing, head and write told to `on` as it happens (a listing `on` throws for fails). */
function watched(
  s: FleetStore,
  on: { list?: (prefix: string) => void; head?: (prefix: string) => void; put?: (name: string, written: boolean) => void },
): FleetStore {
  return {
    ...{ where: s.where, get: (n, sig) => s.get(n, sig), remove: (n, ver, sig) => s.remove(n, ver, sig), close: () => s.close() },
    head: async (p, l, sig) => {
      on.head?.(p);
      return s.head(p, l, sig);
    },
    list: async (p, sig) => {
      on.list?.(p);
      return s.list(p, sig);
    },
    put: async (n, v, ver, sig) => {
      const version = await s.put(n, v, ver, sig);
      on.put?.(n, version !== null);
      return version;
    },
  };
}

describe('every wave is foretold', () => {
  it('two waves four hours apart, K = 1: the second, where nobody stands at the limit of the queue, is said too', async () => {
    const g = await groupOf('blob', 'turns-two-waves', 1, [
      { names: ['x1', 'x2', 'x3'], at: 1 * H },
      { names: ['y1', 'y2', 'y3'], at: 5 * H },
    ]);
    await g.run(120);
    const said = (p: string) => g.due.filter((m) => m.name.startsWith(p) && m.states().includes('foreseen')).length;
    expect(said('x')).toBe(3);
    expect(said('y')).toBe(3);
  }, 120_000);

  it('three due at once, K = 1, while two members are down already: the first that waits is at the limit, and the wave is said', async () => {
    const g = await groupOf('blob', 'turns-down', 1, [{ names: ['c1', 'c2', 'c3'], at: H }], ['d1', 'd2']);
    await g.run(30);
    expect(g.due.filter((m) => m.states().includes('foreseen')).length).toBe(3);
  }, 120_000);

  it('four due at once, K = 1, over Leases: every member due says the foreseen word, one id, though one or two read the group', async () => {
    const lists = new Map<string, number>();
    let clock = T0;
    const now = () => clock;
    const count = (name: string) => (s: FleetStore) =>
      watched(s, { list: (p) => (p === 'member-' ? lists.set(name, (lists.get(name) ?? 0) + 1) : undefined) });
    const ms = await Promise.all(
      ['w1', 'w2', 'w3', 'w4'].map((n) =>
        waveMember(stores(), 'kubernetes', 'turns-leases', n, { k: 1, clock: now, heartbeatSeconds: 5, wrap: count(n) }),
      ),
    );
    const ev = (m: WaveMember, i: number) => [rebootOf(m.name, `${m.name.toUpperCase()}-E`, T0 + H + i * 1000)];
    for (const [i, m] of ms.entries()) await m.read(ev(m, i));
    for (let s = 0; s < 30; s++) {
      clock += 1000;
      for (const [i, m] of [...ms.entries()].reverse()) {
        if (s % 5 === 0) await m.budget.heartbeat();
        await m.read(ev(m, i));
      }
    }
    expect(ms.map((m) => m.states().filter((x) => x === 'foreseen').length)).toEqual([1, 1, 1, 1]);
    expect(new Set(ms.flatMap((m) => m.said.map((e) => e.id))).size).toBe(1);
    expect(lists.size).toBeGreaterThanOrEqual(1);
    expect(lists.size).toBeLessThanOrEqual(2);
  }, 120_000);
});

/**
 * nineAtOnce: nine members due at once, K = 3, reading each second on the test's clock for 30 s;
 * who listed the members' records, and whose writes of a notice were written or refused. `mute`:
 * a member whose reads of the group fail (its store lists no member records).
 */
async function nineAtOnce(group: string, mute?: string) {
  const [lists, written, refused] = [new Map<string, number>(), [] as string[], [] as string[]];
  let clock = T0;
  const now = () => clock;
  const count = (name: string) => (s: FleetStore) =>
    watched(s, {
      put: (n, ok) => (n.startsWith(WAVE_PREFIX) ? (ok ? written : refused).push(name) : undefined),
      list: (p) => {
        if (p === 'member-') lists.set(name, (lists.get(name) ?? 0) + 1);
        if (p === 'member-' && name === mute) throw new Error('the store failed (the test)');
      },
    });
  const names = Array.from({ length: 9 }, (_, i) => `f${i + 1}`);
  const ms = await Promise.all(
    names.map((n) => waveMember(stores(), 'blob', group, n, { k: 3, clock: now, heartbeatSeconds: 5, wrap: count(n) })),
  );
  const ev = (m: WaveMember, i: number) => [rebootOf(m.name, `${m.name.toUpperCase()}-E`, T0 + H + i * 1000)];
  // every member sees its maintenance at the same second, as at a wave, and each second after that reads as the poll loop
  // would. That first second they read one after another, the last in the queue first: each finds nobody ahead yet, and
  // every entry is written by the next second, when each finds its true place at the limit whatever the load (members
  // reading at the same moment could each find the others' entries not written yet, and two take themselves for the first)
  for (const [i, m] of [...ms.entries()].reverse()) await m.budget.heartbeat().then(() => m.read(ev(m, i)));
  clock += 1000;
  for (let s = 1; s < 30; s++) {
    await Promise.all(ms.map((m, i) => (s % 5 === 0 ? m.budget.heartbeat() : Promise.resolve()).then(() => m.read(ev(m, i)))));
    clock += 1000;
  }
  const foreseen = ms.map((m) => m.states().filter((x) => x === 'foreseen').length);
  return { lists, written, refused, foreseen, ids: new Set(ms.flatMap((m) => m.said.map((e) => e.id))).size };
}

describe("a wave's first notice", () => {
  it('nine due at once, K = 3: the first at the limit writes it, the two behind it leave it to it, each member says the word once', async () => {
    const got = await nineAtOnce('turns-first');
    expect(got.foreseen).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 1]);
    expect(got.ids).toBe(1);
    // one write of the first notice, by the first at the limit (f4: three stand ahead of it), none refused
    expect(got.refused).toEqual([]);
    expect(got.written[0]).toBe('f4');
    // the group read by the first at the limit (and by the speaker it named), not by the two behind it (each read it twice and wrote before)
    expect(got.lists.get('f4')).toBe(1);
    expect(got.lists.has('f5') || got.lists.has('f6')).toBe(false);
  }, 120_000);

  it('the first at the limit cannot read the group: the next one writes the notice a step later, and the wave is said', async () => {
    const got = await nineAtOnce('turns-first-mute', 'f4');
    expect(got.written[0]).toBe('f5');
    expect(got.refused).toEqual([]);
    expect(got.ids).toBe(1);
    // every member says the word once, the one that cannot read the group too (from the notice and its speaker's record)
    expect(got.foreseen).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 1]);
    expect(got.lists.has('f6')).toBe(false);
  }, 120_000);
});

/** counted: a store whose listings and heads are counted by prefix. */
const counted = (calls: Map<string, number>) => (s: FleetStore) => {
  const add = (key: string) => calls.set(key, (calls.get(key) ?? 0) + 1);
  return watched(s, { list: add, head: (p) => add(`head ${p}`) });
};

describe('the members at the limit with no wave to foretell', () => {
  /** `down` members Started and holding the slots, `waiting` members due 10 h later in turn; each reads each second for 60 s, beating every 20. */
  async function noWave(group: string, k: number, down: string[], waiting: string[]) {
    let clock = T0;
    const now = () => clock;
    const calls = new Map(waiting.map((n) => [n, new Map<string, number>()]));
    const opts = (n: string) => ({ k, clock: now, heartbeatSeconds: 20, wrap: counted(calls.get(n) ?? new Map()) });
    const ds = await Promise.all(down.map((n) => waveMember(stores(), 'blob', group, n, opts(n))));
    const ws = await Promise.all(waiting.map((n) => waveMember(stores(), 'blob', group, n, opts(n))));
    const started = (m: WaveMember) => [rebootOf(m.name, `${m.name.toUpperCase()}-E`, T0, 'Started')];
    const later = (m: WaveMember, i: number) => [rebootOf(m.name, `${m.name.toUpperCase()}-E`, T0 + 10 * H + i * 1000)];
    for (let s = 0; s < 60; s++) {
      for (const m of [...ds, ...ws]) if (s % 20 === 0) await m.budget.heartbeat();
      for (const m of ds) await m.read(started(m));
      for (const [i, m] of ws.entries()) await m.read(later(m, i));
      clock += 1000;
    }
    return calls;
  }

  it('the first at the limit reads the group at its timed reads and heartbeats, not at every read', async () => {
    const calls = await noWave('turns-no-wave', 1, ['d1'], ['w1']);
    // three heartbeats and the reads when its maintenance appeared (a read a second would be 60)
    expect(calls.get('w1')!.get('member-')).toBeGreaterThanOrEqual(1);
    expect(calls.get('w1')!.get('member-')).toBeLessThanOrEqual(6);
  }, 120_000);

  it('those behind the first list the slots afresh once, at their step, not at each timed read after it', async () => {
    const calls = await noWave('turns-no-wave-k3', 3, ['d1', 'd2', 'd3'], ['w1', 'w2', 'w3']);
    // a listing at each of three heartbeats, and one at the step
    for (const n of ['w2', 'w3']) expect(calls.get(n)!.get('slot-')).toBeLessThanOrEqual(4);
    for (const n of ['w1', 'w2', 'w3']) expect(calls.get(n)!.get('member-')).toBeLessThanOrEqual(6);
  }, 120_000);
});

describe("a notice's word", () => {
  const WAVE = 'a'.repeat(40);
  const SAID = `fleet.collision/${'b'.repeat(40)}`;
  const speaker = memberKey(memberVm('spk'));
  const recordOf = (word: boolean, events = [{ id: 'SPK-E', status: 'Scheduled' }]) => ({
    ...{ member: speaker, vm: 'spk', resourceId: null, heartbeatAt: iso(T0), heartbeatSeconds: 20, slot: null },
    events: events.map((e) => ({
      eventId: e.id,
      eventType: 'Reboot',
      status: e.status,
      notBefore: iso(T0 + H),
      durationInSeconds: -1,
      approved: false,
    })),
    ...(word
      ? {
          wave: {
            ...{ wave: WAVE, said: SAID, kind: 'foreseen', at: iso(T0), from: iso(T0 + H), to: iso(T0 + 2 * H), due: 2 },
            copy: {
              ...{ maxUnavailable: 1, members: 2, from: iso(T0 + H), to: iso(T0 + 2 * H), atOnce: 2 },
              due: [
                { vm: 'spk', eventId: 'SPK-E', eventType: 'Reboot', notBefore: iso(T0 + H) },
                { vm: 'me', eventId: 'ME-E', eventType: 'Reboot', notBefore: iso(T0 + H) },
              ],
            },
          },
        }
      : {}),
  });
  const noticeOf = (more: Record<string, unknown> = {}) => ({
    ...{ member: null, wave: WAVE, speaker, vm: 'spk', from: iso(T0 + H), to: iso(T0 + 2 * H) },
    ...{ beat: iso(T0), heartbeatSeconds: 20, word: { said: SAID, kind: 'foreseen', at: iso(T0) }, ...more },
  });
  async function board(group: string, record: unknown, wrap: (s: FleetStore) => FleetStore = (s) => s) {
    const config = FleetConfig.parse({ group, maxUnavailable: 1, store: stores().config('blob') });
    const store = wrap(await openFleetStore(config.store, group));
    await store.put(memberName(speaker), record, null);
    await store.put(waveName(WAVE), noticeOf(), null);
    const b = new WaveBoard({ store, heartbeatSeconds: 20, logger: pino({ level: 'silent' }) });
    return { store, b, notice: () => store.list(WAVE_PREFIX).then((l) => noticesOf(l)[0]!) };
  }

  it("is read again until the speaker's record says it (written a moment after the notice), and after a store that failed", async () => {
    let fail = 0;
    const failing = (s: FleetStore): FleetStore => ({
      ...s,
      where: s.where,
      put: (n, v, ver, sig) => s.put(n, v, ver, sig),
      remove: (n, ver, sig) => s.remove(n, ver, sig),
      list: (p, sig) => s.list(p, sig),
      head: (p, l, sig) => s.head(p, l, sig),
      close: () => s.close(),
      get: (n, sig) => (fail-- > 0 ? Promise.reject(new Error('the store did not answer')) : s.get(n, sig)),
    });
    const { store, b, notice } = await board('word-later', recordOf(false), failing);
    expect(await b.word(await notice(), () => false)).toBeNull();
    const v = (await store.get(memberName(speaker)))!.version;
    await store.put(memberName(speaker), recordOf(true), v);
    fail = 1;
    expect(await b.word(await notice(), () => false)).toBeNull();
    expect((await b.word(await notice(), () => false))?.said).toBe(SAID);
    // read once found: not again
    expect(await b.word(await notice(), () => false)).toBeNull();
  });

  it('is not taken from a record whose member is none of those the word names due (a member naming others in a word of its own)', async () => {
    const { b, notice } = await board('word-forged', recordOf(true, [{ id: 'OTHER-E', status: 'Scheduled' }]));
    expect(await b.word(await notice(), () => false)).toBeNull();
  });

  it('a notice handed on keeps its word and names whose record holds it: a member reads the word from the speaker that said it', async () => {
    const config = FleetConfig.parse({ group: 'hand-on', maxUnavailable: 1, store: stores().config('blob') });
    const store = await openFleetStore(config.store, 'hand-on');
    await store.put(memberName(speaker), recordOf(true), null);
    await store.put(waveName(WAVE), noticeOf({ beat: iso(T0) }), null);
    const b = new WaveBoard({ store, heartbeatSeconds: 20, logger: pino({ level: 'silent' }) });
    const seen = { wave: WAVE, speaker: { member: memberKey(memberVm('next')), vm: 'next' }, from: T0 + H, to: T0 + 2 * H };
    await b.publish(seen, undefined, speaker, await store.list('slot-'), T0 + 5000);
    const n = noticesOf(await store.list(WAVE_PREFIX))[0]!;
    expect(n.value.speaker).toBe(seen.speaker.member);
    expect(n.value.word).toMatchObject({ said: SAID, by: speaker });
    const other = new WaveBoard({ store, heartbeatSeconds: 20, logger: pino({ level: 'silent' }) });
    expect((await other.word(n, () => false))?.said).toBe(SAID);
  });

  it('a speaker that hands the wave on with a word it said at that read puts the word in the notice, its own record holding it', async () => {
    const { store, b } = await board('hand-on-word', recordOf(true));
    const seen = { wave: WAVE, speaker: { member: memberKey(memberVm('next')), vm: 'next' }, from: T0 + H, to: T0 + 2 * H };
    const word = { wave: WAVE, said: `fleet.collision/${'4'.repeat(40)}`, kind: 'updated' as const, at: iso(T0 + 4000) };
    await b.publish(seen, { ...word, from: iso(T0 + H), to: iso(T0 + 2 * H), due: 2 }, speaker, await store.list('slot-'), T0 + 5000);
    const n = noticesOf(await store.list(WAVE_PREFIX))[0]!;
    expect(n.value.speaker).toBe(seen.speaker.member);
    expect(n.value.word).toMatchObject({ said: word.said, kind: 'updated', by: speaker });
  });

  it('another member hands the notice on only when its read of the group found the speaker named due no more', async () => {
    const { store, b, notice } = await board('hand-on-reader', recordOf(true));
    const reader = memberKey(memberVm('reader'));
    const seen = { wave: WAVE, speaker: { member: memberKey(memberVm('next')), vm: 'next' }, from: T0 + H, to: T0 + 2 * H };
    await b.publish(seen, undefined, reader, await store.list('slot-'), T0 + 5000);
    expect((await notice()).value.speaker).toBe(speaker);
    await b.publish({ ...seen, handed: true }, undefined, reader, await store.list('slot-'), T0 + 5000);
    expect((await notice()).value.speaker).toBe(seen.speaker.member);
    expect((await notice()).value.word).toMatchObject({ said: SAID, by: speaker });
  });
});

describe('a forged notice', () => {
  it('says a span of more than a day, with a long heartbeat: it covers nothing, and the wave is said all the same', async () => {
    const g = await groupOf('blob', 'turns-forged', 1, [{ names: ['f1', 'f2', 'f3'], at: H }]);
    const store = g.due[0]!.store;
    const wave = 'c'.repeat(40);
    const forged = {
      ...{ member: null, wave, speaker: 'nobody-00000000', vm: 'nobody', from: iso(0), to: '9999-12-31T00:00:00.000Z' },
      ...{ beat: iso(T0 + 30_000), heartbeatSeconds: 3600 },
    };
    await store.put(waveName(wave), forged, null);
    await g.run(30);
    expect(g.due.filter((m) => m.states().includes('foreseen')).length).toBe(3);
  }, 120_000);
});

describe('two notices of one wave', () => {
  it('written at once beside the one its members wrote, each naming another speaker: every member follows the same one, and the wave is said under one id', async () => {
    const g = await groupOf('blob', 'turns-two-notices', 1, [{ names: ['t1', 't2', 't3'], at: H }]);
    const store = g.due[0]!.store;
    for (const [wave, vm] of [
      ['d'.repeat(40), 't2'],
      ['e'.repeat(40), 't3'],
    ] as const) {
      const notice = {
        ...{ member: null, wave, speaker: memberKey(memberVm(vm)), vm, from: iso(T0 + H), to: iso(T0 + H + 600_000 + 2000) },
        ...{ beat: iso(T0), heartbeatSeconds: 5 },
      };
      await store.put(waveName(wave), notice, null);
    }
    await g.run(30);
    const words = g.due.flatMap((m) => m.said);
    expect(words.filter((e) => (e.data as { collision: { state: string } }).collision.state === 'foreseen').length).toBe(3);
    expect(new Set(words.map((e) => e.id)).size).toBe(1);
    expect(new Set(words.map((e) => (e.data as { collision: { id: string } }).collision.id)).size).toBe(1);
  }, 120_000);
});

describe('a speaker named for a wave already within the budget', () => {
  it('by a notice whose word no record holds: says nothing (a notice alone puts no word in a member’s mouth)', async () => {
    const g = await groupOf('blob', 'turns-named-resolved', 2, [{ names: ['r1', 'r2'], at: H }]);
    const wave = 'f'.repeat(40);
    const notice = {
      ...{ member: null, wave, speaker: memberKey(memberVm('r2')), vm: 'r2', from: iso(T0 + H), to: iso(T0 + H + 600_000 + 1000) },
      ...{ beat: iso(T0 + 1000), heartbeatSeconds: 5, word: { said: `fleet.collision/${'9'.repeat(40)}`, kind: 'foreseen', at: iso(T0) } },
    };
    await g.due[0]!.store.put(waveName(wave), notice, null);
    await g.run(12);
    for (const m of g.due) expect(m.states()).toEqual([]);
  }, 120_000);
});
