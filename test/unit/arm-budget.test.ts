/**
 * The budget and the blackout an approval `via: arm` is held to (src/relay/arm-budget.ts), from a
 * group's records as members write them: the relay's own statement first, else every record of
 * the group, stale ones too; records that disagree or say nothing refuse with their code, naming
 * the members; a blackout of the relay's calendar, or one a record says, holds the approval.
 */
import { describe, expect, it } from 'vitest';
import { CalendarConfig } from '../../src/calendar/config.ts';
import type { MemberRecord } from '../../src/fleet/budget/records.ts';
import { blackoutOf, budgetOf, noBudget } from '../../src/relay/arm-budget.ts';
import { refusalOf } from '../helpers.ts';

const NOW = Date.parse('2026-03-02T12:00:00Z');

/** member: a record of `vm` that beat `agoSeconds` ago (every 10 s), stating `maxUnavailable` when given. */
const member = (
  vm: string,
  o: { maxUnavailable?: number | string; agoSeconds?: number; calendar?: MemberRecord['calendar'] } = {},
): MemberRecord => ({
  ...{ member: vm, vm, resourceId: null, heartbeatSeconds: 10, events: [], slot: null },
  heartbeatAt: new Date(NOW - (o.agoSeconds ?? 0) * 1000).toISOString(),
  ...(o.maxUnavailable === undefined ? {} : { maxUnavailable: o.maxUnavailable }),
  ...(o.calendar === undefined ? {} : { calendar: o.calendar }),
});

describe('budgetOf', () => {
  it("the relay's own statement decides, a percentage of the fresh records (at least one)", () => {
    const records = ['a', 'b', 'c', 'd'].map((vm, i) => member(vm, { maxUnavailable: 3, agoSeconds: i < 2 ? 0 : 3600 }));
    expect(budgetOf('g', records, { maxUnavailable: 1 }, false, NOW)).toEqual({ k: 1, from: "the relay's fleet.groups" });
    // 50 % of the two fresh records (the stale ones do not count as members of a percentage)
    expect(budgetOf('g', records, { maxUnavailable: '50%' }, false, NOW)).toEqual({ k: 1, from: "the relay's fleet.groups" });
    const fresh = ['a', 'b', 'c', 'd'].map((vm) => member(vm));
    expect(budgetOf('g', fresh, { maxUnavailable: '50%' }, false, NOW)?.k).toBe(2);
    // no record fresh at all: a percentage is of one member, at least one slot
    expect(budgetOf('g', [], { maxUnavailable: '100%' }, false, NOW)?.k).toBe(1);
    // a record whose heartbeat is its last beat but two: still fresh
    expect(
      budgetOf('g', [member('a', { agoSeconds: 29 }), member('b', { agoSeconds: 29 })], { maxUnavailable: '100%' }, false, NOW)?.k,
    ).toBe(2);
  });

  it('else every record of the group, stale ones too, when they agree', () => {
    const records = [member('a', { maxUnavailable: 2 }), member('b', { maxUnavailable: 2, agoSeconds: 30 * 86_400 }), member('c')];
    expect(budgetOf('g', records, undefined, false, NOW)).toEqual({ k: 2, from: 'every record of the group (2)' });
    expect(budgetOf('g', [member('a', { maxUnavailable: '50%' }), member('b', { maxUnavailable: '50%' })], undefined, false, NOW)?.k).toBe(
      1,
    );
  });

  it('records that disagree refuse, naming each budget; none that states one refuses, naming the members; forced goes on without one', () => {
    const disagree = [member('kv-1', { maxUnavailable: 1 }), member('kv-2', { maxUnavailable: 3 }), member('kv-3')];
    expect(refusalOf(() => budgetOf('liar', disagree, undefined, false, NOW))).toEqual({
      status: 409,
      code: 'FLEET_BUDGET_DISAGREES',
      message: expect.stringMatching(/^group liar's records state different budgets \(kv-1: 1, kv-2: 3\)/),
    });
    expect(refusalOf(() => budgetOf('open', [member('ui-1'), member('ui-2')], undefined, false, NOW))).toEqual({
      status: 409,
      code: 'FLEET_BUDGET_UNKNOWN',
      message: expect.stringContaining('(members: ui-1, ui-2)'),
    });
    expect(refusalOf(() => budgetOf('empty', [], undefined, false, NOW)).message).toContain('(members: none)');
    expect(budgetOf('liar', disagree, undefined, true, NOW)).toBeNull();
    expect(budgetOf('open', [member('ui-1')], undefined, true, NOW)).toBeNull();
  });

  it('a VM no record names has no budget', () => {
    expect(
      refusalOf(() => {
        throw noBudget('ghost-1');
      }),
    ).toEqual({ status: 409, code: 'FLEET_BUDGET_UNKNOWN', message: expect.stringMatching(/^no member's record names ghost-1/) });
  });
});

describe('blackoutOf', () => {
  const closed = (until: string | null, blackout: string | null = 'year-end') =>
    ({ digest: 'x', timeZone: 'UTC', open: false, inWindow: false, blackout, until }) as MemberRecord['calendar'];

  it("the relay's calendar of the group decides: a blackout now holds, none lets go (whatever the records say)", () => {
    const calendar = CalendarConfig.parse({ timeZone: 'UTC', blackouts: [{ name: 'freeze', from: '2026-03-01', to: '2026-03-02' }] });
    const records = [member('a', { calendar: closed(null) })];
    expect(blackoutOf([], { maxUnavailable: 1, calendar }, NOW)).toBe(
      "the blackout freeze of the group's calendar in the relay's fleet.groups",
    );
    expect(blackoutOf(records, { maxUnavailable: 1, calendar }, Date.parse('2026-03-04T00:00:00Z'))).toBeNull();
  });

  it('else a record that says its calendar is closed now holds, until the time it says; an open one or one past its end does not', () => {
    const soon = new Date(NOW + 3_600_000).toISOString();
    const past = new Date(NOW - 1000).toISOString();
    expect(blackoutOf([member('a'), member('ledger-1', { calendar: closed(soon) })], undefined, NOW)).toBe(
      `the blackout year-end until ${soon}, as ledger-1's record says`,
    );
    expect(blackoutOf([member('ledger-1', { calendar: closed(null, null) })], undefined, NOW)).toBe(
      "the blackout (unnamed), as ledger-1's record says",
    );
    expect(blackoutOf([member('ledger-1', { calendar: closed(past) })], undefined, NOW)).toBeNull();
    expect(blackoutOf([member('ledger-1', { calendar: { ...closed(soon)!, open: true } })], undefined, NOW)).toBeNull();
    expect(blackoutOf([member('a')], { maxUnavailable: 1 }, NOW)).toBeNull();
  });
});

describe('blackoutOf: the end a record says', () => {
  it('a blackout a record says ends at the time it says: held until then, not at it', () => {
    const at = (until: string) =>
      blackoutOf(
        [member('ledger-1', { calendar: { digest: 'x', timeZone: 'UTC', open: false, inWindow: false, blackout: 'year-end', until } })],
        undefined,
        NOW,
      );
    expect(at(new Date(NOW + 1).toISOString())).toMatch(/^the blackout year-end until /);
    expect(at(new Date(NOW).toISOString())).toBeNull();
  });
});
