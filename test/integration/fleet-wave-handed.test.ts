/**
 * A wave handed to a member (forecast-turn.ts, wave-handed.ts, wave-board.ts): the speaker a
 * notice names keeps the wave while its own maintenance is under way, says it resolved once, or
 * hands it on; a reader hands a notice on only when its speaker is due no more; and a notice alone,
 * of any span, never has a member say a word or read the group. Members in the test's process, each
 * a real FleetBudget and Forecast over Azurite's Blob Storage, on a clock the test moves; each
 * member's events follow a timeline the test sets.
 */
import { describe, expect, it } from 'vitest';
import { memberKey, WAVE_PREFIX } from '../../src/fleet/budget/records.ts';
import { noticesOf, waveName } from '../../src/fleet/budget/wave-board.ts';
import type { FleetStore } from '../../src/fleet/budget/stores/port.ts';
import type { ScheduledEvent } from '../../src/imds/wire.ts';
import { fleetStoresPerFile, memberVm } from '../../testkit/fleet-stores.ts';
import { rebootOf, waveMember, type WaveMember } from '../../testkit/wave-members.ts';

const stores = fleetStoresPerFile();
const H = 3_600_000;
const T0 = Date.parse('2026-12-01T08:00:00.000Z');
const iso = (t: number) => new Date(t).toISOString();
const stateOf = (e: { data: unknown }) => (e.data as { collision: { state: string; id: string } }).collision;

/** A member's maintenance by the second of the test: Scheduled, then Started from `started`, gone from `gone`. */
const timeline =
  (vm: string, at: number, started = Infinity, gone = Infinity) =>
  (s: number) =>
    s >= gone ? [] : [rebootOf(vm, `${vm.toUpperCase()}-E`, T0 + at, s >= started ? 'Started' : 'Scheduled')];

/** Members whose events follow their timelines; each reads every second, and beats every hb seconds; lists of the members' records counted. */
async function world(group: string, k: number, spec: Record<string, (s: number) => ScheduledEvent[]>, hb = 5) {
  let [clock, s] = [T0, 0];
  const lists = new Map<string, number>();
  const counting =
    (name: string) =>
    (st: FleetStore): FleetStore => ({
      ...{ where: st.where, get: st.get.bind(st), put: st.put.bind(st), remove: st.remove.bind(st), head: st.head.bind(st) },
      close: () => st.close(),
      list: (p, sig) => {
        if (p === 'member-') lists.set(name, (lists.get(name) ?? 0) + 1);
        return st.list(p, sig);
      },
    });
  const ms: WaveMember[] = [];
  for (const name of Object.keys(spec))
    ms.push(await waveMember(stores(), 'blob', group, name, { k, clock: () => clock, heartbeatSeconds: hb, wrap: counting(name) }));
  for (const m of [...ms].reverse()) await m.read(spec[m.name]!(0));
  return {
    ms,
    by: (n: string) => ms.find((m) => m.name === n)!,
    store: ms[0]!.store,
    lists,
    now: () => clock,
    notices: async () => noticesOf(await ms[0]!.store.list(WAVE_PREFIX)),
    async run(seconds: number, each?: () => Promise<void>) {
      for (let i = 0; i < seconds; i++, s++) {
        clock += 1000;
        for (const m of [...ms].reverse()) {
          if (s % hb === 0) await m.budget.heartbeat();
          await m.read(spec[m.name]!(s));
        }
        await each?.();
      }
    },
  };
}

const noticeOf = (wave: string, speaker: string, from: number, to: number, beat: number, more: Record<string, unknown> = {}) => ({
  ...{ member: null, wave, speaker: memberKey(memberVm(speaker)), vm: speaker, from: iso(from), to: iso(to) },
  ...{ beat: iso(beat), heartbeatSeconds: 5, word: { said: `fleet.collision/${'9'.repeat(40)}`, kind: 'foreseen', at: iso(T0) }, ...more },
});

