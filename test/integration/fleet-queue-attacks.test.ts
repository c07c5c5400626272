/**
 * Attacks on the queue's entries (src/fleet/budget/queue-entries.ts, queue.ts) over the fleet
 * budget's two real stores: Azurite through the project's Blob REST client, and Leases on the
 * project's Kubernetes API stand-in (no API server can run here; written from the API reference).
 * Each test states what the queue promises where a page of its head could mislead a member.
 */
import { describe, expect, it } from 'vitest';
import { ASKING_PREFIX, QUEUE_PREFIX } from '../../src/fleet/budget/records.ts';
import { headSize } from '../../src/fleet/budget/queue-entries.ts';
import type { FleetStore, Versioned } from '../../src/fleet/budget/stores/port.ts';
import { budgetMember, type Member } from '../../testkit/fleet-members.ts';
import { fleetStoresPerFile, outcome, scheduledFor, STORE_KINDS } from '../../testkit/fleet-stores.ts';

const fleetStores = fleetStoresPerFile();
const policy = { by: 'policy', via: 'policy' } as const;
const api = { by: 'test', via: 'api' } as const;

const entries = async (store: FleetStore): Promise<Versioned[]> =>
  [...(await store.list(QUEUE_PREFIX)), ...(await store.list(ASKING_PREFIX))].sort((a, b) => a.name.localeCompare(b.name));

/** holding: a member of `group` that holds the group's one slot (a person's approval). */
async function holding(kind: (typeof STORE_KINDS)[number], group: string): Promise<Member> {
  const holder = await budgetMember(fleetStores(), kind, group, 'vm-holder');
  const eh = scheduledFor('vm-holder');
  await holder.read([eh]);
  expect(await outcome(holder.budget.take(eh, api))).toBe('granted');
  await holder.read([eh]);
  return holder;
}

/** heldAt: a member whose automatic approval for a maintenance at `notBefore` the budget holds. */
async function heldAt(kind: (typeof STORE_KINDS)[number], group: string, name: string, t0: number, notBefore: number) {
  const m = await budgetMember(fleetStores(), kind, group, name);
  m.now = t0;
  const e = scheduledFor(name, { notBefore: new Date(notBefore).toISOString() });
  await m.read([e]);
  m.now = t0 + 1000;
  await m.read([e]);
  expect(await outcome(m.budget.take(e, policy))).toBe('HELD');
  await m.read([e]);
  return { m, e };
}

