/**
 * A pause against an approval under way, ordered by the test, not by timers (members in this
 * process over the Lease store, served by the project's Kubernetes API stand-in): a pause written
 * between an approving member's read of the slots and its slot write is seen at its read back,
 * and the early slot given back; a member not healthy with `unhealthyMembers: alwaysAllow` is held
 * by a pause as any member (it needs no slot, but the pause holds every early approval).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pauseGroup } from '../../src/fleet/budget/pause-store.ts';
import { budgetMember, live, type Member } from '../../testkit/fleet-members.ts';
import { leaseStorePerFile, outcome, scheduledFor } from '../../testkit/fleet-stores.ts';
import { Gate, gated, slotWrite } from '../../testkit/fleet-gate.ts';
import { waitFor } from '../helpers.ts';

const fleetStores = leaseStorePerFile();
const api = { by: 'test', via: 'api' } as const;

/** An HTTP health endpoint on 127.0.0.1 that always answers 503: a member checking it is not healthy. */
let sick: Server;
beforeAll(async () => {
  sick = createServer((_req, res) => void res.writeHead(503).end());
  await new Promise<void>((resolve) => sick.listen(0, '127.0.0.1', resolve));
});
afterAll(() => new Promise((resolve) => sick.close(resolve)));

/** pausedMidWrite: the answer to a's take of `e` when a person pauses the group while its slot write is held at `gate`. */
async function pausedMidWrite(a: Member, gate: Gate, e: ReturnType<typeof scheduledFor>): Promise<string> {
  gate.armed = true;
  const asked = outcome(a.budget.take(e, api));
  await waitFor(() => gate.reached, "a's slot write", 10_000, 5);
  await pauseGroup(a.store, { who: 'alice', why: 'release 4.2' }, Date.now());
  gate.open();
  return asked;
}

describe('a pause against an approval under way, over the Lease store', () => {
  it('a pause written between the read of the slots and the slot write is seen at the read back: the slot is given back', async () => {
    const group = 'pause-race-one';
    const gate = new Gate();
    const a = await budgetMember(fleetStores(), 'kubernetes', group, 'vm-a', {}, gated(slotWrite, gate));
    await a.read([]);
    const e = scheduledFor('vm-a');
    await a.read([e]);
    expect(await pausedMidWrite(a, gate, e)).toBe('HELD');
    expect(await live(a)).toEqual([]);
    expect(a.budget.state().slot).toBeNull();
  });

  it('the same for a maintenance of several members (a slot for each)', async () => {
    const group = 'pause-race-many';
    const gate = new Gate();
    const more = { maxUnavailable: 2 };
    const a = await budgetMember(fleetStores(), 'kubernetes', group, 'vm-a', more, gated(slotWrite, gate));
    const c = await budgetMember(fleetStores(), 'kubernetes', group, 'vm-c', more);
    await Promise.all([a, c].map((m) => m.budget.heartbeat()));
    await Promise.all([a, c].map((m) => m.read([])));
    const e = scheduledFor('vm-a', { resources: ['vm-a', 'vm-c'] });
    await a.read([e]);
    expect(await pausedMidWrite(a, gate, e)).toBe('HELD');
    expect(await live(a)).toEqual([]);
  });

  it('a member not healthy, with unhealthyMembers: alwaysAllow, is held by a pause like any member', async () => {
    const group = 'pause-unhealthy-first';
    const health = { http: { url: `http://127.0.0.1:${(sick.address() as AddressInfo).port}/` }, settleSeconds: 0 };
    const u = await budgetMember(fleetStores(), 'kubernetes', group, 'vm-u', { health, unhealthyMembers: 'alwaysAllow' });
    expect((await u.health!.check()).healthy).toBe(false);
    await u.read([]);
    await pauseGroup(u.store, { who: 'alice', why: 'release 4.2' }, Date.now());
    const e = scheduledFor('vm-u');
    await u.read([e]);
    // a person's plain approval, and a policy's (queued) after a heartbeat that read the pause
    expect(await outcome(u.budget.take(e, api))).toBe('HELD');
    await u.budget.heartbeat();
    expect(await outcome(u.budget.take(e, { by: 'policy', via: 'policy' }))).toBe('HELD');
    expect(u.lines.some((l) => String(l.msg).includes('approved without a further slot'))).toBe(false);
    // a forced approval goes past the pause, as past every brake, on the record as forced, saying so
    expect(await u.budget.take(e, { by: 'test', via: 'api', force: true, reason: 'now' })).toMatchObject({
      forced: true,
      slot: null,
      note: expect.stringMatching(/is paused by alice/),
    });
  });
});
