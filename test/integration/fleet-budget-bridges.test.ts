/**
 * Whole bridges in one fleet group, each with its own IMDS simulator (the VM it runs on), over
 * the budget's real stores: Azurite for Blob Storage, the Kubernetes API stand-in for Leases
 * (testkit/fleet-stores.ts). What is measured is what Azure sees: each VM's StartRequests at its
 * simulator, and the moment the member gave its slot back.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { FleetStores, STORE_KINDS } from '../../testkit/fleet-stores.ts';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { postApproval, waitFor } from '../helpers.ts';
import { pino } from 'pino';
import { startRelay } from '../../src/relay/relay.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { API_SECRET, fleetApproval, fleetKeys, fleetPeer, relayConfig, sessionOf } from '../../testkit/fleet.ts';
import { fromJson } from '../../src/pipeline/cloudevent.ts';
import { collisionIdOf } from '../../src/pipeline/notices.ts';
import { FleetConfig } from '../../src/fleet/budget/config.ts';
import { readGroup } from '../../src/fleet/budget/group.ts';
import { toChatMessage } from '../../src/present/chat-model.ts';
import { launchChromium } from '../../testkit/browser.ts';
import parsePrometheus from 'parse-prometheus-text-format';

const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
let stores: FleetStores;

beforeAll(async () => {
  stores = await FleetStores.start();
}, 60_000);
afterEach(() => stopAll());
afterAll(() => stores?.stop());

const releasedAt = (h: Harness): number | undefined =>
  h.lines.find((l) => l.msg === 'fleet budget: slot given back')?.time as number | undefined;

/** mostAtOnce: the largest number of the intervals that overlap at any moment. */
function mostAtOnce(intervals: readonly { from: number; to: number }[]): number {
  return Math.max(...intervals.map((i) => intervals.filter((j) => j.from <= i.from && j.to > i.from).length));
}

function member(
  kind: (typeof STORE_KINDS)[number],
  group: string,
  i: number,
  more: Record<string, unknown> = {},
  fleet: Record<string, unknown> = {},
) {
  return startBridge({
    sim: { vmName: `m${i}`, peers: [], tickMs: 10 },
    sinks: (dir) => [
      { name: 'audit', type: 'file', path: join(dir, 'events.jsonl') },
      { name: 'hook', type: 'exec', command: ['/bin/true'], prepare: true },
    ],
    config: {
      fleet: { group, maxUnavailable: 2, store: stores.config(kind), retryMs: 200, heartbeatSeconds: 5, ...fleet },
      ...more,
    },
  });
}

