/**
 * One wave, one id (forecast-turn.ts, wave-board.ts, collisions.ts): a member that reads the group
 * for a wave no notice covers, as its last listing of the slots says, does not write a second notice
 * for a wave whose notice was written since that listing (a member that holds no slot lists them at
 * its heartbeats), so the wave is not said foreseen twice under two ids. Members in the test's
 * process, each a real FleetBudget and Forecast over Azurite's Blob Storage, on a clock the test
 * moves; each member's events follow a timeline the test sets, and each beats at a second of its own.
 */
import { expect, it } from 'vitest';
import { WAVE_PREFIX } from '../../src/fleet/budget/records.ts';
import { noticesOf, waveName } from '../../src/fleet/budget/wave-board.ts';
import { waveIdOf } from '../../src/fleet/budget/waves.ts';
import type { ScheduledEvent } from '../../src/imds/wire.ts';
import { fleetStoresPerFile } from '../../testkit/fleet-stores.ts';
import { rebootOf, waveMember, type WaveMember } from '../../testkit/wave-members.ts';

const stores = fleetStoresPerFile();
const H = 3_600_000;
const T0 = Date.parse('2026-12-01T08:00:00.000Z');
const stateOf = (e: { data: unknown }) => (e.data as { collision: { state: string; id: string } }).collision;

/** A member's maintenance by the second of the test: Scheduled, then Started from `started`, gone from `gone`. */
const timeline =
  (vm: string, at: number, started = Infinity, gone = Infinity) =>
  (s: number) =>
    s >= gone ? [] : [rebootOf(vm, `${vm.toUpperCase()}-E`, T0 + at, s >= started ? 'Started' : 'Scheduled')];

it("a member first at the limit whose listing of the slots is older than the wave's notice writes no second notice: the wave is said foreseen once, under one id", async () => {
  // K = 2, nine due a second apart, v9 last (its speaker). At 0 s v3, first at the budget's limit, reads the group and writes
  // the wave's notice naming v9; v9 lists it at its heartbeat (1 s) and reads the group, the speaker, and its maintenance
  // starts at 2 s (served early), before it said the wave, so it says it as it leaves (4 s) and hands the notice on to v8.
  // v1 and v2 are served at 3 s, so v5, which lists the slots at its heartbeats (0 s, before the notice, and 5 s), stands
  // first at the limit at 4 s, its maintenance uncovered as its listing says. It reads the group (v3 to v8 due, v9 no more)
  // and would write a second notice, under the id of the wave as it sees it, naming v8; every member would follow that one
  // from its listing at 5 s (it sorts first), and v8, named by it, would never hear v9's word (v8 never saw v9 due, and that
  // notice holds no word): it would say the wave foreseen at 9 s under the second id, and every member repeat both words.
  // Every member acts in turn, on the test's clock: no backstop read comes within 40 s (ten heartbeats at the least)
  const [group, k, hb] = ['wave-ids', 2, 5];
  const spec: Record<string, (s: number) => ScheduledEvent[]> = {
    ...{ v9: timeline('v9', H + 8000, 2, 10), v8: timeline('v8', H + 7000), v7: timeline('v7', H + 6000) },
    ...{ v6: timeline('v6', H + 5000), v5: timeline('v5', H + 4000), v4: timeline('v4', H + 3000) },
    ...{ v3: timeline('v3', H + 2000), v2: timeline('v2', H + 1000, 3, 10), v1: timeline('v1', H, 3, 10) },
  };
  // the second a member beats at, of every hb (v9 the second after the notice is written; the rest at 0)
  const phase: Record<string, number> = { v9: 1 };
  // the group's name is such that the notice of the wave as v5 would see it (v3 to v8 due) sorts before the first: every
  // member would follow it, and its speaker would never hear the word v9 said
  const ids = (ns: number[]) => ns.map((n) => `V${n}-E`);
  const [first, second] = [waveIdOf(group, ids([1, 2, 3, 4, 5, 6, 7, 8, 9])), waveIdOf(group, ids([3, 4, 5, 6, 7, 8]))];
  expect(waveName(second) < waveName(first)).toBe(true);

  let clock = T0;
  const ms: WaveMember[] = [];
  for (const name of Object.keys(spec))
    ms.push(await waveMember(stores(), 'blob', group, name, { k, clock: () => clock, heartbeatSeconds: hb }));
  for (const m of ms) await m.read(spec[m.name]!(-1));
  // each second, every member in turn (v9 first) beats when its second comes and reads IMDS; the notices listed after each
  const written = new Set<string>();
  for (let s = 0; s < 40; s++) {
    clock += 1000;
    for (const m of ms) {
      if ((s - (phase[m.name] ?? 0)) % hb === 0) await m.budget.heartbeat();
      await m.read(spec[m.name]!(s));
    }
    for (const n of noticesOf(await ms[0]!.store.list(WAVE_PREFIX))) written.add(n.value.wave);
  }

  // v9 said the wave as it left, under the id of the notice it read
  const by = (n: string) => ms.find((m) => m.name === n)!;
  expect(by('v9').states()).toEqual(['foreseen']);
  expect(stateOf(by('v9').said[0]!).id).toBe(first);
  // one foreseen, one wave id, one notice: every member due said it once, under v9's CloudEvent id
  const all = ms.flatMap((m) => m.said);
  expect(new Set(all.filter((e) => stateOf(e).state === 'foreseen').map((e) => e.id))).toEqual(new Set([by('v9').said[0]!.id]));
  expect(new Set(all.map((e) => stateOf(e).id))).toEqual(new Set([first]));
  for (const n of ['v3', 'v4', 'v5', 'v6', 'v7', 'v8']) expect(by(n).states()).toEqual(['foreseen']);
  expect([...written]).toEqual([first]);
}, 180_000);
