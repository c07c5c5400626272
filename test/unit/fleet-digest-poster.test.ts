/**
 * The digest's poster against what a member, a replica's clock and the store can do: a record a
 * member wrote over the relay's (junk, or a sealed one replayed), replicas whose clocks differ
 * across a period's start, and a store that fails between the claim and the record of what was
 * said. A chat that counts its posts and updates; the store's port in memory (testkit/memory-store.ts:
 * the exact interleaving of replicas and members, and a write failing at a chosen moment, that no
 * real store can be made to order; test/integration/fleet-digest.test.ts runs the poster over
 * Azurite, the real sinks and a Slack stand-in); the poster's own clocks.
 */
import { describe, expect, it } from 'vitest';
import type { FleetStore } from '../../src/fleet/budget/stores/port.ts';
import { RecordSeal } from '../../src/fleet/view/seal.ts';
import type { FleetReader } from '../../src/fleet/view/snapshot.ts';
import { digestExit } from '../../src/commands/fleet-digest.ts';
import { EXIT } from '../../src/commands/common.ts';
import { DIGEST_RECORD, DigestPoster, type ChatSink } from '../../src/relay/digest.ts';
import { delivered } from '../../src/sinks/contract.ts';
import { snapshotOf } from '../../testkit/console.ts';
import { MemoryStore } from '../../testkit/memory-store.ts';
import { silentLogger, waitFor } from '../helpers.ts';

/** The store in memory (testkit/memory-store.ts); `write`: a member's, whatever it likes over whatever is there. */
function memoryStore() {
  const m = new MemoryStore();
  return {
    store: m.store,
    o: m,
    write: (value: unknown) => void m.write(DIGEST_RECORD, value),
    value: () => m.records.get(DIGEST_RECORD)?.value,
  };
}

/** A Slack-like chat: each post a new message, an update in place. */
function chat() {
  const c = { posts: 0, updates: 0 };
  const sink: ChatSink = {
    name: 'ops-slack',
    timeoutMs: 1000,
    sink: {
      send: () => Promise.resolve([]),
      digest: (_d: unknown, { ref }: { ref: string | null }) => {
        if (ref !== null) return (c.updates++, Promise.resolve({ outcome: delivered, ref }));
        c.posts++;
        return Promise.resolve({ outcome: delivered, ref: JSON.stringify({ channel: 'C1', ts: `1.${c.posts}` }) });
      },
      close: () => Promise.resolve(),
    },
  };
  return { c, sink };
}

const KEY = Buffer.alloc(32, 7);

function poster(store: FleetStore, sink: ChatSink, clock: { now: number }, by: string, members = { n: 0 }) {
  const reader = {
    read: () => {
      const s = snapshotOf({ web: [] }, clock.now);
      const pause = { by: 'person', who: 'ops', why: `change ${members.n}`, since: new Date(0).toISOString() };
      return Promise.resolve({ ...s, groups: s.groups.map((g) => ({ ...g, pause })) });
    },
  } as unknown as FleetReader;
  return new DigestPoster({
    ...{ config: { sinks: ['ops-slack'], hours: 8, everyMinutes: 60, checkSeconds: 60 }, reader, store },
    ...{ seal: new RecordSeal(KEY), sinks: [sink], rules: {}, logger: silentLogger, by, now: () => clock.now },
  });
}