describe.each(STORE_KINDS)('bridges in one group over the %s store', (kind) => {
  it('ten members, two slots, every one ready at once: never more than two down because of us, every one approved in the end', async () => {
    const rules = { approval: { rules: [{ match: {}, action: 'approveAfterHooks' }] } };
    const hs = await Promise.all(Array.from({ length: 10 }, (_, i) => member(kind, `ten-${kind}`, i, rules)));
    for (const h of hs) h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 1200, DurationInSeconds: 5 });
    await waitFor(() => hs.every((h) => releasedAt(h) !== undefined), 'every member approved and back', 90_000, 100);
    for (const h of hs) expect(h.sim.startRequests).toHaveLength(1);
    const intervals = hs.map((h) => ({ from: h.sim.startRequests[0]!.at, to: releasedAt(h)! }));
    for (const i of intervals) expect(i.to).toBeGreaterThan(i.from);
    const most = mostAtOnce(intervals);
    expect(most).toBeLessThanOrEqual(2);
    expect(most).toBe(2); // the budget was used, not a queue of one
    // every member approved once, by its hooks, and told the pipeline so
    for (const h of hs) expect(h.kinds().filter((k) => k.startsWith('approved:'))).toHaveLength(1);
    // the held ones said why, once each
    const held = hs.flatMap((h) => h.lines.filter((l) => String(l.msg).startsWith('approval held:')));
    expect(held.length).toBeGreaterThan(0);
    expect(held[0]).toMatchObject({ code: 'HELD', holders: expect.any(Array) });
  }, 120_000);

  it('the head of the queue asks again at its next read, not after retryMs: a slot given back is taken at once', async () => {
    const rules = { approval: { rules: [{ match: {}, action: 'approve' }] } };
    // a retry of five minutes: only the pace of the head of the queue can hand the slot on within the wait below
    const fleet = { maxUnavailable: 1, retryMs: 300_000 };
    const group = `head-${kind}`;
    const [m0, m1] = await Promise.all([0, 1].map((i) => member(kind, group, i, rules, fleet)));
    // m0's NotBefore first: it takes the slot at its first ask; m1 is held at the head of the queue
    m0!.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 1500, DurationInSeconds: 5 });
    m1!.sim.addEvent({ EventType: 'Reboot', noticeMs: 601_000, startedMs: 600_000, DurationInSeconds: 5 });
    await waitFor(() => m1!.lines.some((l) => String(l.msg).startsWith('approval held:')), 'm1 held', 30_000, 50);
    await waitFor(() => m0!.sim.startRequests.length === 1, 'm0 started', 30_000, 50);
    await waitFor(() => releasedAt(m0!) !== undefined, "m0's slot given back", 30_000, 50);
    await waitFor(() => m1!.sim.startRequests.length === 1, 'm1 started', 30_000, 50);
    expect(m1!.sim.startRequests[0]!.at).toBeGreaterThan(releasedAt(m0!)!);
  }, 90_000);

  it('a person is told who holds the slot (409), and may approve past the budget with a reason, on the record', async () => {
    const approval = (i: number) => ({
      approval: { secret: SECRET },
      server: { listen: '127.0.0.1:0' },
      identity: { vmName: `m${i}` },
    });
    const [a, b] = await Promise.all([0, 1].map((i) => member(kind, `api-${kind}`, i, approval(i), { maxUnavailable: 1 })));
    const ea = a!.sim.addEvent({ noticeMs: 600_000, startedMs: 600_000 });
    const eb = b!.sim.addEvent({ noticeMs: 600_000, startedMs: 600_000 });
    await waitFor(() => a!.kinds().includes(`scheduled:${ea.eventId}`) && b!.kinds().includes(`scheduled:${eb.eventId}`), 'both scheduled');
    const post = (h: Harness, body: Record<string, unknown>) => postApproval(h.bridge.approvalServerUrl!, SECRET, body);
    expect(await post(a!, { eventId: ea.eventId, approver: 'alice' })).toMatchObject({ status: 200, json: { status: 'approved' } });
    const held = await post(b!, { eventId: eb.eventId, approver: 'bob' });
    expect(held.status).toBe(409);
    expect(held.json).toMatchObject({
      eventId: eb.eventId,
      status: 'held',
      holders: [{ vm: 'm0', eventId: ea.eventId }],
      error: { code: 'HELD' },
    });
    expect(b!.sim.startRequests).toHaveLength(0);
    // force needs a reason, and nothing changes without one
    expect((await post(b!, { eventId: eb.eventId, approver: 'bob', force: true })).status).toBe(400);
    const forced = await post(b!, { eventId: eb.eventId, approver: 'bob', force: true, reason: 'the patch cannot wait' });
    expect(forced).toMatchObject({ status: 200, json: { status: 'approved', forced: true } });
    expect(b!.sim.startRequests).toHaveLength(1);
    const approved = await waitFor(() => b!.events().find((e) => e.type.endsWith('.approved')), 'the approved CloudEvent');
    expect(approved.data.approval).toMatchObject({ by: 'bob', via: 'api', forced: true, reason: 'the patch cannot wait' });
    const readiness = b!.bridge.fleet;
    expect(readiness).toMatchObject({ group: `api-${kind}`, maxUnavailable: 1, storeReachable: true });
  }, 60_000);

  it('a refused StartRequests gives back exactly what its take wrote: never the slots of a maintenance another member started', async () => {
    const group = `give-back-${kind}`;
    const approval = (i: number) => ({ approval: { secret: SECRET }, server: { listen: '127.0.0.1:0' }, identity: { vmName: `m${i}` } });
    const [m0, m1, m2] = await Promise.all([0, 1, 2].map((i) => member(kind, group, i, approval(i))));
    // one maintenance of m0 and m1 (one event names both): each VM's IMDS lists it
    const shared = { EventId: randomUUID().toUpperCase(), Resources: ['m0', 'm1'], noticeMs: 600_000, startedMs: 600_000 };
    m0!.sim.addEvent(shared);
    m1!.sim.addEvent(shared);
    const e2 = m2!.sim.addEvent({ noticeMs: 600_000, startedMs: 600_000 });
    const config = FleetConfig.parse({ group, maxUnavailable: 2, store: stores.config(kind) });
    const listed = async () => (await readGroup(config)).members.filter((m) => m.events.some((e) => e.eventId === shared.EventId)).length;
    await waitFor(async () => (await listed()) === 2, "both members' records list the shared maintenance", 15_000, 100);
    await waitFor(() => m2!.kinds().includes(`scheduled:${e2.eventId}`), "m2's event");
    const post = (h: Harness, body: Record<string, unknown>) => postApproval(h.bridge.approvalServerUrl!, SECRET, body);
    // m1 approves it for both: two slots, in m1's and m0's names; m1's IMDS starts it (Azure starts it for both)
    expect(await post(m1!, { eventId: shared.EventId, approver: 'alice' })).toMatchObject({ status: 200 });
    const held = async () =>
      (await readGroup(config)).slots
        .filter((s) => s.eventId === shared.EventId)
        .map((s) => s.vm)
        .sort();
    expect(await held()).toEqual(['m0', 'm1']);
    // m0 is asked too, and its IMDS refuses StartRequests: its take wrote nothing, so nothing is given back
    m0!.sim.injectFault({ kind: 'status', status: 400, target: 'start' });
    expect(await post(m0!, { eventId: shared.EventId, approver: 'bob' })).toMatchObject({
      status: 502,
      json: { error: { code: 'IMDS_REFUSED' } },
    });
    expect(await held()).toEqual(['m0', 'm1']);
    // the group's two slots are both down for that maintenance: m2 is held, and Azure never hears of it
    const third = await post(m2!, { eventId: e2.eventId, approver: 'carol' });
    expect(third).toMatchObject({ status: 409, json: { status: 'held', error: { code: 'HELD' } } });
    expect(m2!.sim.startRequests).toHaveLength(0);
  }, 60_000);

  it('a collision foretold: one fleet.collision CloudEvent with the same id from every member due, once', async () => {
    const group = `collide-${kind}`;
    const hs = await Promise.all([0, 1, 2].map((i) => member(kind, group, i, {}, { maxUnavailable: 1 })));
    const notBefore = 600_000;
    for (const h of hs) h.sim.addEvent({ EventType: 'Reboot', noticeMs: notBefore, DurationInSeconds: 60 });
    // the members' records arrive one by one, so a member may first see two of the three due, then
    // all three: one wave, one wave id in every word of every member, and every member's word of
    // all three due is one CloudEvent id, whether it was its first word or not
    const collisions = (h: Harness) => h.events().filter((e) => e.type === 'azure.scheduledevent.fleet.collision');
    const ofAll = (h: Harness) => collisions(h).filter((e) => e.data.collision.due.length === 3);
    await waitFor(() => hs.every((h) => ofAll(h).length === 1), 'the collision of all three at every member', 45_000, 100);
    const waves = new Set(hs.flatMap((h) => collisions(h).map((e) => e.data.collision.id)));
    expect(waves.size).toBe(1);
    const [wave] = waves;
    expect(new Set(hs.map((h) => ofAll(h)[0]!.id))).toEqual(
      new Set([
        collisionIdOf(
          wave,
          ofAll(hs[0]!)[0]!.data.collision.due.map((d: { eventId: string }) => d.eventId),
        ),
      ]),
    );
    const ce = ofAll(hs[0]!)[0]!;
    expect(ce.data.collision).toMatchObject({ group, maxUnavailable: 1, members: 3 });
    expect(ce.data.collision.due.map((d: { vm: string }) => d.vm).sort()).toEqual(['m0', 'm1', 'm2']);
    expect(ce.data.eventId).toBe(hs[0]!.sim.events[0]!.eventId); // each member's copy carries its own event
    expect(toChatMessage(fromJson(JSON.stringify(ce))).title).toMatch(
      new RegExp(
        `^3 of ${group}'s 3 members are due for maintenance between \\d\\d:\\d\\d UTC and \\d\\d:\\d\\d UTC; the group allows 1, and Azure takes 3 down at once if nothing changes$`,
      ),
    );
    // counted, and named in the counter's help, as every transition it counts
    for (const h of hs) {
      const family = parsePrometheus(await h.bridge.metrics.registry.metrics()).find((f) => f.name === 'sebridge_transitions_total')!;
      const kinds = family.metrics.map((m) => m.labels!.transition!);
      expect(kinds).toContain('fleet.collision');
      for (const kind of kinds) expect(family.help).toContain(kind);
    }
    // the next heartbeat finds the same collision: nothing new. A heartbeat writes the member's
    // record, then reads the group; two more records from every member, then every outbox empty,
    // show each member read the group again and delivered whatever it made of it
    const words = hs.map((h) => collisions(h).length);
    const config = FleetConfig.parse({ group, maxUnavailable: 1, store: stores.config(kind) });
    const beats = async () => new Map((await readGroup(config)).members.map((m) => [m.vm, m.heartbeatAt]));
    for (let round = 0; round < 2; round += 1) {
      const mark = await beats();
      await waitFor(async () => [...(await beats())].every(([vm, at]) => mark.get(vm) !== at), 'a heartbeat of every member', 20_000, 200);
    }
    await waitFor(() => hs.every((h) => [...h.bridge.store.outbox.depth().values()].every((n) => n === 0)), 'every outbox empty');
    expect(hs.map((h) => collisions(h).length)).toEqual(words);
  }, 120_000);
});

