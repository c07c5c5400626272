import { describe, expect, it } from 'vitest';
import { handedWave, type HandedTo } from '../../src/fleet/budget/wave-handed.ts';
import type { WaveHint } from '../../src/fleet/budget/waves.ts';
import type { Window } from '../../src/fleet/budget/windows.ts';
import { rebootOf } from '../../testkit/wave-members.ts';

const T = Date.parse('2026-12-01T09:00:00.000Z');
const M = 600_000;
const SAID = `fleet.collision/${'9'.repeat(40)}`;
const iso = (t: number) => new Date(t).toISOString();
const hint: WaveHint = {
  ...{ wave: 'a'.repeat(40), speaker: 'v3', member: 'v3-key' },
  word: { wave: 'a'.repeat(40), said: SAID, kind: 'foreseen', at: iso(T - M), from: iso(T), to: iso(T + M + 1000), due: 3 },
};
const windowOf = (vm: string, from: number): Window => ({
  vm,
  member: `${vm}-key`,
  eventId: `${vm.toUpperCase()}-E`,
  eventType: 'Reboot',
  from,
  to: from + M,
});
const to = (more: Partial<HandedTo> = {}): HandedTo => ({
  ...{ vm: 'v3', self: 'v3-key', room: 1, events: [rebootOf('v3', 'V3-E', T - M, 'Started')], lastOwn: undefined, said: undefined },
  ...{ heard: (id: string) => id === SAID, now: T - 1000, ...more },
});

describe('handedWave', () => {
  it('says resolved when the members due in the span are never more at once than the budget, one after another', () => {
    const r = handedWave(hint, [windowOf('v1', T), windowOf('v2', T + M + 500)], to());
    expect(r?.word?.kind).toBe('resolved');
    expect(r?.word?.wave).toBe(hint.wave);
    expect(r?.seen).toMatchObject({ wave: hint.wave, speaker: { member: 'v3-key', vm: 'v3' } });
  });

  it('hands the wave on to the member the queue serves last of those due at once past the budget, and says nothing', () => {
    const r = handedWave(hint, [windowOf('v1', T), windowOf('v2', T + 1000)], to());
    expect(r?.word).toBeUndefined();
    expect(r?.seen?.speaker).toEqual({ member: 'v2-key', vm: 'v2' });
  });

  it('says nothing again once it said the wave resolved (its notice written again)', () => {
    const said = { ...hint.word!, said: `fleet.collision/${'8'.repeat(40)}`, kind: 'resolved' as const };
    const r = handedWave(hint, [windowOf('v1', T)], to({ said }));
    expect(r?.word).toBeUndefined();
    expect(r?.seen?.speaker.member).toBe('v3-key');
  });

  it('is none of its own: another speaker named, a word it never heard, or a wave said resolved', () => {
    expect(handedWave({ ...hint, speaker: 'v9' }, [windowOf('v1', T)], to())).toBeNull();
    expect(handedWave(hint, [windowOf('v1', T)], to({ heard: () => false }))).toBeNull();
    expect(handedWave({ ...hint, word: { ...hint.word!, kind: 'resolved' } }, [windowOf('v1', T)], to())).toBeNull();
  });

  describe('a silent notice (not renewed for three heartbeats) naming another speaker', () => {
    // v1, still due, repeated the wave's word; the notice names v9, which nobody's records show due any more
    const silent: WaveHint = { ...hint, speaker: 'v9', member: 'v9-key', silent: true };
    const v1 = (more: Partial<HandedTo> = {}) => to({ vm: 'v1', self: 'v1-key', events: [rebootOf('v1', 'V1-E', T)], ...more });

    it('is taken over by a member that repeated its word, in its own name: said resolved within the budget, under the wave id', () => {
      const r = handedWave(silent, [windowOf('v1', T)], v1());
      expect(r?.word?.kind).toBe('resolved');
      expect(r?.word?.wave).toBe(hint.wave);
      expect(r?.seen?.speaker).toEqual({ member: 'v1-key', vm: 'v1' });
    });

    it('past the budget, is handed on to the member the queue serves last, and nothing is said', () => {
      const r = handedWave(silent, [windowOf('v1', T), windowOf('v2', T + 1000)], v1());
      expect(r?.word).toBeUndefined();
      expect(r?.seen?.speaker).toEqual({ member: 'v2-key', vm: 'v2' });
    });

    it('is left alone: its speaker still due, the notice still renewed, its word never heard, or this member unknown to the records', () => {
      expect(handedWave(silent, [windowOf('v1', T), windowOf('v9', T + 2 * M)], v1())).toBeNull();
      expect(handedWave({ ...silent, silent: false }, [windowOf('v1', T)], v1())).toBeNull();
      expect(handedWave(silent, [windowOf('v1', T)], v1({ heard: () => false }))).toBeNull();
      expect(handedWave(silent, [windowOf('v1', T)], v1({ self: undefined }))).toBeNull();
    });
  });

  it('speaks about the event it last said a word about once its own maintenance is over', () => {
    const own = rebootOf('v3', 'V3-E', T - M);
    const r = handedWave(hint, [windowOf('v1', T)], to({ events: [], lastOwn: own }));
    expect(r?.word === undefined ? undefined : r.own).toBe(own);
    expect(handedWave(hint, [windowOf('v1', T)], to({ events: [] }))).toBeNull();
  });
});
