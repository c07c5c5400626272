/**
 * A VM that does not yet know its own name fails closed. Over the wire: the IMDS simulator plays
 * a scale-set VM named `vmss_10` (the host name of this machine is another one), its compute
 * endpoint fails from the start, and the bridge runs with a probe, a `scope: self` file sink, a
 * file sink for everything, the metrics endpoint and a policy that approves at once. While the
 * name is unknown, every event counts as possibly this VM's: the `self` sink gets them, the probe
 * holds 503, /readyz says not ready and why, and nothing is approved. Once the compute endpoint
 * answers, the VM's own event is approved, the other VM's event releases the probe's hold, and no
 * sink gets a transition twice.
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { freePort, laterReads, waitFor } from '../helpers.ts';

afterEach(stopAll);

async function get(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(url);
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

describe('a VM whose compute metadata fails at start', () => {
  it('treats every event as its own until it knows its name, then routes and approves as the VM it is', async () => {
    expect(hostname().toLowerCase()).not.toBe('vmss_10');
    const [probePort, metricsPort] = [await freePort(), await freePort()];
    const h = await startBridge({
      sim: { vmName: 'vmss_10', peers: ['vmss_11'] },
      start: false,
      config: {
        imds: { pollIntervalMs: 200 },
        observability: { listen: `127.0.0.1:${metricsPort}` },
        approval: { rules: [{ match: {}, action: 'approve' }] },
      },
      sinks: (dir) => [
        { name: 'audit', type: 'file', path: join(dir, 'events.jsonl') },
        { name: 'mine', type: 'file', path: join(dir, 'mine.jsonl'), filter: { scope: 'self' } },
        { name: 'lb', type: 'probe', listen: `127.0.0.1:${probePort}`, drainSeconds: 0 },
      ],
      bridge: { identityRetryMs: 2000 },
    });
    h.sim.injectFault({ kind: 'status', status: 500, target: 'compute', count: 1_000_000 });
    await h.bridge.start();
    const own = h.sim.addEvent({ EventType: 'Reboot', Resources: ['vmss_10'], noticeMs: 600_000 });
    const other = h.sim.addEvent({ EventType: 'Redeploy', Resources: ['vmss_11'], noticeMs: 600_000 });
    // committed, and delivered to the self sink (a sink of its own, delivered apart from the audit file)
    await waitFor(() => h.kinds().length === 2 && h.kinds('mine.jsonl').length === 2, 'both events committed and in the self sink');

    // while the name is unknown: both events reach the self sink, the probe holds, not ready, nothing approved
    expect(h.bridge.identity.nameKnown).toBe(false);
    expect(h.kinds('mine.jsonl').sort()).toEqual([`scheduled:${other.eventId}`, `scheduled:${own.eventId}`].sort());
    const probe = await get(`http://127.0.0.1:${probePort}/probe`);
    expect(probe.status).toBe(503);
    const readyz = await get(`http://127.0.0.1:${metricsPort}/readyz`);
    expect(readyz.status).toBe(503);
    expect(readyz.body.reason).toMatch(/this VM does not know its name yet .*every event is treated as its own/);
    await laterReads(h.sim);
    expect(h.sim.startRequests).toEqual([]);

    // the compute endpoint answers: the VM knows it is vmss_10
    h.sim.clearFaults();
    await waitFor(() => h.bridge.identity.nameKnown, 'the name read from IMDS', 15_000);
    expect(h.bridge.identity.name).toBe('vmss_10');
    await waitFor(() => h.sim.startRequests.length === 1, 'its own event approved');
    expect(h.sim.startRequests[0]!.eventIds).toEqual([own.eventId]);
    await waitFor(async () => (await get(`http://127.0.0.1:${metricsPort}/readyz`)).status === 200, 'ready');
    // the hold stays for its own event only (the other VM's was taken while every event counted)
    await waitFor(async () => (await get(`http://127.0.0.1:${probePort}/probe`)).body.eventId === own.eventId, 'held for its own event');
    await waitFor(() => h.kinds('mine.jsonl').includes(`started:${own.eventId}`), 'the start of its own event');
    h.sim.removeEvent(other.eventId);
    await waitFor(() => h.kinds().includes(`canceled:${other.eventId}`), 'the other event canceled');
    // no transition reached a sink twice
    for (const file of ['events.jsonl', 'mine.jsonl']) {
      const ids = h.events(file).map((e) => e.id);
      expect(new Set(ids).size).toBe(ids.length);
    }
    expect(h.kinds('mine.jsonl')).not.toContain(`canceled:${other.eventId}`);
  });

  /** caughtUp: two more reads, then every sink's outbox empty: whatever this run would route again, it has delivered. */
  const caughtUp = async (h: Harness) => {
    await laterReads(h.sim);
    await waitFor(() => [...h.bridge.store.outbox.depth().values()].every((n) => n === 0), 'every sink caught up');
  };

  it('routes the listed events again when the name differs from the last run’s: a sink they now match gets each transition once', async () => {
    const sinks = (dir: string) => [
      { name: 'audit', type: 'file', path: join(dir, 'events.jsonl') },
      { name: 'mine', type: 'file', path: join(dir, 'mine.jsonl'), filter: { scope: 'self' } },
    ];
    // the last run knew itself as vm-a (configured), and the event names vm-b
    const first = await startBridge({
      sim: { vmName: 'vm-b', peers: [] },
      config: { imds: { pollIntervalMs: 200 }, identity: { vmName: 'vm-a' } },
      sinks,
    });
    const e = first.sim.addEvent({ EventType: 'Reboot', Resources: ['vm-b'], noticeMs: 600_000 });
    await waitFor(() => first.kinds().includes(`scheduled:${e.eventId}`), 'the event committed');
    expect(first.kinds('mine.jsonl')).toEqual([]);
    await first.bridge.stop();
    // this run knows it is vm-b: the listed event's transition goes to the self sink, once
    const again = await startBridge({ sim: first.sim, dir: first.dir, config: { imds: { pollIntervalMs: 200 } }, sinks });
    await waitFor(() => again.kinds('mine.jsonl').includes(`scheduled:${e.eventId}`), 'the transition routed again');
    expect(again.bridge.identity.name).toBe('vm-b');
    await caughtUp(again);
    expect(again.kinds('mine.jsonl')).toEqual([`scheduled:${e.eventId}`]);
    expect(again.kinds().filter((k) => k === `scheduled:${e.eventId}`)).toHaveLength(1);
    // and a restart with the same name routes nothing again
    await again.bridge.stop();
    const third = await startBridge({ sim: first.sim, dir: first.dir, config: { imds: { pollIntervalMs: 200 } }, sinks });
    await waitFor(() => third.bridge.identity.nameKnown, 'the name');
    await caughtUp(third);
    expect(third.kinds('mine.jsonl')).toEqual([`scheduled:${e.eventId}`]);
  });
});