describe.each(STORE_KINDS)('attacks on the queue entries over the %s store', (kind) => {
  it.each([
    ['(control: the page reaches h)', headSize(1) - 3],
    ['', headSize(1)],
  ])('a held member beyond a page of not-yet-held entries does not pass a held member that stands ahead of it %s', async (_, quiet) => {
    // K = 1: the page is headSize(1) = 10 entries
    const group = `pass-${quiet}-${kind}`;
    const holder = await holding(kind, group);
    const t0 = Date.now();
    const T = t0 + 3_600_000;
    // ten members with a maintenance at T that nobody asked to approve early (a person decides, or nobody):
    // each keeps an entry `asking-T-…`, not in the page of the held ones
    for (let i = 0; i < quiet; i++) {
      const q = await budgetMember(fleetStores(), kind, group, `vm-quiet${String(i).padStart(2, '0')}`);
      q.now = t0;
      await q.read([scheduledFor(q.view.vm.name, { notBefore: new Date(T).toISOString() })]);
    }
    // h is held for a maintenance at T+1s, m for one at T+2s: h stands ahead of m in the queue
    const h = await heldAt(kind, group, 'vm-h', t0, T + 1000);
    const m = await heldAt(kind, group, 'vm-m', t0, T + 2000);
    expect((await entries(holder.store)).map((r) => r.name.split('-').slice(0, 3).join('-'))).toHaveLength(quiet + 2);
    // the holder's maintenance is over: its slot is free
    await holder.read([]);
    // m looks again after its pause (a heartbeat later; every entry is still fresh)
    m.m.now = t0 + 25_000;
    const got = await outcome(m.m.budget.take(m.e, policy));
    // h is held and its maintenance comes first: the free slot is h's, m is held
    expect(got).toBe('HELD');
    // h asks at its read, as the daemon asks at each (its maintenance listed three reads ago and more: only held members stand ahead)
    h.m.now = t0 + 25_000;
    await h.m.read([h.e]);
    expect(await outcome(h.m.budget.take(h.e, policy))).toBe('granted');
  });

  it.each([
    ['(control: fewer than a page)', headSize(1) - 3],
    ['', headSize(1)],
  ])(
    'a page of entries that count for nobody (another shape, or not where their names say) holds every early approval, and is named %s',
    async (_, junk) => {
      const group = `blind-${junk}-${kind}`;
      const holder = await holding(kind, group);
      const t0 = Date.now();
      const T = t0 + 3_600_000;
      const h = await heldAt(kind, group, 'vm-h', t0, T + 1000);
      const m = await heldAt(kind, group, 'vm-m', t0, T + 2000);
      // a page of entries at the head of the queue that no member counts: half of another shape, half
      // in the name of another member than the one they say (the documented defence: "counts for nobody")
      const forged = (i: number) => ({
        ...{ member: 'mallory', vm: 'vm-mallory', eventId: `E${i}`, notBefore: new Date(T).toISOString(), since: null, need: 1 },
        ...{ heartbeatAt: new Date(t0).toISOString(), heartbeatSeconds: 20 },
      });
      for (let i = 0; i < junk; i++) {
        const name = `queue-0000000000000-0000000000000-x${String(i).padStart(2, '0')}`;
        await holder.store.put(name, i % 2 === 0 ? { junk: i } : forged(i), null);
      }
      await holder.read([]);
      // long after (every look at the head prunes what is stale), h and m renew at their heartbeats
      for (const x of [h, m, { m: holder, e: null }]) {
        x.m.now = t0 + 25_000;
        await x.m.budget.heartbeat();
      }
      m.m.now = t0 + 26_000;
      h.m.now = t0 + 26_000;
      const got = { m: await outcome(m.m.budget.take(m.e, policy)), h: await outcome(h.m.budget.take(h.e, policy)) };
      // a record that does not read is never removed by a member (another release may have written it): with a
      // page of them at the head nobody knows who stands ahead, so early approvals wait (fail closed), as the log says
      expect(got).toEqual({ m: 'HELD', h: junk >= headSize(1) ? 'HELD' : 'granted' });
      const left = (await entries(holder.store)).filter((r) => r.name.startsWith('queue-0000000000000-'));
      expect(left).toHaveLength(junk);
      expect(h.m.lines.some((l) => l.code === 'FLEET_RECORD_SKIPPED' && String(l.key).startsWith('queue-0000000000000-'))).toBe(true);
    },
  );

  it('a member restarted while it waits: a free slot is not left idle by its entry from before the restart', async () => {
    const group = `restart-${kind}`;
    const holder = await holding(kind, group);
    const t0 = Date.now();
    const T = t0 + 3_600_000;
    // r is held first (at t0+1s), x next (at t0+2s), both for a maintenance at T
    const r = await heldAt(kind, group, 'vm-r', t0, T);
    const x = await heldAt(kind, group, 'vm-x', t0 + 1000, T);
    // r's bridge restarts (the process before it is gone, its entry left as it was): it asks again and is held anew
    const r2 = await budgetMember(fleetStores(), kind, group, 'vm-r');
    r2.now = t0 + 3000;
    await r2.read([r.e]);
    r2.now = t0 + 4000;
    await r2.read([r.e]);
    expect(await outcome(r2.budget.take(r.e, policy))).toBe('HELD');
    await r2.read([r.e]);
    // the slot is given back; both look again (every entry fresh)
    await holder.read([]);
    x.m.now = t0 + 25_000;
    r2.now = t0 + 25_000;
    const got = { x: await outcome(x.m.budget.take(x.e, policy)), r: await outcome(r2.budget.take(r.e, policy)) };
    // r's record now says held since t0+4s (after x); its old entry says t0+1s (before x): each lets the other go first
    expect(Object.values(got)).toContain('granted');
  });

  it('an entry of another shape at the head of the queue is named in a log line, as the docs say', async () => {
    const group = `named-${kind}`;
    const holder = await holding(kind, group);
    const t0 = Date.now();
    await holder.store.put('queue-0000000000000-0000000000000-junk', { junk: true }, null);
    const m = await heldAt(kind, group, 'vm-m', t0, t0 + 3_600_000);
    await holder.read([]);
    m.m.now = t0 + 25_000;
    await outcome(m.m.budget.take(m.e, policy));
    await m.m.budget.heartbeat();
    const skipped = m.m.lines.filter((l) => l.code === 'FLEET_RECORD_SKIPPED' && String(l.key).startsWith(QUEUE_PREFIX));
    expect(skipped).not.toEqual([]);
  });
});
