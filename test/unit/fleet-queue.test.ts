import { describe, expect, it } from 'vitest';
import { ApprovalError } from '../../src/approval/service.ts';
import { FleetConfig } from '../../src/fleet/budget/config.ts';
import { pauseFor, QueuePlace } from '../../src/fleet/budget/queue.ts';
import { inOrder, waiterOf, waitersOf } from '../../src/fleet/budget/queue-order.ts';
import type { MemberEvent, MemberRecord } from '../../src/fleet/budget/records.ts';
import { entryName, waitersIn, wantedEntry } from '../../src/fleet/budget/queue-entries.ts';
import type { Versioned } from '../../src/fleet/budget/stores/port.ts';
import { takenNext, turnsOf, type SlotTurn } from '../../src/fleet/budget/served.ts';

const NOW = Date.parse('2026-11-26T10:00:00.000Z');
const at = (s: number) => new Date(NOW + s * 1000).toISOString();

function member(vm: string, events: Partial<MemberEvent>[], heartbeatAgoS = 0): MemberRecord {
  return {
    member: `${vm}-key`,
    vm,
    resourceId: null,
    heartbeatAt: at(-heartbeatAgoS),
    heartbeatSeconds: 30,
    slot: null,
    events: events.map((e, i) => ({
      eventId: `${vm}-E${i}`,
      eventType: 'Reboot',
      status: 'Scheduled',
      notBefore: at(3600),
      durationInSeconds: -1,
      approved: false,
      ...e,
    })),
  };
}
/** turns: slots counted so (each its takes, its holder taken a second after the place was read). */
const turns = (takes: readonly number[]): ReadonlyMap<string, SlotTurn> =>
  new Map(takes.map((n, i) => [`slot-${i}`, { takes: n, since: NOW + 1000 }]));
/** placedBehindNine: a member that read its place behind nine held members, counting the slots `turns` says. */
function placedBehindNine(turns: () => ReadonlyMap<string, SlotTurn>): QueuePlace {
  const place = new QueuePlace({ maxUnavailable: 2, retryMs: 2000, heartbeatSeconds: 30, turns });
  const me = waiterOf('me-key', 'me', { eventId: 'M', notBefore: at(3600) }, at(-1), NOW);
  place.place(
    Array.from({ length: 9 }, (_, i) => member(`w${i}`, [held(-10 - i)])),
    me,
    NOW,
    0,
  );
  return place;
}
const held = (since: number, via = 'policy') => ({ held: { since: at(since), by: ['x'], via } });

