/**
 * Unhealthy first (fleet.unhealthyMembers): when a member counted as down for its health needs
 * no slot for its own maintenance, and what the configuration accepts.
 */
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { FleetConfig } from '../../src/fleet/budget/config.ts';
import { countedForHealth, goesFirst, unhealthyFirst } from '../../src/fleet/budget/unhealthy-first.ts';

const now = Date.parse('2026-11-29T10:00:00Z');
const since = (agoSeconds: number) => new Date(now - agoSeconds * 1000).toISOString();
const store = { type: 'kubernetes', namespace: 'n' };
const health = { http: { url: 'http://127.0.0.1:9/healthz' } };
const config = (unhealthyMembers?: string) =>
  FleetConfig.parse({
    group: 'g',
    maxUnavailable: 1,
    store,
    health,
    unhealthyCountsForSeconds: 600,
    ...(unhealthyMembers ? { unhealthyMembers } : {}),
  });

describe('who goes first', () => {
  it('a member whose last check failed, within unhealthyCountsForSeconds: the others count it as down', () => {
    expect(countedForHealth({ healthy: false, since: since(10) }, 600, now)).toBe(true);
    expect(countedForHealth({ healthy: false, since: since(599) }, 600, now)).toBe(true);
    // past the bound the others leave it out of the count: it needs a slot again
    expect(countedForHealth({ healthy: false, since: since(600) }, 600, now)).toBe(false);
    expect(countedForHealth({ healthy: true, since: since(10) }, 600, now)).toBe(false);
    expect(countedForHealth({ healthy: false, since: 'not a time' }, 600, now)).toBe(false);
    // not checked yet (after a reboot): not known to be down
    expect(countedForHealth(null, 600, now)).toBe(false);
    expect(countedForHealth(undefined, 600, now)).toBe(false);
  });

  it('alwaysAllow grants its own maintenance without a slot, said in the log; ifHealthyBudget (the default) never', () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
    const sick = { healthy: false, since: since(30) };
    const e = { eventId: 'E1', named: 1, now };
    expect(config().unhealthyMembers).toBe('ifHealthyBudget');
    expect(unhealthyFirst({ config: config(), logger }, sick, e)).toBeNull();
    expect(goesFirst(config(), sick, now)).toBe(false);
    expect(unhealthyFirst({ config: config('alwaysAllow'), logger }, sick, e)).toEqual({ forced: false, slot: null });
    expect(lines).toMatchObject([
      { eventId: 'E1', group: 'g', since: sick.since, msg: expect.stringContaining('approved without a further slot') },
    ]);
    expect(goesFirst(config('alwaysAllow'), sick, now)).toBe(true);
    // healthy: a slot like any member
    expect(unhealthyFirst({ config: config('alwaysAllow'), logger }, { healthy: true, since: since(30) }, e)).toBeNull();
    // a maintenance that takes other members of the group down needs their slots all the same
    expect(unhealthyFirst({ config: config('alwaysAllow'), logger }, sick, { ...e, named: 3 })).toBeNull();
    expect(lines).toHaveLength(1);
  });
});

describe('fleet.unhealthyMembers in the configuration', () => {
  it('is one of two words; alwaysAllow needs health and a budget, each refused naming the path', () => {
    expect(
      FleetConfig.safeParse({ group: 'g', maxUnavailable: 1, store, health, unhealthyMembers: 'always' }).error?.issues[0]?.path,
    ).toEqual(['unhealthyMembers']);
    expect(FleetConfig.safeParse({ group: 'g', maxUnavailable: 1, store, unhealthyMembers: 'alwaysAllow' }).error?.issues).toMatchObject([
      { path: ['unhealthyMembers'], message: expect.stringContaining('alwaysAllow needs health') },
    ]);
    expect(FleetConfig.safeParse({ group: 'g', store, health, unhealthyMembers: 'alwaysAllow' }).error?.issues).toMatchObject([
      { path: ['unhealthyMembers'], message: 'needs maxUnavailable: without a budget nothing holds an approval' },
    ]);
    // the default asks nothing
    expect(FleetConfig.parse({ group: 'g', store }).unhealthyMembers).toBe('ifHealthyBudget');
  });
});