describe('a wave of twenty members over the blob store (Azurite), two slots', () => {
  it("every member ready at once: never more than two down, served in the queue's order, and the two at its head granted at their first ask", async () => {
    const n = 20;
    const k = 2;
    const group = 'wave-twenty';
    const gates = await mkdtemp(join(tmpdir(), 'se-bridge-wave-'));
    onTestFinished(() => rm(gates, { recursive: true, force: true }));
    const gate = join(gates, 'open');
    // every member's preparation waits for one file, so the whole group asks at once, once every
    // record says its maintenance (the queue is known to all): a child process per member
    const hook = ['/bin/sh', '-c', `for i in $(seq 1 1200); do [ -f '${gate}' ] && exit 0; sleep 0.05; done; exit 1`];
    const hs = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        startBridge({
          sim: { vmName: `w${String(i).padStart(2, '0')}`, peers: [], tickMs: 10 },
          sinks: (dir) => [
            { name: 'audit', type: 'file', path: join(dir, 'events.jsonl') },
            { name: 'hook', type: 'exec', command: hook, prepare: true, timeoutMs: 120_000 },
          ],
          config: {
            approval: { rules: [{ match: {}, action: 'approveAfterHooks' }] },
            fleet: { group, maxUnavailable: k, store: stores.config('blob'), retryMs: 2000, heartbeatSeconds: 5 },
          },
        }),
      ),
    );
    // the last member's NotBefore comes first: the queue's order is w19, w18, ..., w00
    for (const [i, h] of hs.entries())
      h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 + (n - i) * 1000, startedMs: 1200, DurationInSeconds: 5 });
    const config = FleetConfig.parse({ group, maxUnavailable: k, store: stores.config('blob') });
    await waitFor(
      async () => (await readGroup(config)).members.filter((m) => m.events.some((e) => e.status === 'Scheduled')).length === n,
      "every member's record says its maintenance",
      30_000,
      100,
    );
    await writeFile(gate, '');
    await waitFor(() => hs.every((h) => releasedAt(h) !== undefined), 'every member approved and back', 90_000, 100);
    for (const h of hs) expect(h.sim.startRequests).toHaveLength(1);
    // never more than two down at once, as the simulators saw them
    const intervals = hs.map((h) => ({ from: h.sim.startRequests[0]!.at, to: releasedAt(h)! }));
    expect(mostAtOnce(intervals)).toBeLessThanOrEqual(k);
    expect(mostAtOnce(intervals)).toBe(k);
    // the queue's order: when a member was started, every member k or more places ahead of it had been
    const rank = (i: number) => n - 1 - i;
    const startedAt = (i: number) => hs[i]!.sim.startRequests[0]!.at;
    const early = hs.flatMap((_, b) =>
      hs.flatMap((__, a) => (rank(a) <= rank(b) - k && startedAt(a) >= startedAt(b) ? [`w${a} after w${b}`] : [])),
    );
    expect(early).toEqual([]);
    // the head of the queue asked first with a slot free that nobody ahead of it would take: granted at once, never held
    const heldLines = (h: Harness) => h.lines.filter((l) => String(l.msg).startsWith('approval held:'));
    expect(heldLines(hs[n - 1]!)).toEqual([]);
    expect(heldLines(hs[n - 2]!)).toEqual([]);
    // the rest waited their turn, and said so
    for (const h of hs.slice(0, n - k)) expect(heldLines(h).length).toBeGreaterThan(0);
  }, 120_000);
});

