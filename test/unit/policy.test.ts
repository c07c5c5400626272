/**
 * The approval policy as an operator writes it: each match key at its bounds, and each decision
 * with the rule that made it and why (the log's `rule` and `reason`; an approval's `by` is
 * "policy <reason>", the rule's name or rules[i]).
 */
import { describe, expect, it } from 'vitest';
import { decide, matches, Rule } from '../../src/approval/policy.ts';
import { toDomainDocument, WireDocument, type ScheduledEvent } from '../../src/imds/wire.ts';

const NOW = Date.parse('2026-11-22T05:00:00Z');
/** ev: an event as IMDS lists it (a Freeze of 5 s for vm0, Scheduled 15 minutes on), `over` on top. */
function ev(over: Record<string, unknown> = {}): ScheduledEvent {
  const doc = WireDocument.parse({
    DocumentIncarnation: 1,
    Events: [
      {
        ...{ EventId: 'E', EventType: 'Freeze', EventStatus: 'Scheduled', Resources: ['vm0'], NotBefore: '2026-11-22T05:15:00Z' },
        ...{ EventSource: 'Platform', DurationInSeconds: 5, ...over },
      },
    ],
  });
  return toDomainDocument(doc).document.events[0]!;
}
const match = (m: Record<string, unknown>, over: Record<string, unknown> = {}, vm = 'vm0') =>
  matches(Rule.parse({ match: m, action: 'approve' }).match, ev(over), vm, NOW);

describe('a rule matches', () => {
  it.each<[string, Record<string, unknown>, Record<string, unknown>, boolean]>([
    ['anything, with no keys', {}, {}, true],
    ['its one event type', { eventType: 'Freeze' }, {}, true],
    ['not another event type', { eventType: 'Reboot' }, {}, false],
    ['one of its event types', { eventType: ['Reboot', 'Freeze'] }, {}, true],
    ['none of other event types', { eventType: ['Reboot', 'Redeploy'] }, {}, false],
    ['its one source', { eventSource: 'Platform' }, {}, true],
    ['not another source', { eventSource: 'User' }, {}, false],
    ['one of its sources', { eventSource: ['User', 'Platform'] }, {}, true],
    ['none of other sources', { eventSource: ['User'] }, {}, false],
    ['its status', { eventStatus: 'Scheduled' }, {}, true],
    ['not another status', { eventStatus: 'Started' }, {}, false],
    ['a duration at its least', { minDurationSeconds: 5 }, {}, true],
    ['not a duration under its least', { minDurationSeconds: 6 }, {}, false],
    ['not an unknown duration for a least of 0', { minDurationSeconds: 0 }, { DurationInSeconds: -1 }, false],
    ['a duration at its most', { maxDurationSeconds: 5 }, {}, true],
    ['a duration of 0 for a least of 0', { minDurationSeconds: 0 }, { DurationInSeconds: 0 }, true],
    ['a duration of 0 for a most of 5', { maxDurationSeconds: 5 }, { DurationInSeconds: 0 }, true],
    ['not a duration over its most', { maxDurationSeconds: 4 }, {}, false],
    ['not an unknown duration for a most', { maxDurationSeconds: 100 }, { DurationInSeconds: -1 }, false],
    ['an event of this VM, for affectsThisVm: true', { affectsThisVm: true }, {}, true],
    ['an event of this VM named in capitals', { affectsThisVm: true }, { Resources: ['VM0'] }, true],
    ['not an event of others, for affectsThisVm: true', { affectsThisVm: true }, { Resources: ['vm1'] }, false],
    ['an event of others, for affectsThisVm: false', { affectsThisVm: false }, { Resources: ['vm1'] }, true],
    ['not an event of this VM, for affectsThisVm: false', { affectsThisVm: false }, {}, false],
    ['a resource by its name', { resources: 'vm0' }, {}, true],
    ['a resource by a pattern in other capitals', { resources: 'VM*' }, {}, true],
    ['any resource listed', { resources: 'web-*' }, { Resources: ['vm0', 'web-1'] }, true],
    ['a star as any run, also none', { resources: 'vm*0' }, {}, true],
    ['a star in the middle', { resources: 'w*1' }, { Resources: ['web-1'] }, true],
    ['not a name the pattern only begins', { resources: 'vm' }, {}, false],
    ['not a name the pattern only ends', { resources: 'm0' }, {}, false],
    ['not a name the pattern misses', { resources: 'web-*' }, {}, false],
    ['a dot as a dot', { resources: 'vm.0' }, { Resources: ['vm.0'] }, true],
    ['not a dot as any character', { resources: 'vm.0' }, { Resources: ['vmx0'] }, false],
    ['not a plus as a repeat', { resources: 'v+' }, { Resources: ['vv'] }, false],
    ['brackets as brackets', { resources: '[vm]' }, { Resources: ['[vm]'] }, true],
    ['not brackets as a class', { resources: '[vm]' }, { Resources: ['v'] }, false],
    ['a question mark as itself', { resources: 'vm?' }, { Resources: ['vm?'] }, true],
    ['not a question mark as optional', { resources: 'vm0?' }, {}, false],
    ['NotBefore at its least time left', { minSecondsToNotBefore: 900 }, {}, true],
    ['not NotBefore under its least time left', { minSecondsToNotBefore: 901 }, {}, false],
    ['NotBefore at its most time left', { maxSecondsToNotBefore: 900 }, {}, true],
    ['not NotBefore over its most time left', { maxSecondsToNotBefore: 899 }, {}, false],
    ['time left within both bounds', { minSecondsToNotBefore: 600, maxSecondsToNotBefore: 1200 }, {}, true],
    ['not an event with no NotBefore, for a least time left', { minSecondsToNotBefore: -100 }, { NotBefore: '' }, false],
    ['not an event with no NotBefore, for a most time left', { maxSecondsToNotBefore: 100_000 }, { NotBefore: '' }, false],
    ['an event with no NotBefore, with no time bound', { eventType: 'Freeze' }, { NotBefore: '' }, true],
  ])('%s', (_what, m, over, expected) => {
    expect(match(m, over)).toBe(expected);
  });
});

