/**
 * A maintenance that happened between two reads is reported completed, never canceled: the bridge
 * (in process, real SQLite, file sink) against the IMDS simulator over HTTP. The simulator drops an
 * event with no Started window (startedMs 0) in the very step that starts it, so no read can see
 * it Started, whatever the timing. The system's boot time is given to the bridge, as the daemon
 * takes it from the system's uptime: a test cannot reboot the machine.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { freePort, waitFor } from '../helpers.ts';
import { toChatMessage } from '../../src/present/chat-model.ts';
import type { BridgeEvent } from '../../src/pipeline/cloudevent.ts';

afterEach(stopAll);

const ends = (h: Harness, eventId: string) => h.events().filter((e) => e.subject === eventId && /\.(completed|canceled)$/.test(e.type));

describe('an event gone without a read showing it Started', () => {
  it('after IMDS accepted this bridge\'s approval: completed, with "Started not observed" and why', async () => {
    const h = await startBridge({ config: { approval: { rules: [{ match: { eventType: 'Freeze' }, action: 'approve' }] } } });
    const e = h.sim.addEvent({ EventType: 'Freeze', DurationInSeconds: 5, noticeMs: 600_000, startedMs: 0 });
    await waitFor(() => ends(h, e.eventId).length > 0, 'the end of the Freeze');
    expect(h.sim.startRequests.flatMap((r) => r.eventIds)).toEqual([e.eventId]);
    expect(h.kinds()).toEqual([`scheduled:${e.eventId}`, `approved:${e.eventId}`, `completed:${e.eventId}`]);
    expect(ends(h, e.eventId)[0]!.data).toMatchObject({ startedObserved: false, completedBecause: 'approved', eventStatus: 'Scheduled' });
  });

  it('once its NotBefore passed (a Started window shorter than a poll): completed', async () => {
    const h = await startBridge();
    const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 400, startedMs: 0 });
    await waitFor(() => ends(h, e.eventId).length > 0, 'the end of the Reboot');
    expect(h.kinds()).toEqual([`scheduled:${e.eventId}`, `completed:${e.eventId}`]);
    expect(ends(h, e.eventId)[0]!.data).toMatchObject({ startedObserved: false, completedBecause: 'notBefore' });
    expect(h.sim.startRequests).toEqual([]);
  });

  it('seen Started: completed with startedObserved true and no evidence', async () => {
    const h = await startBridge();
    const e = h.sim.addEvent({ EventType: 'Reboot', EventStatus: 'Started', startedMs: 600_000 });
    await waitFor(() => h.kinds().includes(`started:${e.eventId}`), 'the start');
    h.sim.removeEvent(e.eventId);
    await waitFor(() => ends(h, e.eventId).length > 0, 'the end');
    const data = ends(h, e.eventId)[0]!.data;
    expect(data.startedObserved).toBe(true);
    expect(data).not.toHaveProperty('completedBecause');
  });

  it('before NotBefore, unapproved, no boot since: still canceled', async () => {
    const h = await startBridge();
    const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
    await waitFor(() => h.kinds().includes(`scheduled:${e.eventId}`), 'the event');
    h.sim.removeEvent(e.eventId);
    await waitFor(() => ends(h, e.eventId).length > 0, 'the end');
    expect(h.kinds()).toEqual([`scheduled:${e.eventId}`, `canceled:${e.eventId}`]);
    expect(ends(h, e.eventId)[0]!.data).not.toHaveProperty('startedObserved');
  });
});

describe('a restart: the event went while the bridge was down', () => {
  const sims: ImdsSimulator[] = [];
  afterEach(async () => {
    for (const s of sims.splice(0)) await s.close();
  });

  /** Plays: the bridge sees the event Scheduled, stops; another VM's approval starts it and it ends; the bridge starts again. */
  async function restartAfterItEnded(
    bootedAt: (stoppedAt: number) => number,
  ): Promise<{ id: string; kinds: string[]; end: Record<string, unknown> }> {
    const sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
    sims.push(sim);
    await sim.listen(0);
    const dir = mkdtempSync(join(tmpdir(), 'se-bridge-test-'));
    try {
      const first = await startBridge({ sim, dir });
      const e = sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 0 });
      await waitFor(() => first.kinds().includes(`scheduled:${e.eventId}`), 'the event');
      await first.stop();
      const stoppedAt = Date.now();
      sim.startEvent(e.eventId);
      expect(sim.events).toEqual([]);
      const second = await startBridge({ sim, dir, bridge: { bootedAt: bootedAt(stoppedAt) } });
      await waitFor(() => ends(second, e.eventId).length > 0, 'the end');
      await second.stop();
      return { id: e.eventId, kinds: second.kinds(), end: ends(second, e.eventId)[0]!.data };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('the system booted after the last read that listed it: completed (the reboot was the maintenance)', async () => {
    const { id, kinds, end } = await restartAfterItEnded((stoppedAt) => stoppedAt + 1);
    expect(kinds).toEqual([`scheduled:${id}`, `completed:${id}`]);
    expect(end).toMatchObject({ startedObserved: false, completedBecause: 'boot' });
  });

  it('no boot since (only the bridge restarted): canceled', async () => {
    const { id, kinds, end } = await restartAfterItEnded((stoppedAt) => stoppedAt - 86_400_000);
    expect(kinds).toEqual([`scheduled:${id}`, `canceled:${id}`]);
    expect(end).not.toHaveProperty('startedObserved');
  });
});