describe('the queue of held approvals', () => {
  it('orders by the earliest NotBefore, then who was held first, then the VM name', () => {
    const members = [
      member('c', [{ notBefore: at(600), ...held(-5) }]),
      member('a', [{ notBefore: at(600), ...held(-10) }]),
      member('b', [{ notBefore: at(300), ...held(-1) }]),
      member('d', [{ notBefore: at(600), ...held(-10) }]),
    ];
    expect(waitersOf(members, 'nobody', NOW).map((w) => w.vm)).toEqual(['b', 'a', 'd', 'c']);
  });

  it('counts a member once, at its earliest held maintenance', () => {
    const w = waitersOf(
      [
        member('a', [
          { notBefore: at(900), ...held(-1) },
          { notBefore: at(100), ...held(-1) },
        ]),
      ],
      'x',
      NOW,
    );
    expect(w).toHaveLength(1);
    expect(w[0]!.notBefore).toBe(NOW + 100_000);
  });

  it('leaves out this member, stale members, a person who was told "held", and events no longer Scheduled', () => {
    const members = [
      member('me', [held(-1)]),
      member('stale', [held(-1)], 91),
      member('person', [held(-1, 'api')]),
      member('started', [{ status: 'Started', ...held(-1) }]),
      member('plain', [{}]),
      member('ok', [held(-1)], 89),
    ];
    expect(waitersOf(members, 'me-key', NOW).map((w) => w.vm)).toEqual(['ok']);
  });

  it('places a member behind everyone whose turn comes first', () => {
    const place = new QueuePlace({ maxUnavailable: 3, retryMs: 1000, heartbeatSeconds: 30 });
    const members = [member('a', [held(-10)]), member('b', [held(-5)]), member('c', [{ notBefore: at(9999), ...held(-99) }])];
    const me = waiterOf('me-key', 'me', { eventId: 'M', notBefore: at(3600) }, at(-7), NOW);
    // a (held first) is ahead; b and c behind: with two slots free, the second is mine
    expect(place.place(members, me, NOW, 2)).toBe(1);
    expect(place.position).toBe(1);
    expect(place.place(members, waiterOf('me-key', 'me', { eventId: 'M', notBefore: at(1) }, undefined, NOW), NOW, 1)).toBe(0);
    expect(place.position).toBe(0);
    expect(inOrder(me, me)).toBe(0);
  });

  it('passes over a maintenance that needs more slots than are free, and serves one member of a shared maintenance with it', () => {
    const place = new QueuePlace({ maxUnavailable: 3, retryMs: 1000, heartbeatSeconds: 30 });
    // a's maintenance takes three members down: with two free it keeps none, and the next in line is served
    const a = member('a', [{ held: { since: at(-10), by: [], via: 'policy', need: 3 } }]);
    const me = waiterOf('me-key', 'me', { eventId: 'M', notBefore: at(3600) }, at(-5), NOW);
    expect(place.place([a], me, NOW, 2)).toBe(0);
    expect(place.place([a], me, NOW, 3)).toBeNull();
    // the same maintenance held on another member it names: not ahead of this one
    const shared = member('b', [{ eventId: 'M', held: { since: at(-20), by: [], via: 'policy', need: 2 } }]);
    expect(place.place([shared], waiterOf('me-key', 'me', { eventId: 'M', notBefore: at(3600) }, at(-5), NOW, 2), NOW, 2)).toBe(0);
  });

  it('counts ahead of a first ask the other fresh members that may ask now: held, or with a maintenance Scheduled that nobody approved or held', () => {
    const members = [
      member('a', [{}]),
      member('b', [{ approved: true }]),
      member('c', [{}], 200),
      member('me', [{}]),
      member('d', [held(-1)]),
      member('person', [held(-1, 'api')]),
      member('down', [held(-1)]),
    ];
    const down = new Set(['down']);
    expect(waitersOf(members, 'me-key', NOW, { asking: true, down }).map((w) => w.vm)).toEqual(['d', 'a']);
    expect(waitersOf(members, 'me-key', NOW, { down }).map((w) => w.vm)).toEqual(['d']);
  });

  it('grants a first ask a free slot nobody ahead of it will take, and holds it when one ahead may take it', () => {
    const place = new QueuePlace({ maxUnavailable: 2, retryMs: 2000, heartbeatSeconds: 30 });
    const me = waiterOf('me-key', 'me', { eventId: 'M', notBefore: at(3600) }, undefined, NOW);
    // b's NotBefore comes later: not ahead; a's comes first and it has not asked yet: ahead
    const b = member('b', [{ notBefore: at(7200) }]);
    const a = member('a', [{ notBefore: at(1800) }]);
    expect(place.place([b], me, NOW, 1, true)).toBe(0);
    expect(place.place([a, b], me, NOW, 1, true)).toBeNull();
    expect(place.position).toBe(1);
    expect(place.place([a, b], me, NOW, 2, true)).toBe(1);
    // a holds a slot already (its record may still say it waits): nothing ahead
    expect(place.place([a, b], me, NOW, 1, true, new Set(['a']))).toBe(0);
  });

  it('has a first ask wait out the read that first lists its maintenance (the others due with it say theirs at that read)', () => {
    const place = new QueuePlace({ maxUnavailable: 2, retryMs: 2000, heartbeatSeconds: 30 });
    const me = waiterOf('me-key', 'me', { eventId: 'M', notBefore: at(3600) }, undefined, NOW);
    place.listed(new Set(['M']));
    expect(place.place([], me, NOW, 1, true)).toBeNull();
    expect(place.position).toBe(0);
    place.listed(new Set(['M']));
    expect(place.place([], me, NOW, 1, true)).toBe(0);
  });

  it('lets go first those that may ask now, held or not, for the two reads after the one that first lists its maintenance', () => {
    const place = new QueuePlace({ maxUnavailable: 2, retryMs: 2000, heartbeatSeconds: 30 });
    const me = waiterOf('me-key', 'me', { eventId: 'M', notBefore: at(3600) }, at(-1), NOW);
    // a member due with it that said its maintenance, and nobody held it yet
    const asking = [member('a', [{ notBefore: at(60) }])];
    place.listed(new Set(['M']));
    expect(place.asksFirst('M')).toBe(true);
    place.heldNow('M', new ApprovalError('HELD', 'held'), 'policy', 1, NOW);
    for (let read = 2; read <= 3; read++) {
      place.listed(new Set(['M']));
      expect(place.asksFirst('M')).toBe(true);
      expect(place.place(asking, me, NOW, 1, place.asksFirst('M'))).toBeNull();
    }
    // later, only those held stand ahead of it: one that never asks keeps nobody waiting
    place.listed(new Set(['M']));
    expect(place.asksFirst('M')).toBe(false);
    expect(place.place(asking, me, NOW, 1, place.asksFirst('M'))).toBe(0);
  });

  it('has the head of the queue look at the slots at every ask, the next in line every retryMs, a place not known yet every retryMs', () => {
    let slots = turns([3, 5]);
    const place = new QueuePlace({ maxUnavailable: 2, retryMs: 2000, heartbeatSeconds: 30, turns: () => slots });
    const said = new Error('held');
    place.heldAgain(said);
    place.looked(NOW);
    expect(place.resting(NOW + 1999)).toBe(said);
    expect(place.resting(NOW + 2000)).toBeNull();
    const me = waiterOf('me-key', 'me', { eventId: 'M', notBefore: at(3600) }, at(-1), NOW);
    const ahead = (n: number) => Array.from({ length: n }, (_, i) => member(`w${i}`, [held(-10 - i)]));
    place.place(ahead(1), me, NOW, 0);
    expect(place.resting(NOW)).toBeNull();
    place.place(ahead(2), me, NOW, 0);
    expect(place.resting(NOW + 1999)).toBe(said);
    // one served since: at the head again, it looks at its next ask
    slots = turns([4, 5]);
    place.served();
    expect(place.resting(NOW)).toBeNull();
  });

  it('at the head with the slots watched and all held, looks only every retryMs unless woken; says when it comes to the head and leaves it', () => {
    let full = true;
    const heads: boolean[] = [];
    const place = new QueuePlace({
      ...{ maxUnavailable: 2, retryMs: 2000, heartbeatSeconds: 30 },
      ...{ watched: () => full, onHead: (head: boolean) => heads.push(head) },
    });
    const me = waiterOf('me-key', 'me', { eventId: 'M', notBefore: at(3600) }, at(-1), NOW);
    const ahead = (n: number) => Array.from({ length: n }, (_, i) => member(`w${i}`, [held(-10 - i)]));
    // far back: not the head, whatever the watch says
    place.place(ahead(3), me, NOW, 0);
    const said = place.heldNow('M', new ApprovalError('HELD', 'held'), 'policy', 1, NOW);
    expect(heads).toEqual([]);
    place.place(ahead(1), me, NOW, 0);
    expect(heads).toEqual([true]);
    place.looked(NOW);
    expect(place.resting(NOW + 1999)).toBe(said);
    expect(place.resting(NOW + 2000)).toBeNull();
    // woken: it looks at its next ask; at place 1, only when two slots are free (the first goes to the one ahead of it)
    place.looked(NOW);
    expect(place.wake(1)).toBe(false);
    expect(place.resting(NOW)).toBe(said);
    expect(place.wake(2)).toBe(true);
    expect(place.resting(NOW)).toBeNull();
    // a slot free as the watch says (or no watch): at every ask, as the head does
    place.looked(NOW);
    full = false;
    expect(place.resting(NOW)).toBeNull();
    place.granted('M');
    expect(heads).toEqual([true, false]);
  });

  it('lets the head (the first maxUnavailable) look at every ask, the others less often the further back, at least once a heartbeat', () => {
    expect([0, 2, 3, 5, 6, 9, 12, 300].map((p) => pauseFor(p, 3, 2000, 30_000))).toEqual([0, 0, 2000, 2000, 2000, 4000, 6000, 30_000]);
  });

  it('holds a member far back again without a look at the slots until its pause has passed', () => {
    let slots: ReadonlyMap<string, SlotTurn> = new Map([['slot-0', { takes: null, since: NOW - 5000 }]]);
    const place = new QueuePlace({ maxUnavailable: 1, retryMs: 1000, heartbeatSeconds: 30, turns: () => slots });
    const waiters = [member('a', [held(-10)]), member('b', [held(-9)]), member('c', [held(-8)]), member('d', [held(-7)])];
    const me = waiterOf('me-key', 'me', { eventId: 'M', notBefore: at(3600) }, at(-1), NOW);
    // a first ask while others want a slot too: it takes its place first
    expect(place.place(waiters, me, NOW, 1, true)).toBeNull();
    expect(place.position).toBe(4);
    const said = new Error('held');
    place.heldAgain(said);
    place.looked(NOW);
    expect(place.resting(NOW + 2999)).toBe(said);
    expect(place.resting(NOW + 3000)).toBeNull();
    // two members served since it read its place (slots of older members, not counted: their holders taken after): it stands at 2, and looks sooner
    slots = new Map([
      ['slot-0', { takes: null, since: NOW + 1000 }],
      ['slot-1', { takes: null, since: NOW + 2000 }],
      ['slot-2', { takes: null, since: NOW - 5000 }],
      ['slot-3', { takes: null, since: null }],
    ]);
    place.served();
    expect(place.position).toBe(2);
    expect(place.resting(NOW + 999)).toBe(said);
    expect(place.resting(NOW + 1000)).toBeNull();
    // at the head with one slot free: its turn, on the first free slot
    expect(place.place([], me, NOW, 1)).toBe(0);
    place.done();
    expect(place.resting(NOW)).toBeNull();
    expect(place.position).toBeNull();
  });

  it('counts every member served between two looks at the slots, though a look sees only those holding one then', () => {
    let slots = turns([10, 7]);
    const place = placedBehindNine(() => slots);
    expect(place.position).toBe(9);
    // seven more taken since (two of them hold their slot now): the last reading counted two only
    slots = turns([14, 10]);
    place.served();
    expect(place.position).toBe(2);
    // a count that went back (an older member wrote the slot anew) counts that slot's holder if taken since: fewer
    // than the look before counted, and the place does not move back
    slots = new Map([
      ['slot-0', { takes: 1, since: NOW + 9000 }],
      ['slot-1', { takes: 11, since: NOW + 9500 }],
    ]);
    place.served();
    expect(place.position).toBe(2);
    slots = new Map([
      ['slot-0', { takes: 1, since: NOW + 9000 }],
      ['slot-1', { takes: 14, since: NOW + 9500 }],
    ]);
    place.served();
    expect(place.position).toBe(9 - 1 - 7);
    // nothing goes below the head
    slots = turns([500, 500]);
    place.served();
    expect(place.position).toBe(0);
  });

  it('counts from none the takes of a slot that had no record when the member read its place; of one not counted then, its holder taken since', () => {
    let slots: ReadonlyMap<string, SlotTurn> = new Map([['slot-1', { takes: null, since: null }]]);
    const place = placedBehindNine(() => slots);
    slots = turns([3, 2]);
    place.served();
    expect(place.position).toBe(9 - 3 - 1);
    // a count that starts again (at its largest, or a hostile one) counts the holder taken since; the place never moves back
    slots = new Map([
      ['slot-0', { takes: 1, since: NOW + 9000 }],
      ['slot-1', { takes: null, since: null }],
    ]);
    place.served();
    expect(place.position).toBe(5);
  });

  it('counts the slots alone: not an overflow record, a notice or the pause listed with them; a count past the largest starts again', () => {
    const rec = (name: string, takes: number) => ({ name, version: '1', value: { member: 'x', vm: 'x', since: at(1), takes } });
    const names = ['slot-0', 'slot-12', 'slot-x-vm-a', 'slot-pause', 'slot-wave-1', 'slot-1a'];
    expect([
      ...turnsOf(
        names.map((n) => rec(n, 3)),
        NOW,
      ).keys(),
    ]).toEqual(['slot-0', 'slot-12']);
    expect(takenNext({ member: null, takes: Number.MAX_SAFE_INTEGER })).toEqual({ takes: 1 });
    expect(takenNext({ member: null })).toEqual({ takes: 1 });
    expect(takenNext(undefined)).toEqual({ takes: 1 });
  });

  it('gives the second in line the second free slot, and no slot to the third of two', () => {
    const place = new QueuePlace({ maxUnavailable: 2, retryMs: 1000, heartbeatSeconds: 30 });
    const me = waiterOf('me-key', 'me', { eventId: 'M', notBefore: at(3600) }, at(-1), NOW);
    expect(place.place([member('a', [held(-10)])], me, NOW, 2)).toBe(1);
    expect(place.place([member('a', [held(-10)]), member('b', [held(-9)])], me, NOW, 2)).toBeNull();
  });
});