describe('decide: the action, the rule that made it, and why', () => {
  const rules = (...r: Record<string, unknown>[]) => r.map((x) => Rule.parse(x));
  it.each<[string, Rule[], Record<string, unknown>, string, { action: string; rule: number | null; reason: string }]>([
    ['no rules', [], {}, 'vm0', { action: 'await', rule: null, reason: 'no rule matched: a human decides' }],
    [
      'no rule matches',
      rules({ match: { eventType: 'Reboot' }, action: 'approve' }),
      {},
      'vm0',
      { action: 'await', rule: null, reason: 'no rule matched: a human decides' },
    ],
    [
      'a rule approves, named by its place',
      rules({ match: { eventType: 'Reboot' }, action: 'never' }, { match: {}, action: 'approve' }),
      {},
      'vm0',
      { action: 'approve', rule: 1, reason: 'rules[1]' },
    ],
    [
      'a rule approves, named by its name',
      rules({ name: 'short freezes', match: {}, action: 'approve' }),
      {},
      'vm0',
      { action: 'approve', rule: 0, reason: 'short freezes' },
    ],
    [
      'after hooks',
      rules({ match: {}, action: 'approveAfterHooks' }),
      {},
      'vm0',
      { action: 'approveAfterHooks', rule: 0, reason: 'rules[0]' },
    ],
    [
      'first match wins',
      rules({ match: {}, action: 'never' }, { match: {}, action: 'approve' }),
      {},
      'vm0',
      { action: 'never', rule: 0, reason: 'rules[0]' },
    ],
    ['await, said by a rule', rules({ match: {}, action: 'await' }), {}, 'vm0', { action: 'await', rule: 0, reason: 'rules[0]' }],
    [
      'never, also for an event of another VM',
      rules({ match: {}, action: 'never' }),
      { Resources: ['vm1'] },
      'vm0',
      { action: 'never', rule: 0, reason: 'rules[0]' },
    ],
    [
      'a Started event is never approved',
      rules({ match: {}, action: 'approve' }),
      { EventStatus: 'Started', NotBefore: '' },
      'vm0',
      { action: 'never', rule: 0, reason: 'rules[0]: only Scheduled events can be approved' },
    ],
    [
      'nor after hooks',
      rules({ name: 'all', match: {}, action: 'approveAfterHooks' }),
      { EventStatus: 'Started', NotBefore: '' },
      'vm0',
      { action: 'never', rule: 0, reason: 'all: only Scheduled events can be approved' },
    ],
    [
      'an event of another VM is not approved from here',
      rules({ match: {}, action: 'approve' }),
      { Resources: ['vm1'] },
      'vm0',
      { action: 'await', rule: 0, reason: 'rules[0]: the event does not name this VM' },
    ],
    [
      'nor after hooks from here',
      rules({ match: {}, action: 'approveAfterHooks', approveFrom: 'any' }),
      { Resources: ['vm1'] },
      'vm0',
      { action: 'await', rule: 0, reason: 'rules[0]: the event does not name this VM' },
    ],
    [
      'a group event by its leader',
      rules({ match: {}, action: 'approve' }),
      { Resources: ['vm0', 'vm1'] },
      'vm0',
      { action: 'approve', rule: 0, reason: 'rules[0]' },
    ],
    [
      'its leader named in capitals',
      rules({ match: {}, action: 'approve' }),
      { Resources: ['VM0', 'vm1'] },
      'vm0',
      { action: 'approve', rule: 0, reason: 'rules[0]' },
    ],
    [
      'not by a follower',
      rules({ match: {}, action: 'approve' }),
      { Resources: ['vm1', 'vm0'] },
      'vm0',
      { action: 'await', rule: 0, reason: 'rules[0]: vm1 (the first VM listed) approves for the group' },
    ],
    [
      'nor after hooks by a follower',
      rules({ match: {}, action: 'approveAfterHooks' }),
      { Resources: ['vm1', 'vm0'] },
      'vm0',
      { action: 'await', rule: 0, reason: 'rules[0]: vm1 (the first VM listed) approves for the group' },
    ],
    [
      'by a follower when the rule says any',
      rules({ match: {}, action: 'approve', approveFrom: 'any' }),
      { Resources: ['vm1', 'vm0'] },
      'vm0',
      { action: 'approve', rule: 0, reason: 'rules[0]' },
    ],
    [
      'an event of this VM alone',
      rules({ match: {}, action: 'approve' }),
      { Resources: ['VM0'] },
      'vm0',
      { action: 'approve', rule: 0, reason: 'rules[0]' },
    ],
  ])('%s', (_what, r, over, vm, decision) => {
    expect(decide(r, ev(over), vm, NOW)).toEqual(decision);
  });

  it("without a clock given, the machine's: a time bound is judged against now", () => {
    const soon = new Date(Date.now() + 600_000).toISOString();
    const r = rules({ match: { minSecondsToNotBefore: 300, maxSecondsToNotBefore: 900 }, action: 'approve' });
    expect(decide(r, ev({ NotBefore: soon }), 'vm0')).toMatchObject({ action: 'approve' });
    expect(decide(r, ev(), 'vm0')).toMatchObject({ action: 'await', rule: null });
  });
});