describe('the digest poster, attacked', () => {
  it('replicas whose clocks differ by seconds across a period start post its message once', async () => {
    const { store } = memoryStore();
    const { c, sink } = chat();
    const start = Date.parse('2026-11-30T11:00:00Z');
    const ahead = { now: start + 2_000 }; // this replica's clock is 5 s ahead of the other's
    const behind = { now: start - 3_000 };
    const a = poster(store, sink, ahead, 'a');
    const b = poster(store, sink, behind, 'b');
    await a.look('period'); // 11:00:02 on a's clock: the 11:00 period's message
    await b.look('period'); // 10:59:57 on b's: the 10:00 period, whose message was posted an hour ago
    behind.now += 10_000;
    ahead.now += 10_000;
    await b.look('period');
    await a.look('period');
    expect(c.posts).toBe(1);
  });

  it("a member's junk written over the record does not make the relay post a new message at each look", async () => {
    const { store, write } = memoryStore();
    const { c, sink } = chat();
    const clock = { now: Date.parse('2026-11-30T10:05:00Z') };
    const members = { n: 0 };
    const a = poster(store, sink, clock, 'a', members);
    expect((await a.look('period')).did).toBe('posted');
    for (let i = 0; i < 5; i++) {
      write({ junk: i });
      clock.now += 60_000;
      members.n++; // the fleet changes too: the period's message is updated in place
      await a.look('period');
    }
    expect(c.posts).toBe(1);
    expect(c.updates).toBe(5);
  });

  it("a sealed record of the relay's, replayed by a member, does not make the relay post again", async () => {
    const { store, write, value } = memoryStore();
    const { c, sink } = chat();
    const clock = { now: Date.parse('2026-11-30T09:05:00Z') };
    const a = poster(store, sink, clock, 'a');
    await a.look('period'); // the 09:00 period's message
    const old = value();
    clock.now = Date.parse('2026-11-30T10:05:00Z');
    await a.look('period'); // the 10:00 period's
    for (let i = 0; i < 5; i++) {
      write(old);
      clock.now += 60_000;
      await a.look('period');
    }
    expect(c.posts).toBe(2);
  });

  it('a store that fails between the claim and its record of what was said: no other replica posts the period again', async () => {
    const { store, o } = memoryStore();
    const { c, sink } = chat();
    const clock = { now: Date.parse('2026-11-30T10:05:00Z') };
    const a = poster(store, sink, clock, 'a');
    const b = poster(store, sink, clock, 'b');
    // the claim is written; the write after the post fails once (a 503), the store answers again at once
    const put = store.put.bind(store);
    let puts = 0;
    store.put = (...args) => (++puts === 2 ? (o.failPuts = 1) : 0, put(...args));
    await a.look('period').catch(() => undefined);
    clock.now += 60_000; // past the claim's busyUntil
    await b.look('period');
    expect(c.posts).toBe(1);
  });

  it('se-bridge fleet digest fails, not succeeds, when another writer came first and it posted nothing', async () => {
    const { store } = memoryStore();
    const { c, sink } = chat();
    const clock = { now: Date.parse('2026-11-30T10:05:00Z') };
    // a relay's write lands between the command's read of the record and its own write
    const get = store.get.bind(store);
    store.get = async (...args) => {
      const r = await get(...args);
      await store.put(DIGEST_RECORD, { by: 'a relay' }, r?.version ?? null);
      return r;
    };
    const look = await poster(store, sink, clock, 'cli').look('now');
    expect(look.did).toBe('another');
    expect(c.posts).toBe(0);
    expect(digestExit(look)).toBe(EXIT.failure);
  });

  it("a replica whose clock is ahead of the poster's by more than its claim lasts does not post while the other is posting", async () => {
    const { store } = memoryStore();
    const { c, sink } = chat();
    let release!: () => void;
    const slow: ChatSink = {
      ...sink,
      sink: {
        ...sink.sink,
        digest: async (d, o) => (await new Promise<void>((r) => (release = r)), sink.sink.digest!(d, o)),
      },
    };
    const t = Date.parse('2026-11-30T10:05:00Z');
    const a = poster(store, slow, { now: t }, 'a');
    const b = poster(store, sink, { now: t + 60_000 }, 'b'); // a minute ahead: past a's claim (6 s) at once
    const posting = a.look('period');
    await waitFor(() => release !== undefined, "a's post under way");
    expect((await b.look('period')).did).toBe('busy');
    release();
    await posting;
    expect(c.posts).toBe(1);
  });
});