describe('an Advisory (SpotRebalanceRecommendation), and a status this version does not know', () => {
  it('is delivered, never approved, never prepared for; its end is no canceled maintenance in chat', async () => {
    const port = await freePort();
    const h = await startBridge({
      // a policy that approves everything, and two preparations that would act on any maintenance
      config: { approval: { rules: [{ match: {}, action: 'approve' }] } },
      sinks: (dir) => [
        { name: 'audit', type: 'file', path: join(dir, 'events.jsonl') },
        { name: 'lb', type: 'probe', listen: `127.0.0.1:${port}`, drainSeconds: 0, prepare: true },
        {
          name: 'hook',
          type: 'exec',
          command: [process.execPath, '-e', `require('fs').appendFileSync(${JSON.stringify(join(dir, 'hook.txt'))}, 'ran\\n')`],
          prepare: true,
        },
      ],
    });
    const advisory = h.sim.addEvent({ EventType: 'SpotRebalanceRecommendation', EventStatus: 'Advisory', startedMs: 600_000 });
    const odd = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
    h.sim.events.find((e) => e.eventId === odd.eventId)!.status = 'Pending' as 'Scheduled';
    await waitFor(() => h.kinds().length >= 2, 'both delivered');
    const byId = (id: string) => h.events().find((e) => e.subject === id)!;
    expect(byId(advisory.eventId)).toMatchObject({
      type: 'azure.scheduledevent.scheduled',
      data: { eventStatus: 'Advisory', notBefore: null },
    });
    expect(byId(odd.eventId).data.eventStatus).toBe('Pending');
    // a few more reads: still no approval, the probe in service, the hook never run
    const reads = h.sim.requests.length;
    await waitFor(() => h.sim.requests.length >= reads + 5, 'five more reads');
    expect(h.sim.startRequests).toEqual([]);
    expect((await fetch(`http://127.0.0.1:${port}/probe`)).status).toBe(200);
    expect(existsSync(join(h.dir, 'hook.txt'))).toBe(false);
    expect(h.bridge.store.outbox.deadLetters()).toEqual([]);

    h.sim.removeEvent(advisory.eventId);
    await waitFor(() => ends(h, advisory.eventId).length > 0, 'the advisory withdrawn');
    const end = ends(h, advisory.eventId)[0]!;
    expect(end.type).toBe('azure.scheduledevent.canceled');
    const chat = toChatMessage(end as unknown as BridgeEvent);
    expect(chat.title).toBe('vm0: advisory withdrawn (SpotRebalanceRecommendation)');
    expect(chat.title).not.toMatch(/maintenance/);
    expect(toChatMessage(byId(advisory.eventId) as unknown as BridgeEvent).title).toMatch(/^vm0 is at elevated risk of Spot eviction/);
  });
});
