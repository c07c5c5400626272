/**
 * A percentage budget counts as a Kubernetes PodDisruptionBudget and Karpenter count one: rounded
 * up, at least 1 (at most 100), and every place a person reads it says how it was counted.
 */
import { describe, expect, it } from 'vitest';
import { budgetText, countedText, FleetConfig, percentageText, slotsFor } from '../../src/fleet/budget/config.ts';
import { groupOf } from '../../src/fleet/budget/group.ts';
import { groupText } from '../../src/fleet/budget/group-text.ts';
import { memberName } from '../../src/fleet/budget/records.ts';

const now = Date.parse('2026-11-29T10:00:00Z');
const record = (vm: string) => ({
  name: memberName(vm),
  version: '1',
  value: { member: vm, vm, resourceId: null, heartbeatAt: new Date(now).toISOString(), heartbeatSeconds: 30, events: [], slot: null },
});
const table = (h: string[], rows: string[][]) => [h, ...rows].map((r) => r.join(' | ')).join('\n');

describe('slotsFor', () => {
  it('rounds a percentage up, at least 1 and at most 100; a number is itself', () => {
    const cases: [string | number, number, number][] = [
      ['30%', 5, 2],
      ['20%', 11, 3],
      ['20%', 10, 2],
      ['25%', 4, 1],
      ['1%', 1, 1],
      ['1%', 250, 3],
      ['50%', 3, 2],
      ['100%', 7, 7],
      ['100%', 150, 100],
      ['99%', 101, 100],
      [3, 1, 3],
      [1, 1000, 1],
    ];
    for (const [k, members, slots] of cases) expect(slotsFor(k, members), `${k} of ${members}`).toBe(slots);
  });

  it('is the ceiling of pct × members / 100 for every percentage and group size up to 1,000 (no float error)', () => {
    for (let pct = 1; pct <= 100; pct++)
      for (let n = 1; n <= 1000; n++) {
        const want = Math.min(100, Math.max(1, (pct * n) % 100 === 0 ? (pct * n) / 100 : Math.trunc((pct * n) / 100) + 1));
        if (slotsFor(`${pct}%`, n) !== want) expect(slotsFor(`${pct}%`, n), `${pct}% of ${n}`).toBe(want);
      }
  });
});

describe('how it was counted, in words', () => {
  it('fleet status says "30 % of 5 members = 2", in text and in JSON', () => {
    const g = groupOf({ group: 'web', maxUnavailable: '30%', store: 'test' }, ['a', 'b', 'c', 'd', 'e'].map(record), [], now);
    expect(g).toMatchObject({ maxUnavailable: 2, counted: '30 % of 5 members = 2' });
    expect(JSON.parse(JSON.stringify(g))).toMatchObject({ counted: '30 % of 5 members = 2' });
    expect(groupText(g, table).split('\n')[0]).toBe('Group web: 0 of 2 slots held (30 % of 5 members = 2); 5 members (test)');
    // a number needs no counting
    const n = groupOf({ group: 'web', maxUnavailable: 2, store: 'test' }, ['a'].map(record), [], now);
    expect(n.counted).toBeNull();
    expect(groupText(n, table).split('\n')[0]).toBe('Group web: 0 of 2 slots held; 1 member (test)');
  });

  it('says the bounds it was held to', () => {
    expect(countedText('20%', 11)).toBe('20 % of 11 members = 3');
    expect(countedText('100%', 150)).toBe('100 % of 150 members = 100 (at most 100)');
    expect(countedText('10%', 1)).toBe('10 % of 1 member = 1');
    expect(countedText(4, 9)).toBeNull();
  });

  it('validate says how a percentage will be counted, since it cannot know the members', () => {
    expect(percentageText('30%')).toBe(
      '30 % of the members with a fresh record, rounded up, at least 1 (30 % of 5 members = 2, 30 % of 11 members = 4)',
    );
    const store = { type: 'kubernetes', namespace: 'n' };
    expect(budgetText(FleetConfig.parse({ group: 'web', maxUnavailable: '30%', store }))).toBe(
      'fleet group web: maxUnavailable "30%" is counted at each early approval as 30 % of the members with a fresh record, rounded up, at least 1 (30 % of 5 members = 2, 30 % of 11 members = 4)',
    );
    expect(budgetText(FleetConfig.parse({ group: 'web', maxUnavailable: 1, store }))).toBe(
      'fleet group web: at most 1 member down at once by an early approval',
    );
    expect(budgetText(FleetConfig.parse({ group: 'web', store }))).toBeNull();
    const health = { http: { url: 'http://127.0.0.1:9/healthz' } };
    expect(
      budgetText(
        FleetConfig.parse({
          group: 'web',
          maxUnavailable: 2,
          store,
          health,
          rate: { approvals: 1, perSeconds: 600 },
          unhealthyMembers: 'alwaysAllow',
        }),
      ),
    ).toBe(
      'fleet group web: at most 2 members down at once by an early approval; at most 1 early approval in any 600 s; a member not healthy takes its own maintenance without a slot',
    );
  });
});
