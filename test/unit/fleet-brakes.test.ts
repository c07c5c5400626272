/**
 * The brakes' pure parts: the pause record's schema and when it holds, what a version that knows
 * no pause reads in it, the held answer, the breaker's failures and its pause, a person's request,
 * `fleet.breaker` in the configuration, and the `fleet.paused` CloudEvent and its chat words.
 */
import { describe, expect, it } from 'vitest';
import { ApprovalError } from '../../src/approval/service.ts';
import { breakerPause, breakerRecordOf, BREAKER_NAME, lapsedIn } from '../../src/fleet/budget/breaker.ts';
import { FleetConfig } from '../../src/fleet/budget/config.ts';
import {
  brakeOf,
  HOLD_BREAKER,
  HOLD_PAUSE,
  inForce,
  pausedError,
  pauseOf,
  PAUSE_NAME,
  PauseSchema,
  type Pause,
} from '../../src/fleet/budget/pause.ts';
import { pauseProblem } from '../../src/fleet/budget/pause-store.ts';
import { skippedOf } from '../../src/fleet/budget/parse.ts';
import { asSlot, live, type SlotRecord } from '../../src/fleet/budget/records.ts';
import type { ScheduledEvent } from '../../src/imds/wire.ts';
import { fromJson } from '../../src/pipeline/cloudevent.ts';
import type { PauseInfo } from '../../src/pipeline/info.ts';
import { toPauseCloudEvent } from '../../src/pipeline/notices.ts';
import { toChatMessage } from '../../src/present/chat-model.ts';
import { memberVm } from '../../testkit/fleet-stores.ts';

