/**
 * The queue's entries (src/fleet/budget/queue-entries.ts) over the fleet budget's two real stores:
 * Azure Blob Storage served by Azurite through the project's Blob REST client, behind a proxy that
 * counts each request, and Leases served by the project's Kubernetes API stand-in (no API server
 * can run here; written from the API reference) through the project's Kubernetes client. A member
 * learns its place from one page at the head of the queue, never from every member's record.
 */
import { describe, expect, it } from 'vitest';
import { FleetConfig } from '../../src/fleet/budget/config.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import type { FleetStore, Versioned } from '../../src/fleet/budget/stores/port.ts';
import { ASKING_PREFIX, QUEUE_PREFIX, memberKey } from '../../src/fleet/budget/records.ts';
import { entryName, headSize } from '../../src/fleet/budget/queue-entries.ts';
import { DEV_ACCOUNT, DEV_KEY } from '../../src/simulator/azurite.ts';
import { CountingProxy } from '../../testkit/counting-proxy.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { budgetMember } from '../../testkit/fleet-members.ts';
import { fleetStoresPerFile, memberVm, outcome, scheduledFor, STORE_KINDS } from '../../testkit/fleet-stores.ts';
import { waitFor } from '../helpers.ts';

const fleetStores = fleetStoresPerFile();
const policy = { by: 'policy', via: 'policy' } as const;
const api = { by: 'test', via: 'api' } as const;

/** entries: the group's queue entries, held and asking, as the store lists them (name order). */
const entries = async (store: FleetStore): Promise<Versioned[]> =>
  [...(await store.list(QUEUE_PREFIX)), ...(await store.list(ASKING_PREFIX))].sort((a, b) => a.name.localeCompare(b.name));

/** heads: a store whose head() calls are counted, with how many records each answered. */
function heads(store: FleetStore, seen: number[]): FleetStore {
  return {
    ...{ where: store.where, get: (...a) => store.get(...a), put: (...a) => store.put(...a), remove: (...a) => store.remove(...a) },
    ...{ list: (...a) => store.list(...a), close: () => store.close() },
    head: async (prefix, limit, signal) => {
      const got = await store.head(prefix, limit, signal);
      if (prefix === QUEUE_PREFIX) seen.push(got.length);
      return got;
    },
  };
}

