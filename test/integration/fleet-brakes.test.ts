/**
 * A group's brakes over the wire: whole bridges in one group, each with its own IMDS simulator,
 * over the budget's real stores (Azurite for Blob Storage, the Kubernetes API stand-in for
 * Leases). A person's pause holds every early approval but a forced one and resume lets them go
 * on in the queue's order; a pause with an end ends by itself; two members approved early that do
 * not come back open the circuit breaker, and the next member waits until a person resumes.
 * What is measured is what Azure sees: each VM's StartRequests at its simulator.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fleetStoresPerFile, STORE_KINDS } from '../../testkit/fleet-stores.ts';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { postApproval, waitFor } from '../helpers.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import { pauseGroup, resumeGroup } from '../../src/fleet/budget/pause-store.ts';
import { PAUSE_NAME, PauseSchema } from '../../src/fleet/budget/pause.ts';
import { BREAKER_NAME, BreakerSchema } from '../../src/fleet/budget/breaker.ts';
import { FleetConfig } from '../../src/fleet/budget/config.ts';
import { readGroup } from '../../src/fleet/budget/group.ts';

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const stores = fleetStoresPerFile();
afterEach(() => stopAll());

type Kind = (typeof STORE_KINDS)[number];

const approveAll = { approval: { rules: [{ match: {}, action: 'approve' }] } };

function member(kind: Kind, group: string, i: number, more: Record<string, unknown> = {}, fleet: Record<string, unknown> = {}) {
  return startBridge({
    sim: { vmName: `m${i}`, peers: [], tickMs: 10 },
    sinks: (dir) => [{ name: 'audit', type: 'file', path: join(dir, 'events.jsonl') }],
    config: {
      fleet: { group, maxUnavailable: 1, store: stores().config(kind), retryMs: 200, heartbeatSeconds: 5, marginSeconds: 15, ...fleet },
      ...more,
    },
  });
}

/** withStore: the group's store, opened as a person's command opens it. */
async function withStore<T>(kind: Kind, group: string, f: (store: Awaited<ReturnType<typeof openFleetStore>>) => Promise<T>): Promise<T> {
  const store = await openFleetStore(stores().config(kind) as never, group);
  try {
    return await f(store);
  } finally {
    await store.close();
  }
}

const heldBy = (h: Harness, words: RegExp) => h.lines.some((l) => String(l.msg).startsWith('approval held:') && words.test(String(l.msg)));
const releasedAt = (h: Harness): number | undefined =>
  h.lines.find((l) => l.msg === 'fleet budget: slot given back')?.time as number | undefined;

