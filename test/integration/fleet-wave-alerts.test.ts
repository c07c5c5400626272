/**
 * A wave through whole bridges: twenty in one group of two slots over Azurite (Blob Storage, as
 * the budget's store), each with its own IMDS simulator, every member's Reboot due at once and
 * approved by policy. What is read is what a consumer of the bridges' sinks sees: the
 * fleet.collision CloudEvents in each member's file sink, and what Azure sees: each VM's
 * StartRequests at its simulator.
 */
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { fleetStoresPerFile } from '../../testkit/fleet-stores.ts';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { waitFor } from '../helpers.ts';

const N = 20;
const K = 2;
const STARTED_MS = 1500;
const stores = fleetStoresPerFile();
afterEach(() => stopAll());

it('twenty members due at once, K = 2: the collision is said once, updated at most once a minute, said resolved once, each word under one id on every member; never more than K down', async () => {
  const group = 'wave-alerts';
  const hs: Harness[] = [];
  for (let i = 0; i < N; i++)
    hs.push(
      await startBridge({
        sim: { vmName: `a${String(i).padStart(2, '0')}`, peers: [], tickMs: 10 },
        sinks: (dir) => [{ name: 'audit', type: 'file', path: join(dir, 'events.jsonl') }],
        config: {
          imds: { pollIntervalMs: 500 },
          approval: { rules: [{ match: {}, action: 'approve' }] },
          fleet: { group, maxUnavailable: K, store: stores().config('blob'), retryMs: 500, heartbeatSeconds: 5 },
        },
      }),
    );
  for (const h of hs) h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: STARTED_MS, DurationInSeconds: 5 });
  // every member approved, its maintenance over, and everything it made of the wave delivered
  await waitFor(
    () => hs.every((h) => h.sim.startRequests.length > 0 && h.sim.events.length === 0),
    'every maintenance approved and over',
    240_000,
    250,
  );
  const words = () => hs.flatMap((h) => h.events().filter((e) => e.type === 'azure.scheduledevent.fleet.collision'));
  // said by the speaker the wave was handed to last, at its next heartbeat or read after the rest were served (the notices test waits as long)
  await waitFor(() => words().some((e) => e.data.collision.state === 'resolved'), 'the wave said within the budget', 60_000, 250);
  await waitFor(() => hs.every((h) => [...h.bridge.store.outbox.depth().values()].every((n) => n === 0)), 'every outbox empty');

  // never more than K down: from each StartRequests to its event's end
  const downs = hs.map((h) => ({ from: h.sim.startRequests[0]!.at, to: h.sim.startRequests[0]!.at + STARTED_MS }));
  expect(Math.max(...downs.map((x) => downs.filter((y) => y.from <= x.from && y.to > x.from).length))).toBeLessThanOrEqual(K);

  // one wave; each CloudEvent id one word (one state) on every member, and each member says a word once
  const all = words();
  expect(new Set(all.map((e) => e.data.collision.id)).size).toBe(1);
  const byId = new Map<string, typeof all>();
  for (const e of all) byId.set(e.id, [...(byId.get(e.id) ?? []), e]);
  for (const [id, copies] of byId) {
    expect(new Set(copies.map((e) => e.data.collision.state)).size, id).toBe(1);
    expect(new Set(copies.map((e) => e.data.vm.name)).size, id).toBe(copies.length);
  }
  const states = [...byId.values()].map((copies) => ({
    state: copies[0]!.data.collision.state as string,
    // the speaker's own copy is the first: said when it said the word
    at: Math.min(...copies.map((e) => Date.parse(e.time))),
  }));
  expect(states.filter((s) => s.state === 'foreseen')).toHaveLength(1);
  expect(states.filter((s) => s.state === 'resolved')).toHaveLength(1);
  // updates at most once a minute: each word a minute or more after the one before it (resolved may come at once)
  const spoken = states.filter((s) => s.state !== 'resolved').sort((a, b) => a.at - b.at);
  for (let i = 1; i < spoken.length; i++) expect(spoken[i]!.at - spoken[i - 1]!.at).toBeGreaterThanOrEqual(60_000);
  expect(states.sort((a, b) => a.at - b.at).at(-1)!.state).toBe('resolved');
}, 300_000);
