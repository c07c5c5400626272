/**
 * SlotWatch (src/fleet/budget/slot-watch.ts) over a store whose watch the test drives: what it
 * says of the slots (`full`), when it wakes the member, and that it closes. The watch over the
 * Kubernetes API stand-in: test/integration/kube-watch.test.ts; a whole bridge woken by it:
 * test/integration/fleet-slot-watch.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { SlotWatch } from '../../src/fleet/budget/slot-watch.ts';
import { FleetStoreError, type FleetStore, type Versioned } from '../../src/fleet/budget/stores/port.ts';
import { silentLogger } from '../helpers.ts';

const NOW = Date.parse('2026-11-30T08:00:00Z');
const slot = (n: number, member: string | null, untilMs: number, version = '1'): Versioned => ({
  name: `slot-${n}`,
  value: member === null ? { member: null } : { member, vm: member, until: new Date(untilMs).toISOString() },
  version,
});

function watched(k: number) {
  let now = NOW;
  let seen: ((records: readonly Versioned[] | null, why?: FleetStoreError) => void) | undefined;
  let signal: AbortSignal | undefined;
  const wakes: number[] = [];
  const store = {
    watch: (_prefix: string, s: AbortSignal, on: typeof seen) => {
      [signal, seen] = [s, on];
      return new Promise<void>((resolve) => s.addEventListener('abort', () => resolve()));
    },
  } as unknown as FleetStore;
  const watch = new SlotWatch({
    store,
    group: 'g',
    logger: silentLogger,
    k: () => k,
    now: () => now,
    wake: (free) => void wakes.push(free),
  });
  return {
    watch,
    say: (records: readonly Versioned[] | null) =>
      seen!(records, records === null ? new FleetStoreError('watch slot-*', 'cut') : undefined),
    at: (ms: number) => (now = NOW + ms),
    wakes: () => wakes.length,
    freed: () => wakes,
    signal: () => signal,
  };
}

describe('a watch of the slots', () => {
  it('says full while every slot is held, until one is given back or passes its recorded end', () => {
    const w = watched(2);
    expect(w.watch.full).toBe(false);
    w.watch.want(true);
    // not listed yet: not known to be full
    expect(w.watch.full).toBe(false);
    w.say([slot(1, 'a', NOW + 60_000), slot(2, 'b', NOW + 10_000)]);
    expect(w.watch.full).toBe(true);
    expect(w.wakes()).toBe(0);
    // b's slot past its recorded end: free from that moment, with no change to say it
    w.at(10_000);
    expect(w.watch.full).toBe(false);
  });

  it('wakes the member when a slot is given back, not at a renewal or a write that changes no holder', () => {
    const w = watched(2);
    w.watch.want(true);
    w.say([slot(1, 'a', NOW + 60_000), slot(2, 'b', NOW + 60_000)]);
    w.say([slot(1, 'a', NOW + 90_000, '2'), slot(2, 'b', NOW + 60_000)]);
    w.say([slot(1, 'a', NOW + 90_000, '2'), slot(2, 'b', NOW + 60_000), { name: 'slot-wave-x', value: { wave: 'x' }, version: '1' }]);
    expect(w.wakes()).toBe(0);
    w.say([slot(1, 'a', NOW + 90_000, '2'), slot(2, null, 0, '3')]);
    expect(w.wakes()).toBe(1);
    expect(w.watch.full).toBe(false);
    // taken again by another: full, nobody woken
    w.say([slot(1, 'a', NOW + 90_000, '2'), slot(2, 'c', NOW + 60_000, '4')]);
    expect([w.wakes(), w.watch.full]).toEqual([1, true]);
    // a holder changed while one is free: woken (it may be its turn now)
    w.say([slot(1, 'd', NOW + 90_000, '5')]);
    expect(w.wakes()).toBe(2);
    // told how many are free: the member wakes only if its place is within them
    expect(w.freed()).toEqual([1, 1]);
  });

  it('down: not full (the member looks at every read), and woken again once back with a slot free', () => {
    const w = watched(1);
    w.watch.want(true);
    w.say([slot(1, 'a', NOW + 60_000)]);
    expect(w.watch.full).toBe(true);
    w.say(null);
    expect(w.watch.full).toBe(false);
    w.say([slot(1, 'a', NOW + 60_000)]);
    expect([w.watch.full, w.wakes()]).toEqual([true, 0]);
    w.say(null);
    w.say([slot(1, null, 0, '2')]);
    expect(w.wakes()).toBe(1);
  });

  it('is opened once however often it is wanted, and closed when no longer wanted', () => {
    const w = watched(1);
    w.watch.want(true);
    const first = w.signal();
    w.watch.want(true);
    expect(w.signal()).toBe(first);
    w.say([slot(1, 'a', NOW + 60_000)]);
    w.watch.want(false);
    expect(first?.aborted).toBe(true);
    expect(w.watch.full).toBe(false);
  });
});