describe.each(STORE_KINDS)('brakes of a group over the %s store', (kind) => {
  it('a pause holds every policy approval and lets a forced one through; resume lets them go on in the queue order', async () => {
    const group = `pause-${kind}`;
    await withStore(kind, group, (s) => pauseGroup(s, { who: 'alice', why: 'release 4.2' }, Date.now()));
    const approval = {
      approval: { ...approveAll.approval, secret: SECRET },
      server: { listen: '127.0.0.1:0' },
      identity: { vmName: 'm2' },
    };
    const observed = { ...approveAll, observability: { listen: '127.0.0.1:0' } };
    const [m0, m1, m2] = await Promise.all([
      member(kind, group, 0, observed),
      member(kind, group, 1, approveAll),
      member(kind, group, 2, approval),
    ]);
    // m0's NotBefore first, then m1's: the queue's order; each maintenance is over a few seconds after it starts
    m0.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 1500, DurationInSeconds: 5 });
    m1.sim.addEvent({ EventType: 'Reboot', noticeMs: 610_000, startedMs: 1500, DurationInSeconds: 5 });
    const e2 = m2.sim.addEvent({ EventType: 'Reboot', noticeMs: 620_000, startedMs: 1500, DurationInSeconds: 5 });
    const paused = /is paused by alice since .*: release 4\.2/;
    await waitFor(() => [m0, m1, m2].every((h) => heldBy(h, paused)), 'every member held by the pause', 30_000, 50);
    for (const h of [m0, m1, m2]) expect(h.sim.startRequests).toHaveLength(0);

    // a person's plain approval is held too, naming the pause's reason, who and since (409, the pause beside it)
    const plain = await postApproval(m2.bridge.approvalServerUrl!, SECRET, { eventId: e2.eventId, approver: 'bob' });
    expect(plain.status).toBe(409);
    expect(plain.json).toMatchObject({
      status: 'held',
      error: { code: 'HELD', message: expect.stringMatching(paused) },
      pause: { by: 'person', who: 'alice', why: 'release 4.2', since: expect.any(String), until: null },
    });
    // forced past the pause, with a reason: approved, on the record
    const forced = await postApproval(m2.bridge.approvalServerUrl!, SECRET, {
      ...{ eventId: e2.eventId, approver: 'bob', force: true, reason: 'the hotfix cannot wait' },
    });
    expect(forced.status).toBe(200);
    expect(m2.sim.startRequests).toHaveLength(1);
    // it went past the pause, though a slot was free: forced, with what it went past, in the answer and its CloudEvent
    expect(forced.json).toMatchObject({ forced: true, past: ['the fleet budget'], warning: expect.stringMatching(paused) });
    await waitFor(() => m2.events().some((e) => e.type.endsWith('.approved')), "m2's approved CloudEvent", 15_000, 50);
    expect(m2.events().find((e) => e.type.endsWith('.approved'))?.data).toMatchObject({
      approval: { by: 'bob', forced: true, reason: expect.stringMatching(/^the hotfix cannot wait; group .* is paused by alice/) },
    });
    // the group says so: fleet status, and /readyz's details of each member (still ready: a paused group is no broken bridge)
    const config = FleetConfig.parse({ group, maxUnavailable: 1, store: stores().config(kind) });
    const g = await readGroup(config);
    expect(g.pause).toMatchObject({ by: 'person', who: 'alice', why: 'release 4.2' });
    const readyz = await fetch(`${m0.bridge.observabilityUrl}/readyz`);
    expect(readyz.status).toBe(200);
    expect(await readyz.json()).toMatchObject({ status: 'ready', fleet: { pause: { who: 'alice', why: 'release 4.2' } } });
    // the member whose maintenance the pause holds said so as a CloudEvent (delivered to its sink)
    const said = () => m0.kinds().filter((k) => k.startsWith('fleet.paused:')).length;
    await waitFor(() => said() === 1, "m0's fleet.paused CloudEvent", 15_000, 50);

    // m2's maintenance is over; then the pause ends
    await waitFor(() => releasedAt(m2) !== undefined, "m2's slot given back", 30_000, 50);
    expect(m0.sim.startRequests).toHaveLength(0);
    expect(m1.sim.startRequests).toHaveLength(0);
    const resumed = await withStore(kind, group, (s) => resumeGroup(s, Date.now()));
    expect(resumed.resumed).toMatchObject({ who: 'alice' });
    await waitFor(() => m1.sim.startRequests.length === 1, 'm1 approved in turn', 60_000, 50);
    // one slot: m0 (first in the queue) went first, and m1 only once m0 had given it back
    expect(m0.sim.startRequests).toHaveLength(1);
    expect(m1.sim.startRequests[0]!.at).toBeGreaterThan(releasedAt(m0)!);
    // and that the group was resumed, under a CloudEvent of its own
    await waitFor(() => said() === 2, "m0's resumed word", 15_000, 50);
  }, 120_000);

  it('a pause with an end ends by itself: the held member is approved with no write to the store', async () => {
    const group = `until-${kind}`;
    const until = new Date(Date.now() + 8000).toISOString();
    await withStore(kind, group, (s) => pauseGroup(s, { who: 'carol', why: 'a short freeze', until }, Date.now()));
    const m0 = await member(kind, group, 0, approveAll);
    m0.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 600_000, DurationInSeconds: 5 });
    await waitFor(() => heldBy(m0, /paused by carol/), 'held by the pause', 30_000, 50);
    expect(m0.sim.startRequests).toHaveLength(0);
    await waitFor(() => m0.sim.startRequests.length === 1, 'approved once the pause ended', 30_000, 50);
    expect(m0.sim.startRequests[0]!.at).toBeGreaterThanOrEqual(Date.parse(until));
    // nobody removed it: its end is what ended it
    const record = await withStore(kind, group, (s) => s.get(PAUSE_NAME));
    expect(PauseSchema.parse(record?.value)).toMatchObject({ who: 'carol', until });
  }, 90_000);

  it('two members approved early that do not come back open the breaker; the third waits until a person resumes', async () => {
    const group = `breaker-${kind}`;
    const fleet = { maxUnavailable: 2, breaker: { failures: 2, withinSeconds: 600 } };
    const [m0, m1, m2] = await Promise.all([0, 1, 2].map((i) => member(kind, group, i, approveAll, fleet)));
    // NotBefore in 5 s: each slot's recorded end is NotBefore + 5 s + the 15 s margin
    m0!.sim.addEvent({ EventType: 'Reboot', noticeMs: 5000, startedMs: 600_000, DurationInSeconds: 5 });
    m1!.sim.addEvent({ EventType: 'Reboot', noticeMs: 5000, startedMs: 600_000, DurationInSeconds: 5 });
    await waitFor(() => m0!.sim.startRequests.length === 1 && m1!.sim.startRequests.length === 1, 'm0 and m1 approved', 30_000, 50);
    // they never come back: their bridges stop, and nothing gives their slots back or renews them
    await Promise.all([m0!.stop(), m1!.stop()]);
    m2!.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 1500, DurationInSeconds: 5 });
    // should it not open, the failure says what m2 logged and what the slots held (it has timed out on a busy machine)
    await waitFor(() => m2!.lines.some((l) => l.code === 'FLEET_BREAKER_OPEN'), 'the breaker open', 90_000, 100).catch(
      async (err: Error) => {
        const slots = await withStore(kind, group, (s) => s.list('slot-')).catch(() => []);
        const said = m2!.lines.slice(-30).map((l) => `${String(l.code ?? '')} ${String(l.msg)}`);
        throw new Error(`${err.message}\nm2 said: ${said.join('\n')}\nslots: ${JSON.stringify(slots.map((r) => [r.name, r.value]))}`);
      },
    );
    const open = m2!.lines.find((l) => l.code === 'FLEET_BREAKER_OPEN')!;
    expect([...(open.members as string[])].sort()).toEqual(['m0', 'm1']);
    await waitFor(() => heldBy(m2!, /circuit breaker/), "m2 held by the breaker's pause", 30_000, 50);
    const pause = await withStore(kind, group, (s) => s.get(PAUSE_NAME));
    expect(PauseSchema.parse(pause?.value)).toMatchObject({ by: 'breaker', members: expect.arrayContaining(['m0', 'm1']) });
    const failures = BreakerSchema.parse((await withStore(kind, group, (s) => s.get(BREAKER_NAME)))?.value).failures;
    expect(failures.map((f) => f.vm).sort()).toEqual(['m0', 'm1']);
    // the slots are free again (past their recorded end: that is what opened it), and still m2 waits for a person
    expect(m2!.sim.startRequests).toHaveLength(0);
    const at = Date.now();
    const r = await withStore(kind, group, (s) => resumeGroup(s, Date.now()));
    expect(r).toMatchObject({ resumed: { by: 'breaker' }, breakerCleared: true });
    await waitFor(() => m2!.sim.startRequests.length === 1, 'm2 approved after the resume', 30_000, 50);
    expect(m2!.sim.startRequests[0]!.at).toBeGreaterThanOrEqual(at);
    // the lapses the breaker counted are not counted again: the group stays resumed
    expect(m2!.lines.filter((l) => l.code === 'FLEET_BREAKER_OPEN')).toHaveLength(1);
  }, 150_000);
});
