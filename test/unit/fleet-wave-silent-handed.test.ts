/**
 * A member that took a silent notice over (wave-handed.ts) with the wave still past the budget
 * hands it on, writing the notice in the name of the member due that the queue serves last. Should
 * that member never take it (its maintenance under way before it heard the wave's word), the
 * notice it handed on falls silent in turn: the member that wrote it must see it as silent too, to
 * take the wave over once more, not as a notice it merely handed on (forecast-turn.ts `after`).
 */
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { ForecastTurn } from '../../src/fleet/budget/forecast-turn.ts';
import { WaveBoard } from '../../src/fleet/budget/wave-board.ts';
import type { FleetStore } from '../../src/fleet/budget/stores/port.ts';
import { MemoryStore } from '../../testkit/memory-store.ts';
import type { ForecastPort } from '../../src/fleet/budget/types.ts';
import type { SeenWave, WaveHint } from '../../src/fleet/budget/waves.ts';
import { rebootOf } from '../../testkit/wave-members.ts';

const T = Date.parse('2026-12-01T09:00:00.000Z');
const M = 600_000;
const HB = 20;
const WAVE = 'a'.repeat(40);
const SAID = `fleet.collision/${'9'.repeat(40)}`;
const iso = (t: number) => new Date(t).toISOString();

const memoryStore = (): FleetStore => new MemoryStore().store;

describe('a notice a member handed on after it took a silent notice over', () => {
  it('is silent to that member too once nobody renewed it for three heartbeats (its hint says so)', async () => {
    const store = memoryStore();
    let now = T - 2 * M;
    // v9 said the wave and wrote its notice; its bridge restarted since, and nobody renewed the notice
    const notice = {
      ...{ member: null, wave: WAVE, speaker: 'v9-key', vm: 'v9', from: iso(T), to: iso(T + 3 * M) },
      ...{ beat: iso(now), heartbeatSeconds: HB, word: { said: SAID, kind: 'foreseen', at: iso(now) } },
    };
    await store.put(`slot-wave-${WAVE}`, notice, null);
    const board = new WaveBoard({ store, heartbeatSeconds: HB, logger: pino({ level: 'silent' }) });
    let listed = await store.list('slot-');
    const hints: (WaveHint | undefined)[] = [];
    const port: ForecastPort = {
      ...{ foretell: () => Promise.resolve(null), word: undefined, speakAt: null, seen: undefined },
      ...{ adopt: (h) => hints.push(h), repeat: () => null, said: (id) => id === SAID },
    };
    let groupReads = 0;
    const turn = new ForecastTurn({
      ...{ forecast: port, board, everyone: false, me: () => 'v1-key', slots: () => listed },
      ...{ readSlots: async () => (listed = await store.list('slot-')), readGroup: () => Promise.resolve((groupReads++, [])) },
      ...{ atLimit: () => Promise.resolve(null), writeRecord: () => Promise.resolve(), heartbeatSeconds: HB, now: () => now },
    });
    const mine = [rebootOf('v1', 'V1-E', T + M)];
    // v1 repeated v9's word; the notice is silent: v1 takes it over, past the budget, and hands it to v5 (never heard the word)
    now += 4 * HB * 1000;
    listed = await store.list('slot-');
    await turn.after(mine, false, true);
    expect(hints.at(-1)?.silent).toBe(true);
    const handed: SeenWave = { wave: WAVE, speaker: { member: 'v5-key', vm: 'v5' }, from: T, to: T + 3 * M };
    await board.publish(handed, undefined, 'v1-key', listed, now);
    listed = await store.list('slot-');
    // v5's maintenance started before it read the notice: it never writes it; three heartbeats later it is silent to every member
    now += 4 * HB * 1000;
    listed = await store.list('slot-');
    await turn.after(mine, false, true);
    // v1 adopts it as silent (v5 due no more, it takes the wave over once more), as every other member that repeated its word does
    expect(hints.at(-1)).toMatchObject({ wave: WAVE, speaker: 'v5', silent: true });
    // and the group is read for it (at the heartbeat: v1 is on duty for the notice it handed on)
    expect(groupReads).toBeGreaterThan(0);
  });
});
