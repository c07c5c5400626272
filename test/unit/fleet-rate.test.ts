/**
 * The group's rate (fleet.rate): how the slot records' stamps are counted, kept and given back,
 * and what a held approval is told.
 */
import { describe, expect, it } from 'vitest';
import { FleetConfig } from '../../src/fleet/budget/config.ts';
import { freeSlot, undoOf } from '../../src/fleet/budget/give-back.ts';
import {
  RATE_REASON,
  RateConfig,
  RateHeldError,
  rateHeld,
  rateHold,
  recentOf,
  room,
  stampsOf,
  unstamped,
} from '../../src/fleet/budget/rate.ts';
import { asSlot, type SlotRecord } from '../../src/fleet/budget/records.ts';
import { MemberEventSchema, SlotSchema } from '../../src/fleet/budget/schemas.ts';
import { QueuePlace } from '../../src/fleet/budget/queue.ts';
import { heldText } from '../../src/fleet/budget/group-text.ts';

const now = Date.parse('2026-11-29T10:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();
const slot = (name: string, stamps: [number, string][], member: string | null = null) => ({
  name,
  version: '1',
  value: { member, ...(member ? { vm: member } : {}), approvals: stamps.map(([at, eventId]) => ({ at: iso(now + at), eventId })) },
});
const rate = { approvals: 2, perSeconds: 60 };

describe('counting the approvals within the window', () => {
  it('counts each maintenance once (its earliest stamp), only within the window, never a stamp from far ahead', () => {
    const slots = [
      slot('slot-0', [
        [-70_000, 'old'],
        [-30_000, 'a'],
      ]),
      // one maintenance of two members: two slots, one approval
      slot('slot-1', [[-20_000, 'b']], 'vm-1'),
      slot('slot-2', [[-19_000, 'b']], 'vm-2'),
      // a clock a minute ahead still counts; a stamp an hour ahead counts nowhere
      slot('slot-3', [
        [60_000, 'c'],
        [3_600_000, 'forged'],
      ]),
    ];
    expect(recentOf(slots, 60, now)).toEqual([now - 30_000, now - 20_000, now + 60_000]);
    // exactly perSeconds old has left the window
    expect(recentOf([slot('slot-0', [[-60_000, 'x']])], 60, now)).toEqual([]);
    expect(recentOf([slot('slot-0', [[-59_999, 'x']])], 60, now)).toHaveLength(1);
  });

  it('holds the next approval until enough have left the window, and says when', () => {
    const slots = [slot('slot-0', [[-50_000, 'a']]), slot('slot-1', [[-10_000, 'b']])];
    // two of two: the next may come when the first leaves
    expect(rateHold(rate, slots, now)).toEqual({ count: 2, last: now - 10_000, next: now + 10_000 });
    expect(room(rate, slots, now)).toBe(0);
    // at the read back, its own stamp among them: two of two is within the rate
    expect(rateHold(rate, slots, now, 0)).toBeNull();
    expect(rateHold(rate, slots, now + 10_000)).toBeNull();
    expect(room(rate, slots, now + 10_000)).toBe(1);
    // three (a forced one went past it): the next may come once two have left
    const three = [...slots, slot('slot-2', [[-5_000, 'forced']])];
    expect(rateHold(rate, three, now)?.next).toBe(now + 50_000);
    expect(rateHold(undefined, three, now)).toBeNull();
    expect(room(undefined, three, now)).toBe(Infinity);
  });
});

describe('the stamps a slot keeps', () => {
  it('an early approval stamps its slot, keeping the stamps still within the window, at most a window of them', () => {
    const prior = asSlot(
      slot('slot-0', [
        [-120_000, 'gone'],
        [-40_000, 'a'],
        [-30_000, 'b'],
        [-20_000, 'c'],
      ]).value,
    );
    expect(stampsOf(prior, 'e', rate, now, true)).toEqual({
      approvals: [
        { at: iso(now - 30_000), eventId: 'b' },
        { at: iso(now - 20_000), eventId: 'c' },
        { at: iso(now), eventId: 'e' },
      ],
    });
    // a maintenance Started at NotBefore is no early approval: nothing stamped, the window kept
    expect(stampsOf(prior, 'e', rate, now, false).approvals?.map((s) => s.eventId)).toEqual(['b', 'c']);
    // a member without a rate keeps what the others stamped, and stamps nothing
    expect(stampsOf(prior, 'e', undefined, now, true)).toEqual({ approvals: prior.approvals });
    expect(stampsOf(undefined, 'e', undefined, now, true)).toEqual({});
  });

  it('a slot given back keeps its stamps; an approval IMDS refused, or given back at the read back, takes its own away', () => {
    const held: SlotRecord = {
      ...asSlot(
        slot(
          'slot-0',
          [
            [-10_000, 'a'],
            [0, 'mine'],
          ],
          'vm-0',
        ).value,
      ),
      eventIds: ['mine'],
    };
    expect(freeSlot(held, now).approvals?.map((s) => s.eventId)).toEqual(['a', 'mine']);
    const undone = undoOf('slot-0', held, 'mine', now);
    expect(undone !== 'delete' && undone.approvals?.map((s) => s.eventId)).toEqual(['a']);
    expect(unstamped({ member: null, approvals: [{ at: iso(now), eventId: 'mine' }] }, 'mine')).toEqual({ member: null });
  });

  it('reads stamps by their schema: a list that does not read is none, and the slot still reads', () => {
    for (const bad of [
      [{ at: 'yesterday', eventId: 'a' }],
      'a',
      [{ at: iso(now) }],
      Array.from({ length: 201 }, () => ({ at: iso(now), eventId: 'a' })),
    ]) {
      const s = asSlot({ member: 'vm-0', vm: 'vm-0', approvals: bad });
      expect(s.unread).toBeUndefined();
      expect(s.approvals).toBeUndefined();
    }
    expect(SlotSchema.parse({ member: null, approvals: [{ at: iso(now), eventId: 'a' }] }).approvals).toHaveLength(1);
  });
});

describe('what a held approval is told', () => {
  it('HELD, saying the rate, the last approval and when the next may come', () => {
    const hold = rateHold(rate, [slot('slot-0', [[-50_000, 'a']]), slot('slot-1', [[-10_000, 'b']])], now)!;
    const err = rateHeld('kafka-prod', rate, hold, []);
    expect(err.code).toBe('HELD');
    expect(err.message).toBe(
      'group kafka-prod allows 2 early approvals in any 60 s, and gave 2 within the last 60 s (the last at 2026-11-29T09:59:50.000Z); the next may come at 2026-11-29T10:00:10.000Z',
    );
    expect(RATE_REASON).toBe('rate');
    // its reason and when the next may come, for the member's record and fleet status
    expect(err).toBeInstanceOf(RateHeldError);
    expect(err).toMatchObject({ reason: 'rate', next: '2026-11-29T10:00:10.000Z' });
    const queue = new QueuePlace({ maxUnavailable: 1, retryMs: 1000, heartbeatSeconds: 30 });
    queue.heldNow('E1', err, 'policy', 1, now);
    const held = queue.approvals.get('E1')!;
    expect(held).toMatchObject({ next: '2026-11-29T10:00:10.000Z', via: 'policy' });
    expect(MemberEventSchema.shape.held.parse(held)).toMatchObject({ next: held.next });
    expect(heldText(held)).toBe(
      "held by the group's rate (the next early approval may come at 2026-11-29T10:00:10.000Z) since 2026-11-29T10:00:00.000Z",
    );
  });
});

describe('fleet.rate in the configuration', () => {
  const store = { type: 'kubernetes', namespace: 'n' };
  it('takes whole numbers within their limits, and refuses the rest naming the path', () => {
    expect(FleetConfig.parse({ group: 'g', maxUnavailable: 1, store, rate: { approvals: 1, perSeconds: 600 } }).rate).toEqual({
      approvals: 1,
      perSeconds: 600,
    });
    const bad = [
      [{ approvals: 0, perSeconds: 60 }, ['rate', 'approvals']],
      [{ approvals: 1.5, perSeconds: 60 }, ['rate', 'approvals']],
      [{ approvals: 101, perSeconds: 60 }, ['rate', 'approvals']],
      [{ approvals: 1, perSeconds: 0 }, ['rate', 'perSeconds']],
      [{ approvals: 1, perSeconds: 8 * 86400 }, ['rate', 'perSeconds']],
      [{ approvals: 1 }, ['rate', 'perSeconds']],
      [{ approvals: 1, perSeconds: 60, per: 'minute' }, ['rate']],
    ] as const;
    for (const [r, path] of bad)
      expect(FleetConfig.safeParse({ group: 'g', maxUnavailable: 1, store, rate: r }).error?.issues[0]?.path, JSON.stringify(r)).toEqual(
        path,
      );
    expect(RateConfig.safeParse({ approvals: 3, perSeconds: 600 }).success).toBe(true);
    // a rate without a budget would brake nothing
    expect(FleetConfig.safeParse({ group: 'g', store, rate: { approvals: 1, perSeconds: 60 } }).error?.issues[0]).toMatchObject({
      path: ['rate'],
      message: 'needs maxUnavailable: without a budget nothing holds an approval',
    });
  });
});
