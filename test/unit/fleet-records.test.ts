/**
 * The pure rules over a fleet store's records, on generated inputs (seeded, so a failure replays):
 * what the budget writes reads back by its own schema, and what it reads from a record it could
 * not have written.
 */
import { describe, expect, it } from 'vitest';
import { asSlot, live, slotRecordOf } from '../../src/fleet/budget/records.ts';
import { SlotSchema } from '../../src/fleet/budget/schemas.ts';
import { prng } from '../../testkit/prng.ts';

const DAY = 86_400_000;
const me = { key: 'vm-a-0000', vm: { name: 'vm-a', resourceId: null } };

describe('what the budget writes', () => {
  it('a slot record for any event IMDS may list (NotBefore up to the year 9999 and past it, any duration and margin) reads back live, its end at most a month on', () => {
    const rnd = prng(20261128);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
    for (let i = 0; i < 2000; i++) {
      const now = Date.parse('2026-01-01T00:00:00Z') + Math.floor(rnd() * 30 * 365 * DAY);
      const notBefore = pick([
        null,
        'not a time',
        '9999-12-31T23:59:59Z',
        // a NotBefore of 9999-12-31 with a zone west of UTC is past the year 9999 in UTC
        '+010000-01-01T23:58:59Z',
        new Date(now - Math.floor(rnd() * DAY)).toISOString(),
        new Date(now + Math.floor(rnd() * 3650 * DAY)).toISOString(),
      ]);
      const durationInSeconds = pick([-1, 0, Math.floor(rnd() * 366 * 86400), 2 ** 53 - 1]);
      const margin = 5 + Math.floor(rnd() * (7 * 86400 - 5));
      const event = { eventId: `E-${i}`, notBefore, durationInSeconds };
      const record = slotRecordOf(me, event, 'early', { by: 'test' }, now, margin);
      const read = JSON.parse(JSON.stringify(record)) as unknown;
      const what = JSON.stringify({ now: new Date(now).toISOString(), event, margin });
      expect(SlotSchema.safeParse(read).success, what).toBe(true);
      expect(live(asSlot(read), now), what).toBe(true);
      expect(Date.parse(record.until!), what).toBeLessThanOrEqual(now + 31 * DAY);
    }
  });
});

describe('a slot record the budget could not have written', () => {
  it('names a holder: counts as held, with no end, and is nobody’s own; names none: a free slot', () => {
    const now = Date.parse('2026-11-28T10:00:00Z');
    const far = asSlot({ member: 'vm-x-1', vm: 'vm-x', eventIds: ['E'], until: '+010000-01-01T00:00:00.000Z' });
    expect(far).toMatchObject({ member: 'vm-x-1', vm: 'vm-x', eventIds: ['E'], unread: expect.stringMatching(/^until: /) });
    expect(far.until).toBeUndefined();
    expect(live(far, now)).toBe(true);
    expect(live(far, Date.parse('9999-12-31T23:59:59Z'))).toBe(true);
    // a newer shape, any value that is no text: still its holder's, never more than a line of it
    expect(asSlot({ member: 'vm-y-1', mode: 'draining', vm: 7 })).toMatchObject({ member: 'vm-y-1', vm: 'vm-y-1' });
    expect(asSlot({ member: `${'m'.repeat(5000)}`, until: 'x' }).member).toHaveLength(256);
    for (const free of [undefined, null, 'not JSON', [], { member: null, until: 'x' }, { member: 7 }, { vm: 'vm-z' }])
      expect(asSlot(free), JSON.stringify(free)).toEqual({ member: null });
  });
});
