/**
 * The pure rules over a fleet store's records, on generated inputs (seeded, so a failure replays):
 * what the budget writes reads back by its own schema, and what it reads from a record it could
 * not have written.
 */
import { describe, expect, it } from 'vitest';
import { groupOf } from '../../src/fleet/budget/group.ts';
import { membersOf, skippedOf } from '../../src/fleet/budget/parse.ts';
import { asSlot, live, slotRecordOf, staleAt } from '../../src/fleet/budget/records.ts';
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

describe("a member record's numbers", () => {
  const now = Date.parse('2026-11-28T10:00:00.000Z');
  const record = (vm: string, more: Record<string, unknown>) => ({
    name: `member-${vm}`,
    version: '1',
    value: {
      member: vm,
      vm,
      resourceId: null,
      heartbeatAt: new Date(now).toISOString(),
      heartbeatSeconds: 30,
      slot: null,
      events: [],
      ...more,
    },
  });

  it('a heartbeat period outside what a configuration allows (5 to 3600 s, whole seconds): the record is left out and named', () => {
    const odd = [0.5, 0, -1, 4, 3601, 1e12, 1e308, 30.5].map((h, i) => record(`odd-${i}`, { heartbeatSeconds: h }));
    const ok = [5, 30, 3600].map((h) => record(`ok-${h}`, { heartbeatSeconds: h }));
    expect(membersOf([...odd, ...ok]).map((m) => m.vm)).toEqual(['ok-5', 'ok-30', 'ok-3600']);
    expect(skippedOf(odd).map((s) => s.why)).toEqual(odd.map(() => expect.stringMatching(/^heartbeatSeconds: /)));
  });

  it('a maxUnavailable other than the configuration allows (1 to 100, or "1%" to "100%") states none: the member still counts', () => {
    const odd = [0, -1, 1.5, 101, 1e308, 'abc', '0%', '101%', '1e2', '50', ' 50%', '050%', true, null, {}];
    const ok = [1, 100, '1%', '50%', '100%'];
    const members = membersOf([...odd, ...ok].map((v, i) => record(`m-${i}`, { maxUnavailable: v })));
    expect(members.map((m) => m.maxUnavailable)).toEqual([...odd.map(() => undefined), ...ok]);
    // a group whose records state only what reads as none has no budget (the fleet view's reading), never NaN slots
    const g = groupOf(
      { group: 'g', maxUnavailable: undefined, store: 'test' },
      odd.map((v, i) => record(`m-${i}`, { maxUnavailable: v })),
      [],
      now,
    );
    expect([g.maxUnavailable, g.members.length]).toEqual([null, odd.length]);
  });

  it('a record of more events than a member writes (50) is left out', () => {
    const events = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        eventId: `E-${i}`,
        eventType: 'Reboot',
        status: 'Scheduled',
        notBefore: null,
        durationInSeconds: -1,
        approved: false,
      }));
    const records = [50, 51, 200].map((n) => record(`events-${n}`, { events: events(n) }));
    expect(membersOf(records).map((m) => m.vm)).toEqual(['events-50']);
    expect(skippedOf(records).map((s) => s.why)).toEqual([
      'events: Too big: expected array to have <=50 items',
      expect.stringMatching(/^events: /),
    ]);
  });

  it('a heartbeat more than five minutes ahead of the reader is not fresh; within five minutes it is', () => {
    const ahead = (ms: number) => ({ heartbeatAt: new Date(now + ms).toISOString(), heartbeatSeconds: 3600 });
    expect(staleAt(ahead(0), now)).toBe(false);
    expect(staleAt(ahead(5 * 60_000), now)).toBe(false);
    expect(staleAt(ahead(5 * 60_000 + 1), now)).toBe(true);
    expect(staleAt({ heartbeatAt: '9999-12-31T23:59:59.999Z', heartbeatSeconds: 30 }, now)).toBe(true);
    // a percentage counts fresh members only: ten records from the future do not make "50%" of two members six slots
    const real = [record('a', {}), record('b', {})];
    const future = Array.from({ length: 10 }, (_, i) => record(`f-${i}`, { heartbeatAt: '9999-12-31T23:59:59.999Z' }));
    expect(groupOf({ group: 'g', maxUnavailable: '50%', store: 'test' }, [...real, ...future], [], now).maxUnavailable).toBe(1);
  });
});
