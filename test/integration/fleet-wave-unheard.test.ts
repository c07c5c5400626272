/**
 * A wave handed to a member that never heard its word (forecast-turn.ts, wave-handed.ts,
 * wave-board.ts): the speaker's maintenance starts moments after it said the wave, as far as its
 * records show with more still due than the budget allows, so it hands the wave to the member of
 * those the queue serves last; that member's own maintenance is under way before it reads the
 * notice, and it read the speaker's word for none of it (each member reads a word at a moment of
 * its own within five seconds). The wave must still be said resolved. Members in the test's
 * process, each a real FleetBudget and Forecast over Azurite's Blob Storage, on a clock the test
 * moves; each member's events follow a timeline the test sets. Also with the speaker's bridge
 * restarted once it handed the wave on (a Reboot restarts the bridge of the member whose maintenance
 * started, and what it said lives in its memory and journal): the members still due that repeated
 * the wave's word take the silent notice over.
 */
import { expect, it } from 'vitest';
import { WAVE_PREFIX } from '../../src/fleet/budget/records.ts';
import { noticesOf } from '../../src/fleet/budget/wave-board.ts';
import type { ScheduledEvent } from '../../src/imds/wire.ts';
import type { BridgeEvent } from '../../src/pipeline/cloudevent.ts';
import { fleetStoresPerFile } from '../../testkit/fleet-stores.ts';
import { rebootOf, waveMember, type WaveMember } from '../../testkit/wave-members.ts';

const stores = fleetStoresPerFile();
const H = 3_600_000;
const T0 = Date.parse('2026-12-01T08:00:00.000Z');
const stateOf = (e: { data: unknown }) => (e.data as { collision: { state: string; id: string } }).collision;

/**
 * handedOn: six members, K = 2, due a second apart; the speaker (v6) says the wave, then v3 to v6 start the second after it
 * and are over six seconds later, v6 reading first with its records of the others a read behind theirs, so it hands the wave
 * to v5, which never heard its word. With `restart`, v6's bridge starts afresh once it handed the wave on. Every member reads
 * each second and beats every 5 s, for `seconds` seconds on the test's clock.
 */
async function handedOn(group: string, seconds: number, restart: boolean) {
  const [k, hb] = [2, 5];
  let [clock, s] = [T0, 0];
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
  const member = (name: string) => waveMember(stores(), 'blob', group, name, { k, clock: () => clock, heartbeatSeconds: hb });
  const ms: WaveMember[] = [];
  for (const name of Object.keys(spec)) ms.push(await member(name));
  const by = (n: string) => ms.find((m) => m.name === n)!;
  // the speakers the wave's notice named, in turn; what v6 said before its restart
  const [speakers, before] = [[] as string[], [] as BridgeEvent[]];
  let restarted = false;
  // what v1 and v2 had said when v6 restarted
  let heard: string[] = [];
  for (const m of [...ms].reverse()) await m.read(spec[m.name]!(0));
  for (let i = 0; i < seconds; i++, s++) {
    clock += 1000;
    for (const m of [...ms].reverse()) {
      if (s % hb === 0) await m.budget.heartbeat();
      await m.read(spec[m.name]!(s));
    }
    if (said === Infinity && by('v6').said.length > 0) said = s;
    for (const n of noticesOf(await ms[0]!.store.list(WAVE_PREFIX))) if (speakers.at(-1) !== n.value.vm) speakers.push(n.value.vm);
    // its Reboot over, v6's bridge is back (its VM was down meanwhile, its record in the store as it last wrote it)
    if (restart && !restarted && s === said + 7) {
      [restarted, heard] = [true, ['v1', 'v2'].map((n) => by(n).states().join())];
      before.push(...by('v6').said);
      ms[ms.findIndex((m) => m.name === 'v6')] = await member('v6');
    }
  }
  const notice = noticesOf(await ms[0]!.store.list(WAVE_PREFIX))[0];
  return { said, by, speakers, restarted, heard, notice, words: [...before, ...ms.flatMap((m) => m.said)] };
}

it('a wave handed, as its speaker leaves it, to a member whose maintenance is under way and that never heard its word: still said resolved, once, under its one id', async () => {
  const { said, by, speakers, notice, words } = await handedOn('handed-unheard', 60, false);
  expect(said).toBeLessThan(20);
  // v6 handed the wave to v5, which heard nothing of it: its maintenance was under way before it read the notice
  expect(speakers.slice(0, 2)).toEqual(['v6', 'v5']);
  expect(by('v5').states()).toEqual([]);
  // the rest served (v1 and v2 are within the budget): the wave is said resolved, once, under one id, and repeated by the two due
  const resolved = words.filter((e) => stateOf(e).state === 'resolved');
  expect(new Set(resolved.map((e) => e.id)).size).toBe(1);
  expect(new Set(words.map((e) => stateOf(e).id)).size).toBe(1);
  for (const n of ['v1', 'v2']) expect(by(n).states()).toEqual(['foreseen', 'resolved']);
  // by v6, which handed the wave on and kept it, as nobody took it over
  expect(by('v6').states()).toEqual(['foreseen', 'resolved']);
  expect(speakers).toEqual(['v6', 'v5', 'v6']);
  expect(notice!.value.word?.kind).toBe('resolved');
}, 180_000);

it("the same wave, its speaker's bridge restarted after its Reboot, once it handed the wave on: a member still due that repeated its word takes the silent notice over and says it resolved", async () => {
  // the notice falls silent three heartbeats after v6 handed it on; the members due read at their backstop, within twenty heartbeats
  const { said, by, speakers, restarted, heard, notice, words } = await handedOn('handed-restart', 200, true);
  expect(said).toBeLessThan(20);
  // v6 restarted once its maintenance was over, having handed the wave to v5; v1 and v2 had repeated its word
  expect(restarted).toBe(true);
  expect(heard).toEqual(['foreseen', 'foreseen']);
  expect(speakers.slice(0, 2)).toEqual(['v6', 'v5']);
  expect(by('v5').states()).toEqual([]);
  // the restarted v6 says nothing more (it heard no word since it started)
  expect(by('v6').states()).toEqual([]);
  // one wave id, one resolved word, said by one of the two members due and repeated by the other
  expect(new Set(words.map((e) => stateOf(e).id)).size).toBe(1);
  expect(new Set(words.filter((e) => stateOf(e).state === 'resolved').map((e) => e.id)).size).toBe(1);
  for (const n of ['v1', 'v2']) expect(by(n).states()).toEqual(['foreseen', 'resolved']);
  expect(['v1', 'v2']).toContain(speakers.at(-1));
  expect(notice!.value.word?.kind).toBe('resolved');
}, 300_000);