describe('the approval page with a fleet budget, in Chromium', () => {
  it('a held click says who holds the slot and keeps the link; ticking the box with a reason approves past the budget', async () => {
    const browser = await launchChromium();
    try {
      const withServer = () => ({
        approval: { secret: SECRET, publicUrl: 'http://127.0.0.1:1' },
        server: { listen: '127.0.0.1:0' },
      });
      const [a, b] = await Promise.all([0, 1].map((i) => member('blob', 'page', i, withServer(), { maxUnavailable: 1 })));
      const ea = a!.sim.addEvent({ noticeMs: 600_000, startedMs: 600_000 });
      const eb = b!.sim.addEvent({ EventType: 'Redeploy', noticeMs: 600_000, startedMs: 600_000 });
      const scheduled = await waitFor(
        () => b!.bridge.store.journal.all().find((j) => j.id === `${eb.eventId}/scheduled`),
        'the scheduled event',
      );
      await waitFor(() => a!.kinds().includes(`scheduled:${ea.eventId}`), "m0's event");
      await a!.bridge.approvals.approve(ea.eventId, { by: 'alice', via: 'cli' });
      const link = b!.bridge.approvalLinks!.link(fromJson(scheduled.json))!.replace('http://127.0.0.1:1', b!.bridge.approvalServerUrl!);

      const page = await browser.newPage();
      await page.goto(link);
      await page.locator('#approve').click();
      await page.waitForSelector('.card.err');
      expect(await page.locator('h1').innerText()).toBe("Held: the group's maintenance budget is used up");
      expect(await page.locator('.card p').innerText()).toMatch(new RegExp(`held by m0 \\(${ea.eventId}\\)`));
      expect(b!.sim.startRequests).toHaveLength(0);

      // the link was not spent: open it again, approve past the budget with a reason
      expect((await page.goto(link))!.status()).toBe(200);
      await page.locator('summary').click();
      await page.locator('#force').check();
      await page.locator('#reason').fill('the redeploy fixes the disk');
      await page.locator('#approve').click();
      await page.waitForSelector('.card.ok');
      expect(await page.locator('h1').innerText()).toBe('Approved');
      expect(b!.sim.startRequests).toHaveLength(1);
      const approved = await waitFor(() => b!.events().find((e) => e.type.endsWith('.approved')), 'the approved CloudEvent');
      expect(approved.data.approval).toMatchObject({ via: 'link', forced: true, reason: 'the redeploy fixes the disk' });
      await page.close();
    } finally {
      await browser.close();
    }
  }, 60_000);
});

