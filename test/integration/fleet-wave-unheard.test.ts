/**
 * A wave handed to a member that never heard its word (forecast-turn.ts, wave-handed.ts,
 * wave-board.ts): the speaker's maintenance starts moments after it said the wave, as far as its
 * records show with more still due than the budget allows, so it hands the wave to the member of
 * those the queue serves last; that member's own maintenance is under way before it reads the
 * notice, and it read the speaker's word for none of it (each member reads a word at a moment of
 * its own within five seconds). The wave must still be said resolved. Members in the test's
 * process, each a real FleetBudget and Forecast over Azurite's Blob Storage, on a clock the test
 * moves; each member's events follow a timeline the test sets.
 */
import { expect, it } from 'vitest';
import { WAVE_PREFIX } from '../../src/fleet/budget/records.ts';
import { noticesOf } from '../../src/fleet/budget/wave-board.ts';
import type { ScheduledEvent } from '../../src/imds/wire.ts';
import { fleetStoresPerFile } from '../../testkit/fleet-stores.ts';
import { rebootOf, waveMember, type WaveMember } from '../../testkit/wave-members.ts';

const stores = fleetStoresPerFile();
const H = 3_600_000;
const T0 = Date.parse('2026-12-01T08:00:00.000Z');
const stateOf = (e: { data: unknown }) => (e.data as { collision: { state: string; id: string } }).collision;

it('a wave handed, as its speaker leaves it, to a member whose maintenance is under way and that never heard its word: still said resolved, once, under its one id', async () => {
  const [group, k, hb] = ['handed-unheard', 2, 5];
  let [clock, s] = [T0, 0];
  // the second the speaker (v6) first said the wave: v3 to v6 start the second after it, and are over six seconds later
  let said = Infinity;
  const timeline = (vm: string, at: number, leaves: boolean) => (sec: number) => {
    const [started, gone] = leaves ? [said + 1, said + 7] : [Infinity, Infinity];
    return sec >= gone ? [] : [rebootOf(vm, `${vm.toUpperCase()}-E`, T0 + at, sec >= started ? 'Started' : 'Scheduled')];
  };
  const spec: Record<string, (sec: number) => ScheduledEvent[]> = {
    ...{ v1: timeline('v1', H, false), v2: timeline('v2', H + 1000, false) },
    ...{ v3: timeline('v3', H + 2000, true), v4: timeline('v4', H + 3000, true) },
    ...{ v5: timeline('v5', H + 4000, true), v6: timeline('v6', H + 5000, true) },
  };
  const ms: WaveMember[] = [];
  for (const name of Object.keys(spec))
    ms.push(await waveMember(stores(), 'blob', group, name, { k, clock: () => clock, heartbeatSeconds: hb }));
  const by = (n: string) => ms.find((m) => m.name === n)!;
  for (const m of [...ms].reverse()) await m.read(spec[m.name]!(0));
  // every member reads each second, the speaker first (its records of the others a read behind theirs), and beats every hb seconds
  const run = async (seconds: number) => {
    for (let i = 0; i < seconds; i++, s++) {
      clock += 1000;
      for (const m of [...ms].reverse()) {
        if (s % hb === 0) await m.budget.heartbeat();
        await m.read(spec[m.name]!(s));
      }
      if (said === Infinity && by('v6').said.length > 0) said = s;
      for (const n of noticesOf(await ms[0]!.store.list(WAVE_PREFIX))) if (speakers.at(-1) !== n.value.vm) speakers.push(n.value.vm);
    }
  };
  // the speakers the wave's notice named, in turn
  const speakers: string[] = [];
  await run(60);
  expect(said).toBeLessThan(20);
  // v6 handed the wave to v5, which heard nothing of it: its maintenance was under way before it read the notice
  expect(speakers.slice(0, 2)).toEqual(['v6', 'v5']);
  expect(by('v5').states()).toEqual([]);
  // the rest served (v1 and v2 are within the budget): the wave is said resolved, once, under one id, and repeated by the two due
  const resolved = ms.flatMap((m) => m.said.filter((e) => stateOf(e).state === 'resolved'));
  expect(new Set(resolved.map((e) => e.id)).size).toBe(1);
  expect(new Set(ms.flatMap((m) => m.said.map((e) => stateOf(e).id))).size).toBe(1);
  for (const n of ['v1', 'v2']) expect(by(n).states()).toEqual(['foreseen', 'resolved']);
  // by v6, which handed the wave on and kept it, as nobody took it over
  expect(by('v6').states()).toEqual(['foreseen', 'resolved']);
  expect(speakers).toEqual(['v6', 'v5', 'v6']);
  expect(noticesOf(await ms[0]!.store.list(WAVE_PREFIX))[0]!.value.word?.kind).toBe('resolved');
}, 180_000);