describe('the fleet budget configuration', () => {
  it('refuses a margin shorter than three heartbeats, naming the key', () => {
    const store = { type: 'kubernetes', namespace: 'se-bridge' };
    const r = FleetConfig.safeParse({ group: 'g', maxUnavailable: 1, store, heartbeatSeconds: 30, marginSeconds: 89 });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]).toMatchObject({
      path: ['marginSeconds'],
      message: expect.stringMatching(/at least three heartbeats .*= 90/),
    });
    expect(FleetConfig.safeParse({ group: 'g', maxUnavailable: 1, store, heartbeatSeconds: 30, marginSeconds: 90 }).success).toBe(true);
  });
});

describe("the queue's entries", () => {
  const record = (m: MemberRecord, name = entryName(wantedEntry(m)!)): Versioned => ({
    name,
    version: '1',
    value: { ...wantedEntry(m)!, heartbeatAt: m.heartbeatAt, heartbeatSeconds: m.heartbeatSeconds },
  });

  it("names a member's earliest waiting maintenance so that the names sort in the queue's order", () => {
    const members = [
      member('c', [{ notBefore: at(600), ...held(-5) }]),
      member('a', [{ notBefore: at(600), ...held(-10) }]),
      member('b', [{ notBefore: at(300), ...held(-1) }]),
      member('e', [{ notBefore: at(300) }]),
      member('d', [{ notBefore: at(600), ...held(-10) }]),
    ];
    const names = members.map((m) => entryName(wantedEntry(m)!)).sort();
    // the held ones in the queue's order (NotBefore, then held first, then the member); those asking apart
    expect(names.map((n) => [n.split('-')[0], n.split('-').at(-2)])).toEqual([
      ['asking', 'e'],
      ['queue', 'b'],
      ['queue', 'a'],
      ['queue', 'd'],
      ['queue', 'c'],
    ]);
    // the same order as the members' records give it, read from the entries
    expect(
      waitersIn(
        members.map((m) => record(m)),
        'nobody',
        NOW,
        true,
      ).map((w) => w.vm),
    ).toEqual(waitersOf(members, 'nobody', NOW, { asking: true }).map((w) => w.vm));
  });

  it('keeps no entry for a maintenance approved, Started, or held for a person; the earliest of the rest', () => {
    expect(wantedEntry(member('a', [{ approved: true }, { status: 'Started' }, { ...held(-5, 'api') }]))).toBeNull();
    const w = wantedEntry(
      member('a', [
        { notBefore: at(900) },
        { notBefore: at(600), ...held(-5, 'hooks'), held: { since: at(-5), by: [], via: 'hooks', need: 2 } },
      ]),
    );
    expect(w).toEqual({ member: 'a-key', vm: 'a', eventId: 'a-E1', notBefore: at(600), since: at(-5), need: 2 });
  });

  it('counts no entry that is stale, of another shape, named for another member than it says, holding a slot, or not held unless asked', () => {
    const [a, b, c, d] = [member('a', [held(-9)]), member('b', [held(-8)], 120), member('c', [held(-7)]), member('d', [{}])];
    const records = [
      record(a),
      record(b),
      { ...record(c), name: 'queue-0-0-someone-else' },
      record(d),
      { name: 'queue-1', version: '1', value: { member: 'x' } },
    ];
    expect(waitersIn(records, 'me', NOW, false).map((w) => w.vm)).toEqual(['a']);
    expect(waitersIn(records, 'me', NOW, true).map((w) => w.vm)).toEqual(['a', 'd']);
    expect(waitersIn(records, 'me', NOW, true, new Set(['a'])).map((w) => w.vm)).toEqual(['d']);
    expect(waitersIn(records, 'a-key', NOW, true).map((w) => w.vm)).toEqual(['d']);
    // a member counts once, by the entry it wrote last (one left behind as it named its entry anew, or before a restart, is not where it stands)
    const before = record(member('a', [{ ...held(-9), notBefore: at(-7200) }], 10));
    expect(waitersIn([before, ...records], 'me', NOW, true).map((w) => [w.vm, w.notBefore])).toEqual([
      ['a', NOW + 3600_000],
      ['d', NOW + 3600_000],
    ]);
    const after = record(member('a', [{ ...held(-9), notBefore: at(7200) }], -1));
    expect(waitersIn([after, ...records], 'me', NOW, true).map((w) => [w.vm, w.notBefore])).toEqual([
      ['d', NOW + 3600_000],
      ['a', NOW + 7200_000],
    ]);
  });
});