const NOW = Date.parse('2026-11-29T10:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const record = (name: string, value: unknown) => ({ name, value, version: '1' });
const pause = (more: Partial<Pause> = {}): Pause => ({
  member: null,
  by: 'person',
  who: 'alice',
  why: 'release 4.2',
  since: iso(NOW - 60_000),
  ...more,
});
const slot = (name: string, s: Partial<SlotRecord>) =>
  record(name, { member: 'm0-1234abcd', vm: 'm0', eventIds: ['E0'], since: iso(NOW - 600_000), mode: 'early', ...s });

describe('a pause', () => {
  it('holds from its record until its end, or until it is removed when it has none', () => {
    expect(pauseOf([record(PAUSE_NAME, pause())], NOW)).toMatchObject({ who: 'alice' });
    expect(pauseOf([record(PAUSE_NAME, pause({ until: iso(NOW + 1) }))], NOW)).not.toBeNull();
    // its end come: it holds nothing, with no write
    expect(pauseOf([record(PAUSE_NAME, pause({ until: iso(NOW) }))], NOW)).toBeNull();
    expect(inForce(pause({ until: iso(NOW - 1) }), NOW)).toBe(false);
    expect(pauseOf([], NOW)).toBeNull();
  });

  it('is no pause when its record does not read (and is named), and reads as a free slot to a version that knows no pause', () => {
    for (const bad of [
      { ...pause(), member: 'someone' },
      { ...pause(), by: 'robot' },
      { ...pause(), why: '' },
      { ...pause(), since: 'yesterday' },
      { ...pause(), why: 'x'.repeat(1025) },
    ]) {
      expect(PauseSchema.safeParse(bad).success).toBe(false);
      expect(pauseOf([record(PAUSE_NAME, bad)], NOW)).toBeNull();
      expect(skippedOf([record(PAUSE_NAME, bad)])).toHaveLength(1);
    }
    // no holder: a version without pauses counts nothing by it, and names nothing
    const old = asSlot(pause({ until: iso(NOW + 60_000), members: ['m0'] }));
    expect(old.member).toBeNull();
    expect(live(old, NOW)).toBe(false);
    expect(skippedOf([record(PAUSE_NAME, pause())])).toEqual([]);
  });

  it('holds an approval with HELD, its reason for machines, and the pause in the answer', () => {
    const err = pausedError('kafka-prod', pause({ until: iso(NOW + 3600_000) }));
    expect(err).toBeInstanceOf(ApprovalError);
    expect(err.code).toBe('HELD');
    expect(err.status).toBe(409);
    expect(err.message).toBe(
      `group kafka-prod is paused by alice since ${iso(NOW - 60_000)} (until ${iso(NOW + 3600_000)}): release 4.2; only a forced approval, with a reason, goes past a pause`,
    );
    expect(err.body('E1')).toMatchObject({
      status: 'held',
      error: { code: 'HELD' },
      pause: { by: 'person', who: 'alice', why: 'release 4.2', until: iso(NOW + 3600_000) },
    });
    expect(brakeOf(err)).toBe(HOLD_PAUSE);
    expect(brakeOf(err.with('said again'))).toBe(HOLD_PAUSE);
    expect(brakeOf(pausedError('g', pause({ by: 'breaker', who: 'breaker' })))).toBe(HOLD_BREAKER);
    expect(brakeOf(new ApprovalError('HELD', 'slots'))).toBeNull();
    expect(pausedError('g', pause({ by: 'breaker', who: 'breaker' })).message).toMatch(
      /paused by the group's circuit breaker .* \(until it is resumed\)/,
    );
  });

  it('is asked with a reason, and an end that reads and is to come', () => {
    expect(pauseProblem({ who: 'a', why: 'r' }, NOW)).toBeNull();
    expect(pauseProblem({ who: 'a', why: 'r', until: iso(NOW + 1000) }, NOW)).toBeNull();
    expect(pauseProblem({ who: 'a', why: ' ' }, NOW)).toMatch(/needs a reason/);
    expect(pauseProblem({ who: 'a' }, NOW)).toMatch(/needs a reason/);
    expect(pauseProblem({ who: 'a', why: 'r', until: 'tomorrow' }, NOW)).toMatch(/is not a time/);
    expect(pauseProblem({ who: 'a', why: 'r', until: iso(NOW) }, NOW)).toMatch(/not in the future/);
    expect(pauseProblem({ who: '', why: 'r' }, NOW)).toMatch(/who asks/);
  });
});

describe('the circuit breaker', () => {
  const within = 600_000;

  it('counts a member approved early (or forced) whose slot passed its recorded end in its name, dated by that end', () => {
    const records = [
      slot('slot-0', { until: iso(NOW - 1000) }),
      slot('slot-x-m1', { member: 'm1-1', vm: 'm1', mode: 'forced', until: iso(NOW - 2000) }),
      // Azure started it: no early approval of ours
      slot('slot-1', { member: 'm2-1', vm: 'm2', mode: 'started', until: iso(NOW - 1000) }),
      // still within its bound
      slot('slot-2', { member: 'm3-1', vm: 'm3', until: iso(NOW + 1000) }),
      // given back in time
      record('slot-3', { member: null, vm: 'm4', since: iso(NOW - 5000) }),
      // lapsed before the window
      slot('slot-4', { member: 'm5-1', vm: 'm5', until: iso(NOW - within - 1) }),
      record(PAUSE_NAME, pause()),
    ];
    expect(lapsedIn(records, NOW, within).map((f) => [f.vm, f.at])).toEqual([
      ['m0', iso(NOW - 1000)],
      ['m1', iso(NOW - 2000)],
    ]);
    // a person resumed the group since: the lapses before are not counted again
    expect(lapsedIn(records, NOW, within, NOW - 1500).map((f) => f.vm)).toEqual(['m0']);
  });

  it('pauses with the members named, until a person resumes it', () => {
    const failures = lapsedIn(
      [slot('slot-0', { until: iso(NOW - 1000) }), slot('slot-1', { member: 'm1-1', vm: 'm1', until: iso(NOW - 10) })],
      NOW,
      within,
    );
    const p = breakerPause(failures, 600, NOW);
    expect(PauseSchema.parse(p)).toEqual(p);
    expect(p).toMatchObject({ by: 'breaker', members: ['m0', 'm1'], since: iso(NOW) });
    expect(p.until).toBeUndefined();
    expect(p.why).toMatch(/^2 members approved early did not come back within their bound in 600 s \(m0, m1\)/);
  });

  it('reads its record by its schema: one that does not read is no record, and keeps its version for the next write', () => {
    const good = { member: null, failures: [{ vm: 'm0', member: 'm0-1', eventIds: ['E'], since: iso(NOW), at: iso(NOW) }] };
    expect(breakerRecordOf([record(BREAKER_NAME, good)])).toEqual({ record: good, version: '1' });
    expect(breakerRecordOf([record(BREAKER_NAME, { member: null, failures: 'many' })])).toEqual({ record: null, version: '1' });
    expect(breakerRecordOf([])).toEqual({ record: null, version: null });
  });

  it('is configured with a count and a window, within bounds', () => {
    const base = { group: 'g', maxUnavailable: 1, store: { type: 'kubernetes', namespace: 'n' } };
    expect(FleetConfig.parse({ ...base, breaker: { failures: 2, withinSeconds: 3600 } }).breaker).toEqual({
      failures: 2,
      withinSeconds: 3600,
    });
    expect(FleetConfig.parse(base).breaker).toBeUndefined();
    for (const breaker of [
      { failures: 0, withinSeconds: 60 },
      { failures: 2, withinSeconds: 5 },
      { failures: 2 },
      { failures: 2, withinSeconds: 60, x: 1 },
    ])
      expect(FleetConfig.safeParse({ ...base, breaker }).success).toBe(false);
  });
});

describe('the fleet.paused CloudEvent', () => {
  const own = (vm: string): ScheduledEvent => ({
    ...{ eventId: `E-${vm}`, eventType: 'Reboot', resourceType: 'VirtualMachine', resources: [vm], eventStatus: 'Scheduled' },
    ...{ notBefore: iso(NOW + 3600_000), description: '', eventSource: 'Platform', durationInSeconds: 5, raw: {} },
  });
  const info = (state: PauseInfo['state'], by: PauseInfo['by'] = 'person'): PauseInfo => ({
    ...{ group: 'kafka-prod', state, by, who: by === 'person' ? 'alice' : 'breaker', why: 'release 4.2' },
    ...{ since: iso(NOW - 60_000), until: null },
  });
  const ce = (vm: string, p: PauseInfo) => toPauseCloudEvent(own(vm), 3, p, { vm: memberVm(vm), observedAt: iso(NOW) });

  it('has one id for the whole group, another once resumed, and carries the pause beside the member’s own maintenance', () => {
    const [a, b] = [ce('m0', info('paused')), ce('m1', info('paused'))];
    expect(a.type).toBe('azure.scheduledevent.fleet.paused');
    expect(a.id).toMatch(/^fleet\.paused\/[0-9a-f]{40}$/);
    expect(b.id).toBe(a.id);
    expect(ce('m0', info('resumed')).id).not.toBe(a.id);
    expect(ce('m0', info('paused', 'breaker')).id).not.toBe(a.id);
    expect(a.data).toMatchObject({ eventId: 'E-m0', pause: { group: 'kafka-prod', state: 'paused', who: 'alice', until: null } });
  });

  it('reads in chat as the group paused, high, and resumed, resolved', () => {
    const paused = toChatMessage(fromJson(JSON.stringify(ce('m0', info('paused')))));
    expect(paused).toMatchObject({ transition: 'fleet.paused', severity: 'high' });
    expect(paused.plainWords).toMatch(
      /^kafka-prod paused by alice since .* until resumed: release 4\.2; no early approval but a forced one$/,
    );
    const resumed = toChatMessage(fromJson(JSON.stringify(ce('m0', info('resumed')))));
    expect(resumed).toMatchObject({
      severity: 'resolved',
      plainWords: "kafka-prod resumed: early approvals go on in the group's queue order",
    });
  });
});