describe.each(STORE_KINDS)('the queue entries over the %s store', (kind) => {
  it('head lists the first records of a prefix in the order of their names, in one request', async () => {
    const proxy = await new CountingProxy(fleetStores().azurite.url).start();
    try {
      const group = `head-${kind}`;
      const blob = {
        type: 'blob',
        connectionString: fleetStores().azurite.connectionString(`${proxy.url}/${DEV_ACCOUNT}`),
        container: 'heads',
      };
      const config = FleetConfig.parse({ group, maxUnavailable: 1, store: kind === 'blob' ? blob : fleetStores().config(kind) });
      const store = await openFleetStore(config.store, group);
      // written out of order, beside records of the other kinds
      for (const i of [7, 2, 9, 0, 5, 1, 8, 3, 6, 4]) await store.put(`queue-${String(i).padStart(13, '0')}-m${i}`, { i }, null);
      await store.put('member-a', { member: 'a' }, null);
      await store.put('slot-0', { member: null }, null);
      proxy.take();
      const before = fleetStores().kube.requests.length;
      const head = await store.head(QUEUE_PREFIX, 4);
      expect(head.map((r) => r.value)).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }, { i: 3 }]);
      if (kind === 'blob') {
        const { counts } = proxy.take();
        expect(counts).toEqual({ list: 1 });
      } else {
        const asked = fleetStores()
          .kube.requests.slice(before)
          .map((r) => decodeURIComponent(r.path));
        expect(asked).toEqual([
          expect.stringMatching(/kind!=slot,se-bridge\.io\/kind!=member,se-bridge\.io\/kind!=asking,se-bridge\.io\/kind!=record&limit=4$/),
        ]);
      }
      // more than there are: all of them, and nothing of another prefix
      expect((await store.head(QUEUE_PREFIX, 50)).map((r) => r.name)).toHaveLength(10);
      expect(await store.head('queue-9', 5)).toEqual([]);
    } finally {
      await proxy.stop();
    }
  });

  it('keeps one entry per waiting member: written when its maintenance appears, named anew once held, removed once granted', async () => {
    const group = `life-${kind}`;
    const [a, b] = await Promise.all([budgetMember(fleetStores(), kind, group, 'vm-a'), budgetMember(fleetStores(), kind, group, 'vm-b')]);
    const eb = scheduledFor('vm-b');
    await b.read([eb]);
    expect(await outcome(b.budget.take(eb, api))).toBe('granted');
    // b's entry goes once its approval is granted, at its next read
    expect((await entries(b.store)).map((r) => r.name)).toEqual([expect.stringMatching(/-vm-b-/)]);
    await b.read([eb]);
    expect(await entries(b.store)).toEqual([]);
    const ea = scheduledFor('vm-a');
    await a.read([ea]);
    // not held yet: it may ask now, and stands after every held member of its NotBefore
    const key = memberKey(memberVm('vm-a'));
    const [first] = await entries(a.store);
    expect(first!.name).toBe(`asking-${String(Date.parse(ea.notBefore!)).padStart(13, '0')}-${key}`);
    expect(first!.value).toMatchObject({ member: key, vm: 'vm-a', eventId: ea.eventId, since: null, need: 1 });
    expect(await outcome(a.budget.take(ea, policy))).toBe('HELD');
    await a.read([ea]);
    const held = await entries(a.store);
    expect(held).toHaveLength(1);
    const since = (held[0]!.value as { since: string }).since;
    expect(held[0]!.name).toBe(
      `queue-${String(Date.parse(ea.notBefore!)).padStart(13, '0')}-${String(Date.parse(since)).padStart(13, '0')}-${key}`,
    );
    // b's maintenance is over: a takes the slot (on Leases, once its watch of the slots wakes it), and its entry is removed at its next read
    const woken = a.wakes;
    await b.read([]);
    if (kind === 'kubernetes') await waitFor(() => a.wakes > woken, "a's watch of the slots", 10_000, 10);
    expect(await outcome(a.budget.take(ea, policy))).toBe('granted');
    await a.read([ea]);
    expect(await entries(a.store)).toEqual([]);
  });

  it('a member far back in the queue reads the head of it, one page, and learns it stands at least a page back', async () => {
    const group = `far-${kind}`;
    const seen: number[] = [];
    const holder = await budgetMember(fleetStores(), kind, group, 'vm-holder');
    const eh = scheduledFor('vm-holder');
    await holder.read([eh]);
    expect(await outcome(holder.budget.take(eh, api))).toBe('granted');
    await holder.read([eh]);
    const t0 = Date.now();
    const n = 14;
    const waiting = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        budgetMember(fleetStores(), kind, group, `vm-w${String(i).padStart(2, '0')}`, {}, (s) => (i === n - 1 ? heads(s, seen) : s)),
      ),
    );
    // NotBefore in the order of the members: the last member's maintenance comes last
    const events = waiting.map((m, i) => scheduledFor(m.view.vm.name, { notBefore: new Date(t0 + 3_600_000 + i * 1000).toISOString() }));
    for (const [i, m] of waiting.entries()) {
      m.now = t0;
      await m.read([events[i]!]);
    }
    for (const [i, m] of waiting.entries()) {
      m.now = t0 + 1000;
      await m.read([events[i]!]);
      expect(await outcome(m.budget.take(events[i]!, policy))).toBe('HELD');
      await m.read([events[i]!]);
    }
    expect(await entries(holder.store)).toHaveLength(n);
    const last = waiting.at(-1)!;
    // its place was read from the head of the queue: one page of headSize(1) entries, never the whole queue
    expect(seen.length).toBeGreaterThan(0);
    expect(Math.max(...seen)).toBe(headSize(1));
    expect(last.budget.state().place).toBe(headSize(1));
    // the first of them stands at the head: nobody ahead
    const firstPlace = waiting[0]!.budget.state().place;
    expect(firstPlace === null || firstPlace === 0).toBe(true);
  });

  it("an entry whose name is not its member's, or stale, counts for nobody; the head of the queue removes one long stale", async () => {
    const group = `forged-${kind}`;
    const [a, b] = await Promise.all([budgetMember(fleetStores(), kind, group, 'vm-a'), budgetMember(fleetStores(), kind, group, 'vm-b')]);
    const eb = scheduledFor('vm-b');
    await b.read([eb]);
    expect(await outcome(b.budget.take(eb, api))).toBe('granted');
    await b.read([eb]);
    const t0 = Date.now();
    a.now = t0;
    const ea = scheduledFor('vm-a', { notBefore: new Date(t0 + 3_600_000).toISOString() });
    await a.read([ea]);
    const early = new Date(t0 - 60_000).toISOString();
    const entry = (member: string, at: number) => ({
      ...{ member, vm: member, eventId: `E-${member}`, notBefore: new Date(t0).toISOString(), since: early, need: 1 },
      ...{ heartbeatAt: new Date(at).toISOString(), heartbeatSeconds: 20 },
    });
    // earlier than a in every way: one whose name is not where it stands, one stale (silent for 3 of its heartbeats)
    const forged = entry('mallory', t0);
    const victim = entryName({ ...forged, member: 'victim' });
    const dead = entry('dead', t0 - 61_000);
    await a.store.put(victim, forged, null);
    await a.store.put(entryName(dead), dead, null);
    expect(await outcome(a.budget.take(ea, policy))).toBe('HELD');
    // nobody real stands ahead of a
    expect(a.budget.state().place).toBe(0);
    // a, with nobody ahead, removed the stale entry; the forged one stays, counted for nobody
    const names = (await entries(a.store)).map((r) => r.name);
    expect(names).not.toContain(entryName(dead));
    expect(names).toContain(victim);
  });
});