describe('a place read from a page of the queue', () => {
  it('beyond the page, keeps the place it last read from the records if that is further back; within it, takes what it reads', () => {
    const place = new QueuePlace({ maxUnavailable: 2, retryMs: 2000, heartbeatSeconds: 30 });
    const me = waiterOf('me-key', 'me', { eventId: 'M', notBefore: at(3600) }, at(-1), NOW);
    const others = Array.from({ length: 30 }, (_, i) => member(`w${String(i).padStart(2, '0')}`, [{ notBefore: at(600), ...held(-5) }]));
    // from every member's record: 30 ahead
    expect(place.place(others, me, NOW, 0)).toBeNull();
    expect(place.position).toBe(30);
    // a page of 12 that does not reach it: at least 12 ahead, and it knew 30
    const page = others.slice(0, 12);
    const partial = Object.assign((asking: boolean) => waitersOf(page, 'me-key', NOW, { asking }), { partial: true });
    expect(place.place(partial, me, NOW, 1)).toBeNull();
    expect(place.position).toBe(30);
    // a page that holds it: what it reads
    const whole = Object.assign((asking: boolean) => waitersOf(others.slice(0, 3), 'me-key', NOW, { asking }), { partial: false });
    expect(place.place(whole, me, NOW, 0)).toBeNull();
    expect(place.position).toBe(3);
  });
});