describe('the speaker handed a wave as its own maintenance starts', () => {
  it('keeps the wave while its maintenance is under way and over, and says it resolved once the rest are within the budget; the members due repeat that', async () => {
    // K = 2, six due: v6 speaks (the queue serves it last); the maintenance of v3 to v6 starts in one second, v6's read first,
    // with five still due as far as it knows, so it hands the wave to v5, which never read the group (the members at the
    // limit, v3 and v4, did) and whose own maintenance is under way before it reads the notice; all four are over at 25 s
    const g = await world('handed-duty', 2, {
      ...{ v1: timeline('v1', H), v2: timeline('v2', H + 1000) },
      ...{ v3: timeline('v3', H + 2000, 20, 25), v4: timeline('v4', H + 3000, 20, 25) },
      ...{ v5: timeline('v5', H + 4000, 20, 25), v6: timeline('v6', H + 5000, 20, 25) },
    });
    await g.run(20);
    expect(g.ms.map((m) => m.states())).toEqual(Array.from({ length: 6 }, () => ['foreseen']));
    expect((await g.notices())[0]!.value.vm).toBe('v6');
    expect(g.lists.get('v5') ?? 0).toBe(0);
    await g.run(25);
    const resolved = g.ms.flatMap((m) => m.said.filter((e) => stateOf(e).state === 'resolved'));
    expect(new Set(resolved.map((e) => e.id)).size).toBe(1);
    expect(new Set(g.ms.flatMap((m) => m.said.map((e) => stateOf(e).id))).size).toBe(1);
    // said by the speaker handed the wave, about its own maintenance (over now), and repeated by the two still due
    expect(g.by('v5').states()).toEqual(['foreseen', 'resolved']);
    for (const n of ['v1', 'v2']) expect(g.by(n).states()).toEqual(['foreseen', 'resolved']);
    expect((await g.notices())[0]!.value.word?.kind).toBe('resolved');
  }, 120_000);
});

describe('a notice alone', () => {
  it('of a wave a member never said a word of, naming it while its own maintenance is under way: no word said, and no read of the group', async () => {
    const g = await world('handed-forged', 1, { g1: (s) => [rebootOf('g1', 'G1-E', T0 + s * 1000, 'Started')] });
    for (const w of ['1', '2', '3']) {
      const wave = w.repeat(40);
      await g.store.put(waveName(wave), noticeOf(wave, 'g1', T0 + 5 * H, T0 + 5 * H + 600_000, T0 + 1000), null);
    }
    const day = '4'.repeat(40);
    await g.store.put(waveName(day), noticeOf(day, 'g1', 0, Date.parse('9999-12-31T00:00:00.000Z'), T0 + 1000), null);
    const before = g.lists.get('g1') ?? 0;
    await g.run(12);
    expect(g.by('g1').states()).toEqual([]);
    expect((g.lists.get('g1') ?? 0) - before).toBe(0);
  }, 120_000);

  it('naming a member with no maintenance, renewed by another member: it never reads the group', async () => {
    const g = await world('handed-idle', 1, { idle: () => [], other: () => [] });
    const wave = '7'.repeat(40);
    const put = async () => {
      const cur = (await g.notices()).find((n) => n.value.wave === wave);
      await g.store.put(waveName(wave), noticeOf(wave, 'idle', T0 + H, T0 + H + 600_000, g.now()), cur?.version ?? null);
    };
    await put();
    const before = g.lists.get('idle') ?? 0;
    let step = 0;
    await g.run(60, async () => {
      if (++step % 10 === 0) await put();
    });
    expect((g.lists.get('idle') ?? 0) - before).toBe(0);
  }, 120_000);
});

describe('a reader that finds the speaker named by a notice it follows', () => {
  it('due in another wave, not this one: leaves the notice to it, and each wave keeps its id', async () => {
    // K = 1. Wave 1: a and s1 at H, its notice naming s1; wave 2: r and zq half an hour later, its notice naming r. Wave 1's
    // notice spans both (it sorts first, so r follows it); nobody's maintenance starts
    const g = await world('handed-other-wave', 1, {
      a: timeline('a', H),
      s1: timeline('s1', H + 1000),
      r: timeline('r', H + 1_800_000),
      zq: timeline('zq', H + 1_801_000),
    });
    const [w1, w2] = ['1'.repeat(40), '2'.repeat(40)];
    await g.store.put(waveName(w1), noticeOf(w1, 's1', T0 + H, T0 + H + 2_700_000, T0 + 1000), null);
    await g.store.put(waveName(w2), noticeOf(w2, 'r', T0 + H + 1_800_000, T0 + H + 2_401_000, T0 + 1000, { word: undefined }), null);
    const speakers = new Set<string>();
    await g.run(150, async () => {
      const n = (await g.notices()).find((x) => x.value.wave === w1);
      speakers.add(`${n?.value.vm}@${n?.value.from}`);
    });
    expect([...speakers]).toEqual([`s1@${iso(T0 + H)}`]);
    const words = g.ms.flatMap((m) => m.said.map((e) => ({ m: m.name, ...stateOf(e) })));
    expect(words.filter((w) => ['a', 's1'].includes(w.m)).every((w) => w.id === w1)).toBe(true);
    expect(words.filter((w) => ['r', 'zq'].includes(w.m)).every((w) => w.id !== w1)).toBe(true);
  }, 180_000);
});
