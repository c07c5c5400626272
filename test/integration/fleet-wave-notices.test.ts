/**
 * Who reads the group for the collision forecast, through whole bridges: twenty in one group of two
 * slots over Azurite (Blob Storage), each bridge through its own counting proxy, so what each
 * member asked of the store is known. Every member's Reboot is due at once and approved by policy.
 * Only the member at which the budget's limit is reached and the wave's speaker list the members'
 * records; every other member learns of the wave from its notice, listed with the slots, and
 * repeats each word as its speaker's record says it: every copy of a word says the same.
 */
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
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

it('twenty members due at once, K = 2: a few members list the group, the others learn each word from the notice and repeat it as its speaker said it', async () => {
  const group = 'wave-notices';
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
        sinks: (dir) => [{ name: 'audit', type: 'file', path: join(dir, 'events.jsonl') }],
        config: {
          imds: { pollIntervalMs: 500 },
          approval: { rules: [{ match: {}, action: 'approve' }] },
          fleet: { group, maxUnavailable: K, store, retryMs: 500, heartbeatSeconds: 5 },
        },
      }),
    );
  }
  for (const h of hs) h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 3000, DurationInSeconds: 5 });
  await waitFor(
    () => hs.every((h) => h.sim.startRequests.length > 0 && h.sim.events.length === 0),
    'every maintenance approved and over',
    240_000,
    250,
  );
  const words = () => hs.flatMap((h) => h.events().filter((e) => e.type === 'azure.scheduledevent.fleet.collision'));
  await waitFor(() => words().some((e) => e.data.collision.state === 'resolved'), 'the wave said within the budget', 30_000, 250);
  await waitFor(() => hs.every((h) => [...h.bridge.store.outbox.depth().values()].every((n) => n === 0)), 'every outbox empty');

  // the members that listed the members' records: the one at the budget's limit and the speaker, and a few more as the
  // queue moves under them on a busy machine (the one at the limit changes, a notice goes silent a moment); never the group
  const readers = listed.map((p) => p.take().listBytesBy.member ?? 0).filter((bytes) => bytes > 0).length;
  expect(readers).toBeGreaterThanOrEqual(1);
  expect(readers).toBeLessThanOrEqual(N / 2);

  const all = words();
  expect(new Set(all.map((e) => e.data.collision.id)).size).toBe(1);
  const byId = new Map<string, typeof all>();
  for (const e of all) byId.set(e.id, [...(byId.get(e.id) ?? []), e]);
  // every copy of a word says what its speaker said: the same members due, the same budget and span
  for (const [id, copies] of byId) {
    const said = copies.map((e) => JSON.stringify(e.data.collision));
    expect(new Set(said).size, id).toBe(1);
    expect(new Set(copies.map((e) => e.data.vm.name)).size, id).toBe(copies.length);
  }
  // the foreseen word reaches the members still waiting: most of the group, though only a few read it
  const foreseen = [...byId.values()].find((copies) => copies[0]!.data.collision.state === 'foreseen')!;
  expect(foreseen.length).toBeGreaterThanOrEqual(N / 2);
  expect(foreseen[0]!.data.collision.due.length).toBeGreaterThan(K);
}, 300_000);
