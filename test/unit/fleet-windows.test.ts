/**
 * The collision forecast's rules (src/fleet/budget/windows.ts) on generated inputs (seeded, so a
 * failure replays): the collision found is the one the plain search over every pair of windows
 * finds, at a cost that grows as n log n, and a NotBefore too far ahead is no window.
 */
import { describe, expect, it } from 'vitest';
import { HORIZON_MS, type MemberRecord } from '../../src/fleet/budget/records.ts';
import { collisionOf, collisionWith, windowsOf, type Collision, type Window } from '../../src/fleet/budget/windows.ts';
import { prng } from '../../testkit/prng.ts';

/** The plain search, as the forecast first had it: at each window's start, the members whose windows are open there. */
function plainCollisionOf(windows: readonly Window[], maxUnavailable: number): Collision | null {
  let best: { at: number; members: Set<string> } | null = null;
  for (const w of windows) {
    const at = w.from;
    const members = new Set(windows.filter((x) => x.from <= at && x.to > at).map((x) => x.vm));
    if (members.size > maxUnavailable && (best === null || members.size > best.members.size)) best = { at, members };
  }
  if (best === null) return null;
  const at = best.at;
  const overlapping = windows.filter((x) => x.from <= at && x.to > at).sort((a, b) => a.eventId.localeCompare(b.eventId));
  return { from: Math.min(...overlapping.map((w) => w.from)), to: Math.max(...overlapping.map((w) => w.to)), windows: overlapping };
}

const MIN = 60_000;
const t0 = Date.parse('2026-11-28T10:00:00.000Z');

describe('the collision forecast', () => {
  it('finds exactly the collision the plain search finds: the same moment, windows and order (5,000 generated groups)', () => {
    const rnd = prng(20261128);
    const int = (n: number) => Math.floor(rnd() * n);
    let found = 0;
    for (let i = 0; i < 5000; i++) {
      // few members and few distinct times, so windows of one member overlap, starts tie and ends meet starts
      const vms = 1 + int(8);
      const times = 1 + int(12);
      const windows: Window[] = Array.from({ length: int(40) }, (_, j) => {
        const from = t0 + int(times) * 5 * MIN;
        const length = rnd() < 0.05 ? -int(3) * 5 * MIN : (1 + int(6)) * 5 * MIN;
        return { vm: `vm-${int(vms)}`, eventId: `E-${int(30)}-${j}`, eventType: 'Reboot', from, to: from + length };
      });
      const k = int(5);
      const expected = plainCollisionOf(windows, k);
      expect(collisionOf(windows, k), JSON.stringify({ i, k, windows })).toEqual(expected);
      if (expected !== null) found += 1;
    }
    // both kinds of answer were asked for
    expect(found).toBeGreaterThan(500);
    expect(found).toBeLessThan(4500);
  });

  it('reads each window a number of times that grows as log n, not n: 8,000 windows of 40 members', () => {
    let reads = 0;
    const counted = (w: Window): Window => ({
      vm: w.vm,
      eventId: w.eventId,
      eventType: w.eventType,
      get from() {
        reads += 1;
        return w.from;
      },
      get to() {
        reads += 1;
        return w.to;
      },
    });
    const n = 8000;
    const windows = Array.from({ length: n }, (_, i) =>
      counted({ vm: `vm-${i % 40}`, eventId: `E-${i}`, eventType: 'Reboot', from: t0 + i * 1000, to: t0 + i * 1000 + 366 * 86_400_000 }),
    );
    const c = collisionOf(windows, 1);
    // the first moment 40 members are open: the first 40 windows (by EventId)
    expect(c?.windows.map((w) => w.eventId)).toEqual(
      windows
        .slice(0, 40)
        .map((w) => w.eventId)
        .sort((a, b) => a.localeCompare(b)),
    );
    // the plain search reads every window at every window's start: n² = 64 million reads
    expect(reads).toBeLessThan(64 * n);
  });

  it('a NotBefore more than a month ahead is no window (no maintenance is announced that far ahead)', () => {
    const event = (notBefore: string) => ({
      eventId: notBefore,
      eventType: 'Reboot',
      status: 'Scheduled',
      notBefore,
      durationInSeconds: -1,
      approved: false,
    });
    const record: MemberRecord = {
      ...{ member: 'm', vm: 'vm-m', resourceId: null, heartbeatAt: new Date(t0).toISOString(), heartbeatSeconds: 30, slot: null },
      events: [
        event(new Date(t0 + 86_400_000).toISOString()),
        event(new Date(t0 + HORIZON_MS + 1).toISOString()),
        event('9999-12-31T23:59:59Z'),
      ],
    };
    expect(windowsOf([record], t0).map((w) => w.eventId)).toEqual([new Date(t0 + 86_400_000).toISOString()]);
  });
});

describe("a member's own collision", () => {
  const w = (vm: string, from: number, to = from + 10 * MIN): Window => ({ vm, eventId: `${vm}-E`, eventType: 'Reboot', from, to });
  const earlier = [w('x1', t0), w('x2', t0 + 1000), w('x3', t0 + 2000)];
  const later = [w('y1', t0 + 4 * 60 * MIN), w('y2', t0 + 4 * 60 * MIN + 1000), w('y3', t0 + 4 * 60 * MIN + 2000)];

  it("is the wave it is due in, though an earlier wave is as busy: the group's busiest moment is the earlier wave's", () => {
    const all = [...earlier, ...later];
    expect(collisionOf(all, 1)?.windows.map((x) => x.vm)).toEqual(['x1', 'x2', 'x3']);
    expect(collisionWith(all, 1, (x) => x.vm === 'y2')?.windows.map((x) => x.vm)).toEqual(['y1', 'y2', 'y3']);
    expect(collisionWith(all, 1, (x) => x.vm === 'x3')?.windows.map((x) => x.vm)).toEqual(['x1', 'x2', 'x3']);
  });

  it('is a moment its own window is open: windows that overlap each other after its own ends are none of its collision', () => {
    // mine ends before the others meet: a and b overlap mine, each alone; they overlap each other only after mine
    const mine = w('me', t0, t0 + 10 * MIN);
    const a = w('a', t0 + 9 * MIN, t0 + 30 * MIN);
    const b = w('b', t0 + 11 * MIN, t0 + 30 * MIN);
    expect(collisionOf([mine, a, b], 1)).not.toBeNull();
    expect(collisionWith([mine, a, b], 1, (x) => x.vm === 'me')?.windows.map((x) => x.vm)).toEqual(['a', 'me']);
    expect(collisionWith([mine, a, b], 2, (x) => x.vm === 'me')).toBeNull();
  });
});