describe('a rule as written', () => {
  it('takes the defaults: any time but a blackout, approved by the leader, matching anything', () => {
    expect(Rule.parse({ action: 'approve' })).toEqual({ match: {}, action: 'approve', within: 'any', approveFrom: 'leader' });
  });

  it.each<[string, Record<string, unknown>]>([
    ['an unknown match key', { match: { eventKind: 'x' }, action: 'approve' }],
    ['an unknown action', { match: {}, action: 'yolo' }],
    ['an unknown key', { action: 'approve', when: 'now' }],
    ['an empty list of types', { match: { eventType: [] }, action: 'approve' }],
    ['an unknown event type', { match: { eventType: 'Reboots' }, action: 'approve' }],
    ['an unknown source', { match: { eventSource: ['Azure'] }, action: 'approve' }],
    ['a negative duration', { match: { minDurationSeconds: -1 }, action: 'approve' }],
    ['a fractional duration', { match: { maxDurationSeconds: 1.5 }, action: 'approve' }],
    ['an empty pattern', { match: { resources: '' }, action: 'approve' }],
    ['an empty name', { name: '', action: 'approve' }],
    ['an unknown within', { action: 'approve', within: 'sometimes' }],
    ['an unknown approveFrom', { action: 'approve', approveFrom: 'followers' }],
  ])('refuses %s', (_what, rule) => {
    expect(Rule.safeParse(rule).success).toBe(false);
  });
});
