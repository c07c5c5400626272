/**
 * Who reads the group for the collision forecast, through whole bridges: twenty in one group of two
 * slots over Azurite (Blob Storage), each bridge through its own counting proxy, so what each
 * member asked of the store is known. Every member's Reboot is due at once and approved by policy.
 * Only the member at which the budget's limit is reached and the wave's speaker list the members'
 * records; every other member learns of the wave from its notice, listed with the slots, and
 * repeats each word as its speaker's record says it: every copy of a word says the same.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it, onTestFinished } from 'vitest';
import { DEV_ACCOUNT } from '../../src/simulator/azurite.ts';
import { CountingProxy } from '../../testkit/counting-proxy.ts';
import { fleetStoresPerFile } from '../../testkit/fleet-stores.ts';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { waitFor } from '../helpers.ts';

const N = 20;
const K = 2;
const stores = fleetStoresPerFile();
const proxies: CountingProxy[] = [];
afterEach(async () => {
  await stopAll();
  await Promise.all(proxies.splice(0).map((p) => p.stop()));
});

it('twenty members due at once, K = 2: a few members list the group, every other member learns each word from the notice and repeats it as its speaker said it', async () => {
  const group = 'wave-notices';
  const gates = await mkdtemp(join(tmpdir(), 'se-bridge-notices-'));
  onTestFinished(() => rm(gates, { recursive: true, force: true }));
  const gate = join(gates, 'open');
  const hook = ['/bin/sh', '-c', `for i in $(seq 1 2400); do [ -f '${gate}' ] && exit 0; sleep 0.05; done; exit 1`];
  const hs: Harness[] = [];
  const listed: CountingProxy[] = [];
  for (let i = 0; i < N; i++) {
    const proxy = await new CountingProxy(stores().azurite.url).start();
    proxies.push(proxy);
    listed.push(proxy);
    const store = { type: 'blob', connectionString: stores().azurite.connectionString(`${proxy.url}/${DEV_ACCOUNT}`), container: 'fleet' };
    hs.push(
      await startBridge({
        sim: { vmName: `n${String(i).padStart(2, '0')}`, peers: [], tickMs: 10 },
        sinks: (dir) => [
          { name: 'audit', type: 'file', path: join(dir, 'events.jsonl') },
          { name: 'hook', type: 'exec', command: hook, prepare: true, timeoutMs: 150_000 },
        ],
        config: {
          imds: { pollIntervalMs: 500 },
          approval: { rules: [{ match: {}, action: 'approveAfterHooks' }] },
          fleet: { group, maxUnavailable: K, store, retryMs: 500, heartbeatSeconds: 5 },
        },
      }),
    );
  }
  for (const h of hs) h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 1500, DurationInSeconds: 5 });
  const words = () => hs.flatMap((h) => h.events().filter((e) => e.type === 'azure.scheduledevent.fleet.collision'));
  const foreseen = () => words().filter((e) => e.data.collision.state === 'foreseen');
  // the whole wave waits: every member says the foreseen word, the speaker's and every copy
  await waitFor(() => new Set(foreseen().map((e) => e.data.vm.name)).size === N, 'every member due says the wave foreseen', 90_000, 250);

  // the members that listed the members' records: the one at the budget's limit and the speaker, a few more should the
  // queue move under them on a busy machine; never the group
  const readers = listed.map((p) => p.take().listBytesBy.member ?? 0).filter((bytes) => bytes > 0).length;
  expect(readers).toBeGreaterThanOrEqual(1);
  expect(readers).toBeLessThanOrEqual(N / 4);
  expect(new Set(foreseen().map((e) => e.id)).size).toBe(1);
  expect(foreseen()[0]!.data.collision.due).toHaveLength(N);

  // let the wave go: served two at a time, and said within the budget once
  await writeFile(gate, '');
  await waitFor(
    () => hs.every((h) => h.sim.startRequests.length > 0 && h.sim.events.length === 0),
    'every maintenance approved and over',
    240_000,
    250,
  );
  await waitFor(() => words().some((e) => e.data.collision.state === 'resolved'), 'the wave said within the budget', 60_000, 250);
  await waitFor(() => hs.every((h) => [...h.bridge.store.outbox.depth().values()].every((n) => n === 0)), 'every outbox empty');
  const downs = hs.map((h) => ({ from: h.sim.startRequests[0]!.at, to: h.sim.startRequests[0]!.at + 1500 }));
  expect(Math.max(...downs.map((x) => downs.filter((y) => y.from <= x.from && y.to > x.from).length))).toBeLessThanOrEqual(K);

  const all = words();
  expect(new Set(all.map((e) => e.data.collision.id)).size).toBe(1);
  const byId = new Map<string, typeof all>();
  for (const e of all) byId.set(e.id, [...(byId.get(e.id) ?? []), e]);
  // every copy of a word says what its speaker said: the same members due, the same budget and span
  for (const [id, copies] of byId) {
    expect(new Set(copies.map((e) => JSON.stringify(e.data.collision))).size, id).toBe(1);
    expect(new Set(copies.map((e) => e.data.vm.name)).size, id).toBe(copies.length);
  }
  expect([...byId.values()].filter((copies) => copies[0]!.data.collision.state === 'resolved')).toHaveLength(1);
}, 360_000);