describe('a fleet budget behind the relay (fleet approvals over the Service Bus stand-in)', () => {
  it('the relay answers a held approval as the VM does (409, held, who holds the slot), and a new request passes once the slot is back', async () => {
    const peer = await fleetPeer();
    const keys = fleetKeys();
    const sims: ImdsSimulator[] = [];
    const relay = await startRelay(relayConfig(peer, keys, { replyWaitMs: 5000 }), pino({ level: 'silent' }), {
      host: '127.0.0.1',
      port: 0,
    });
    try {
      await waitFor(() => relay.bus?.listening, 'the relay replies session');
      const viaRelay = async (i: number) => {
        const sim = new ImdsSimulator({ vmName: `r${i}`, peers: [], tickMs: 10 });
        sims.push(sim);
        await sim.listen(0);
        return startBridge({
          sim: sim,
          config: {
            approval: fleetApproval(peer, keys, sessionOf(sim)),
            fleet: { group: 'relay', maxUnavailable: 1, store: stores.config('blob'), retryMs: 200 },
          },
        });
      };
      const [a, b] = [await viaRelay(0), await viaRelay(1)];
      await waitFor(() => a.bridge.inbox?.connected && b.bridge.inbox?.connected, 'the inbox sessions');
      const ea = a.sim.addEvent({ noticeMs: 600_000, startedMs: 1500 });
      const eb = b.sim.addEvent({ noticeMs: 600_000 });
      await waitFor(() => a.kinds().includes(`scheduled:${ea.eventId}`) && b.kinds().includes(`scheduled:${eb.eventId}`), 'both scheduled');
      const api = (h: Harness, eventId: string) =>
        postApproval(relay.url, API_SECRET, { vm: h.bridge.identity.resourceId, eventId, approver: 'carol' });
      expect(await api(a, ea.eventId)).toMatchObject({ status: 200, json: { status: 'approved' } });
      const held = await api(b, eb.eventId);
      expect(held).toMatchObject({ status: 409, json: { eventId: eb.eventId, status: 'held', error: { code: 'HELD' } } });
      expect(held.json.error.message).toMatch(new RegExp(`held by r0 \\(${ea.eventId}\\)`));
      expect(b.sim.startRequests).toHaveLength(0);
      // r0's maintenance ends (1.5 s Started), its slot is given back: asking again passes
      await waitFor(() => releasedAt(a) !== undefined, "r0's slot given back", 15_000);
      expect(await api(b, eb.eventId)).toMatchObject({ status: 200, json: { status: 'approved' } });
      expect(b.sim.startRequests).toHaveLength(1);
    } finally {
      await stopAll();
      await Promise.all(sims.map((s) => s.close()));
      await relay.close();
      await peer.close();
    }
  }, 60_000);
});
