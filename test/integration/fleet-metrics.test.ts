/**
 * The fleet budget's numbers on /metrics of whole bridges (their IMDS the simulator, their
 * SQLite real) in one group over Blob Storage served by Azurite, read as Prometheus reads them
 * (parse-prometheus-text-format): allowed disruptions and the members down by cause, an approval
 * held by the budget, by members not healthy and by a blackout, each said with its reason while
 * it is held, and how long it was held observed once it is granted.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import parsePrometheus from 'parse-prometheus-text-format';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HOLD_REASONS } from '../../src/observability/fleet-metrics.ts';
import { readGroup } from '../../src/fleet/budget/group.ts';
import { fleetStoresPerFile } from '../../testkit/fleet-stores.ts';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { waitFor } from '../helpers.ts';

const fleetStores = fleetStoresPerFile();
afterEach(() => stopAll());

/** Each VM's health endpoint: /<vm> answers the status the test set for it (200 unless set). */
const statuses = new Map<string, number>();
let health: Server;
beforeAll(async () => {
  health = createServer((req, res) => void res.writeHead(statuses.get(req.url?.slice(1) ?? '') ?? 200).end());
  await new Promise<void>((resolve) => health.listen(0, '127.0.0.1', resolve));
});
afterAll(() => new Promise((resolve) => health.close(resolve)));
const healthUrl = (vm: string) => `http://127.0.0.1:${(health.address() as AddressInfo).port}/${vm}`;

type Sample = { labels: Record<string, string>; value: number };

/** scrape: every sample of the bridge's /metrics, by family name (a histogram's type only: see hold). */
async function scrape(h: Harness): Promise<Map<string, { type: string; samples: Sample[] }>> {
  const res = await fetch(`${h.bridge.observabilityUrl}/metrics`, { signal: AbortSignal.timeout(5000) });
  const families = parsePrometheus(await res.text());
  return new Map(
    families.map((f) => [
      f.name,
      {
        type: f.type,
        samples: f.metrics.map((m) => ({ labels: (m as { labels?: Record<string, string> }).labels ?? {}, value: Number(m.value) })),
      },
    ]),
  );
}

