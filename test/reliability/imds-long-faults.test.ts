/**
 * The slow end of the IMDS fault matrix, in real time (reliability suite only): a 410 that
 * lasts longer than the documented 70 s, and a first call that takes 100 s. No crash, no false
 * transition, the 5 requests/s budget kept, /readyz and the metrics telling the truth, and
 * recovery when IMDS recovers.
 */
import { startBridge } from '../../testkit/harness.ts';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Bridge } from '../../src/daemon/bridge.ts';
import { waitFor } from '../helpers.ts';

async function setup() {
  const h = await startBridge({
    sim: { vmName: 'vm0', tickMs: 20 },
    start: false,
    config: { imds: { pollIntervalMs: 1000 }, observability: { listen: '127.0.0.1:0' } },
    sinks: (dir) => [{ name: 'f', type: 'file', path: join(dir, 'e.jsonl') }],
  });
  return { sim: h.sim, bridge: h.bridge, lines: h.lines, cleanup: h.stop };
}
const ready = async (b: Bridge) => (await fetch(`${b.observabilityUrl}/readyz`)).status;

function maxPerSecond(stamps: number[]): number {
  let best = 0;
  for (let a = 0, b = 0; b < stamps.length; b++) {
    while (stamps[b]! - stamps[a]! >= 1000) a++;
    best = Math.max(best, b - a + 1);
  }
  return best;
}

// the two run side by side, each with its own simulator and bridge
describe.concurrent('IMDS faults that last', () => {
  it('410 for longer than 70 s: logged as such, no false transition, budget kept, then recovery', async () => {
    const { sim, bridge, lines, cleanup } = await setup();
    try {
      const e = sim.addEvent({ noticeMs: 3_600_000 });
      await bridge.start();
      await waitFor(() => bridge.store.journal.all().length === 1, 'scheduled');
      sim.injectFault({ kind: 'status', status: 410, count: 1_000_000 });
      await waitFor(
        () => lines.some((l) => typeof l.msg === 'string' && l.msg.startsWith('IMDS has answered 410 for longer than the documented 70 s')),
        'the 70 s error',
        100_000,
        500,
      );
      expect(await ready(bridge)).toBe(503);
      const metrics = await (await fetch(`${bridge.observabilityUrl}/metrics`)).text();
      expect(metrics).toMatch(/sebridge_polls_total\{result="error",code="IMDS_GONE"\} \d+/);
      expect(maxPerSecond(sim.requests.map((r) => r.at))).toBeLessThanOrEqual(5);
      sim.removeEvent(e.eventId); // happens during the outage...
      sim.clearFaults();
      await waitFor(async () => (await ready(bridge)) === 200, 'recovery', 40_000, 250);
      await waitFor(() => bridge.store.journal.all().length === 2, 'the cancellation, once IMDS answers again', 10_000);
      expect(bridge.store.journal.all().map((j) => j.transition)).toEqual(['scheduled', 'canceled']);
    } finally {
      await cleanup();
    }
  }, 200_000);

  it('a first call that takes 100 s: waited for, then everything flows', async () => {
    const { sim, bridge, cleanup } = await setup();
    try {
      sim.addEvent({ noticeMs: 3_600_000 });
      sim.injectFault({ kind: 'slow', delayMs: 100_000 });
      await bridge.start();
      expect(await ready(bridge)).toBe(503);
      await waitFor(() => bridge.store.journal.all().length === 1, 'the first document, after 100 s', 130_000, 500);
      // the slow answer was spent, and the one read made was waited for to its end, never abandoned and asked again
      expect(sim.faults).toEqual([]);
      expect(sim.requests.filter((r) => r.path === '/metadata/scheduledevents')).toMatchObject([{ status: 200 }]);
      await waitFor(async () => (await ready(bridge)) === 200, 'ready');
    } finally {
      await cleanup();
    }
  }, 200_000);
});
