/**
 * Delivery through the whole bridge (simulator -> diff -> store -> dispatcher -> webhook sink)
 * against real HTTP peers: outages, order, isolation.
 */
import { startBridge, type Harness } from '../../testkit/harness.ts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Bridge } from '../../src/daemon/bridge.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { waitFor } from '../helpers.ts';

let sim: ImdsSimulator;
const peers: HttpPeer[] = [];
let bridge: Bridge | null = null;
let h: Harness | null = null;

beforeEach(async () => {
  sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
  await sim.listen(0);
});
afterEach(async () => {
  await h?.stop();
  h = null;
  bridge = null;
  for (const p of peers.splice(0)) await p.close();
  await sim.close();
});

async function peer(): Promise<HttpPeer> {
  const p = new HttpPeer();
  await p.listen();
  peers.push(p);
  return p;
}
async function run(sinks: Record<string, unknown>[]) {
  h = await startBridge({ sim, sinks });
  bridge = h.bridge;
  return h.lines;
}
const fast = { initialBackoffMs: 20, maxBackoffMs: 100, timeoutMs: 2000 };
const types = (p: HttpPeer) =>
  p.requests.filter((r) => r.headers['ce-type']).map((r) => `${String(r.headers['ce-type']).slice(21)}:${String(r.headers['ce-subject'])}`);

describe('delivery through the bridge', () => {
  it('rides out a peer answering 503 for a while: everything arrives, in order per event', async () => {
    const p = await peer();
    let down = true;
    p.answer = () => (down ? { status: 503, headers: { 'retry-after': '0' } } : { status: 204 });
    const lines = await run([{ name: 'ops', type: 'webhook', url: p.url, delivery: fast }]);
    // the event runs its course one step at a time, each seen by the bridge before the next (however loaded the machine)
    const journaled = (id: string) => bridge!.store.journal.all().some((j) => j.id === id);
    const e = sim.addEvent({ noticeMs: 600_000, startedMs: 600_000 });
    await waitFor(() => journaled(`${e.eventId}/scheduled`), 'the scheduled event seen');
    sim.startEvent(e.eventId);
    await waitFor(() => journaled(`${e.eventId}/started`), 'the start seen');
    sim.removeEvent(e.eventId);
    await waitFor(() => journaled(`${e.eventId}/completed`), 'the completion seen');
    await waitFor(() => p.requests.length >= 6, 'several failed attempts');
    down = false;
    // the outbox can be empty for a moment before the bridge has read that the event completed
    await waitFor(() => bridge!.store.outbox.depth().size === 0 && types(p).includes(`completed:${e.eventId}`), 'the outbox to drain');
    const ok = p.requests.slice(-3).map((r) => String(r.headers['ce-type']).slice(21));
    expect(ok).toEqual(['scheduled', 'started', 'completed']);
    // the first delivered request of each transition comes after every attempt of the one before it
    const firstOk = (t: string) => p.requests.findLastIndex((r) => r.headers['ce-type'] === `azure.scheduledevent.${t}`);
    expect(firstOk('scheduled')).toBeLessThan(p.requests.findIndex((r) => r.headers['ce-type'] === 'azure.scheduledevent.started'));
    expect(new Set(types(p))).toEqual(new Set([`scheduled:${e.eventId}`, `started:${e.eventId}`, `completed:${e.eventId}`]));
    expect(bridge!.store.outbox.deadLetters()).toEqual([]);
    expect(
      lines.some((l) => l.code === 'DELIVERY_RETRY' && l.sink === 'ops' && typeof l.err === 'string' && l.err.startsWith('HTTP 503')),
    ).toBe(true);
  });

  it('isolates a peer that never answers from a healthy one', async () => {
    const stuck = await peer();
    stuck.answer = () => ({ hang: true });
    const healthy = await peer();
    await run([
      { name: 'stuck', type: 'webhook', url: stuck.url, delivery: { timeoutMs: 600_000 } },
      { name: 'healthy', type: 'webhook', url: healthy.url },
    ]);
    const a = sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => healthy.requests.length === 1, 'the healthy peer');
    const b = sim.addEvent({ noticeMs: 600_000 });
    sim.startEvent(a.eventId);
    await waitFor(() => healthy.requests.length === 3, 'the healthy peer, again');
    expect(types(healthy)[0]).toBe(`scheduled:${a.eventId}`);
    expect(new Set(types(healthy).slice(1))).toEqual(new Set([`scheduled:${b.eventId}`, `started:${a.eventId}`]));
    // the stuck peer got the first event of each EventId and is still holding them
    expect(stuck.requests.length).toBeLessThanOrEqual(2);
    expect(bridge!.store.outbox.depth().get('stuck')).toBe(3);
  });

  it('dead-letters after one attempt at a peer that answers 400, and delivers after a replay', async () => {
    const p = await peer();
    let broken = true;
    p.answer = () => (broken ? { status: 400, body: '{"error":"schema"}' } : { status: 200 });
    await run([{ name: 'ops', type: 'webhook', url: p.url, delivery: fast }]);
    const e = sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => bridge!.store.outbox.deadLetters().length === 1, 'a dead letter');
    expect(p.requests).toHaveLength(1);
    expect(bridge!.store.outbox.deadLetters()[0]).toMatchObject({
      sink: 'ops',
      eventId: e.eventId,
      attempts: 1,
      lastError: 'rejected: HTTP 400: {"error":"schema"}',
    });
    broken = false;
    expect(bridge!.store.outbox.replayDeadLetters('ops')).toBe(1);
    // a replay from the CLI happens in another process: the worker finds the rows on its next scan
    await waitFor(() => p.requests.length === 2, 'the replayed delivery', 10_000);
    expect(p.requests[1]!.headers['ce-id']).toBe(p.requests[0]!.headers['ce-id']);
  });
});