/** value: the sample of `name` whose labels include `labels` (undefined when there is none). */
async function value(h: Harness, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const f = (await scrape(h)).get(name);
  return f?.samples.find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

/** held: the approvals held now by each reason (every reason present, 0 or more). */
async function held(h: Harness, group: string): Promise<Record<string, number>> {
  const f = (await scrape(h)).get('sebridge_fleet_approvals_held')!;
  return Object.fromEntries(f.samples.filter((s) => s.labels.group === group).map((s) => [s.labels.reason!, s.value]));
}

const none = Object.fromEntries(HOLD_REASONS.map((r) => [r, 0]));

/**
 * hold: a series of the hold-time histogram for `group` (`count`, `sum`, or the bucket `le`),
 * read from the text (the parser gives a histogram's buckets without its labels, sum or count);
 * 0 when it has no series yet.
 */
async function hold(h: Harness, group: string, series: 'count' | 'sum' | { le: string }): Promise<number> {
  const text = await (await fetch(`${h.bridge.observabilityUrl}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  const name =
    typeof series === 'string'
      ? `sebridge_fleet_approval_hold_seconds_${series}{group="${group}"}`
      : `sebridge_fleet_approval_hold_seconds_bucket{group="${group}",le="${series.le}"}`;
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(name.length + 1));
}
const holdCount = (h: Harness, group: string) => hold(h, group, 'count');

function member(group: string, i: number, fleet: Record<string, unknown> = {}, more: Record<string, unknown> = {}) {
  return startBridge({
    sim: { vmName: `m${i}`, peers: [], tickMs: 10 },
    sinks: (dir) => [{ name: 'audit', type: 'file', path: join(dir, 'events.jsonl') }],
    config: {
      observability: { listen: '127.0.0.1:0' },
      approval: { rules: [{ match: {}, action: 'approve' }] },
      fleet: { group, maxUnavailable: 1, store: fleetStores().config('blob'), retryMs: 200, heartbeatSeconds: 5, ...fleet },
      ...more,
    },
  });
}

describe('the fleet budget on /metrics, over Azurite', () => {
  it('an approval the budget holds is said held for the budget, and its hold time observed once it is granted; allowed disruptions and the slot down follow', async () => {
    const group = 'metrics-budget';
    const [m0, m1] = await Promise.all([member(group, 0), member(group, 1)]);
    // nothing held yet: every reason at 0, the group not paused, no hold time observed
    await waitFor(
      async () => (await value(m1, 'sebridge_fleet_allowed_disruptions', { group })) === 1,
      'one disruption allowed',
      30_000,
      50,
    );
    expect(await held(m1, group)).toEqual(none);
    expect(await value(m1, 'sebridge_fleet_paused', { group })).toBe(0);
    expect(await value(m1, 'sebridge_fleet_unavailable', { group, cause: 'slot' })).toBe(0);
    expect(await holdCount(m1, group)).toBe(0);
    // m0 takes the slot first; m1's maintenance, announced then, is held until m0 is back
    m0.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 3000, DurationInSeconds: 3 });
    await waitFor(() => m0.sim.startRequests.length === 1, 'm0 approved', 30_000, 50);
    m1.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 600_000, DurationInSeconds: 2 });
    await waitFor(async () => (await held(m1, group)).budget === 1, 'm1 held for the budget', 30_000, 50);
    expect(await held(m1, group)).toEqual({ ...none, budget: 1 });
    expect(m1.sim.startRequests).toHaveLength(0);
    // m1 read the slots when it was held: m0 holds the one slot, none is left
    await waitFor(
      async () => (await value(m1, 'sebridge_fleet_unavailable', { group, cause: 'slot' })) === 1,
      "m0's slot counted",
      30_000,
      50,
    );
    expect(await value(m1, 'sebridge_fleet_allowed_disruptions', { group })).toBe(0);
    // without health checks nobody counts as down for health: known to be 0
    expect(await value(m1, 'sebridge_fleet_unavailable', { group, cause: 'unhealthy' })).toBe(0);
    expect(await value(m1, 'sebridge_fleet_unavailable', { group, cause: 'stale' })).toBe(0);
    await waitFor(() => m1.sim.startRequests.length === 1, 'm1 approved once m0 is back', 60_000, 50);
    await waitFor(async () => (await holdCount(m1, group)) === 1, "m1's hold time observed", 10_000, 50);
    expect(await held(m1, group)).toEqual(none);
    // held from m1's first ask until m0 was back: more than nothing, and counted in the buckets up from the one that holds it
    expect((await scrape(m1)).get('sebridge_fleet_approval_hold_seconds')?.type).toBe('HISTOGRAM');
    const sum = await hold(m1, group, 'sum');
    expect(sum).toBeGreaterThan(0);
    expect(await hold(m1, group, { le: '+Inf' })).toBe(1);
    expect(await hold(m1, group, { le: '86400' })).toBe(1);
    // m1 holds the slot now (it is down): the group allows no more
    await waitFor(
      async () => (await value(m1, 'sebridge_fleet_unavailable', { group, cause: 'slot' })) === 1,
      'm1 counted in its slot',
      10_000,
      50,
    );
    expect(await value(m1, 'sebridge_fleet_allowed_disruptions', { group })).toBe(0);
  }, 120_000);

  it('a member not healthy holds an approval for health (counted unhealthy, none allowed); a blackout holds one for the calendar', async () => {
    const group = 'metrics-health';
    const check = (vm: string) => ({ health: { http: { url: healthUrl(`${group}-${vm}`) }, intervalSeconds: 1, settleSeconds: 1 } });
    statuses.set(`${group}-m1`, 503);
    const [m0, m1] = await Promise.all([member(group, 0, check('m0')), member(group, 1, check('m1'))]);
    // m1's record says it is not healthy before m0 asks
    const m1Health = async () => (await readGroup(m1.config.fleet!)).members.find((m) => m.vm === 'm1')?.health;
    await waitFor(async () => (await m1Health())?.healthy === false, 'm1 not healthy in its record', 30_000, 100);
    m0.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 600_000, DurationInSeconds: 2 });
    await waitFor(async () => (await held(m0, group)).health === 1, 'm0 held for health', 30_000, 50);
    expect(await held(m0, group)).toEqual({ ...none, health: 1 });
    expect(await value(m0, 'sebridge_fleet_unavailable', { group, cause: 'unhealthy' })).toBe(1);
    expect(await value(m0, 'sebridge_fleet_unavailable', { group, cause: 'slot' })).toBe(0);
    expect(await value(m0, 'sebridge_fleet_allowed_disruptions', { group })).toBe(0);
    // m1 is healthy again: m0 is granted, its hold observed
    statuses.delete(`${group}-m1`);
    await waitFor(() => m0.sim.startRequests.length === 1, 'm0 approved', 60_000, 50);
    await waitFor(async () => (await holdCount(m0, group)) === 1, "m0's hold time observed", 10_000, 50);
    expect(await held(m0, group)).toEqual(none);

    // a blackout now: the policy's approval waits for the calendar, said as such
    const day = (d: number) => new Date(Date.now() + d * 86_400_000).toISOString().slice(0, 10);
    const calendar = { timeZone: 'UTC', blackouts: [{ name: 'freeze', from: day(-1), to: day(1) }] };
    const m2 = await member('metrics-calendar', 2, { calendar });
    m2.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 600_000, DurationInSeconds: 2 });
    await waitFor(async () => (await held(m2, 'metrics-calendar')).calendar === 1, 'm2 held for the calendar', 30_000, 50);
    expect(await held(m2, 'metrics-calendar')).toEqual({ ...none, calendar: 1 });
    expect(m2.sim.startRequests).toHaveLength(0);
  }, 120_000);
});