describe('the head of a queue over Blob Storage, from a service that answers a page short', () => {
  it('asks for the rest from the marker until it has read as many as it asked for (the service may end a page at a partition)', async () => {
    // a stand-in for List Blobs (written from the REST reference): one blob a page, whatever maxresults says
    const peer = new HttpPeer();
    await peer.listen();
    try {
      const names = ['queue-1', 'queue-2', 'queue-3', 'queue-4'];
      peer.answer = (req) => {
        const q = new URL(req.url, peer.url).searchParams;
        if (q.get('comp') !== 'list') return { status: 201 };
        // each record carried in the listing's metadata (`record`), as the store writes it
        const at = Number(q.get('marker') ?? '0');
        const next = at + 1 < names.length ? `<NextMarker>${at + 1}</NextMarker>` : '<NextMarker />';
        const blob = `<Blob><Name>g/${names[at]}</Name><Properties><Etag>"e${at}"</Etag><Content-Length>2</Content-Length></Properties><Metadata><record>${Buffer.from('{}').toString('base64')}</record></Metadata></Blob>`;
        return {
          status: 200,
          headers: { 'content-type': 'application/xml' },
          body: `<EnumerationResults><Blobs>${blob}</Blobs>${next}</EnumerationResults>`,
        };
      };
      const connectionString = `DefaultEndpointsProtocol=http;AccountName=${DEV_ACCOUNT};AccountKey=${DEV_KEY};BlobEndpoint=${peer.url}/${DEV_ACCOUNT};`;
      const config = FleetConfig.parse({ group: 'g', maxUnavailable: 1, store: { type: 'blob', connectionString, container: 'pages' } });
      const store = await openFleetStore(config.store, 'g');
      const head = await store.head(QUEUE_PREFIX, 3);
      expect(head.map((r) => r.name)).toEqual(['queue-1', 'queue-2', 'queue-3']);
      const lists = peer.requests.map((r) => new URL(r.url, peer.url).searchParams).filter((q) => q.get('comp') === 'list');
      expect(lists.map((q) => [q.get('maxresults'), q.get('marker')])).toEqual([
        ['3', null],
        ['2', '1'],
        ['1', '2'],
      ]);
    } finally {
      await peer.close();
    }
  });
});
