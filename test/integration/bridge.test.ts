/**
 * The bridge in-process against the IMDS simulator, with real file and stdout sinks and a
 * real SQLite store: what reaches the sinks after each kind of change, fault and restart.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Bridge } from '../../src/daemon/bridge.ts';
import { ImdsSimulator, type FaultSpec } from '../../src/simulator/server.ts';
import { startBridge as harness } from '../../testkit/harness.ts';
import { tempDir, waitFor } from '../helpers.ts';

let sim: ImdsSimulator;
let dir: ReturnType<typeof tempDir>;
const running: Bridge[] = [];

beforeEach(async () => {
  sim = new ImdsSimulator({ vmName: 'vm0', peers: ['vm1', 'vm2'], tickMs: 10 });
  await sim.listen(0);
  dir = tempDir();
});
afterEach(async () => {
  for (const b of running.splice(0)) await b.stop(1000);
  await sim.close();
  dir.cleanup();
});

const eventsFile = () => join(dir.path, 'events.jsonl');
function delivered(): { id: string; type: string; subject: string; source: string; data: Record<string, unknown> }[] {
  try {
    return readFileSync(eventsFile(), 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  } catch {
    return [];
  }
}
const kinds = () => delivered().map((e) => `${e.type.replace('azure.scheduledevent.', '')}:${e.subject}`);

async function startBridge(extra: Record<string, unknown> = {}, dryRun = false) {
  const h = await harness({
    sim,
    dir: dir.path,
    dryRun,
    config: { ...extra, imds: { requestTimeoutMs: 500, firstRequestTimeoutMs: 2000 } },
    sinks: (extra.sinks as Record<string, unknown>[] | undefined) ?? [
      { name: 'audit', type: 'file', path: eventsFile() },
      { name: 'console', type: 'stdout' },
    ],
  });
  running.push(h.bridge);
  return { bridge: h.bridge, lines: h.lines, stdout: h.stdout };
}
async function stopBridge(b: Bridge) {
  running.splice(running.indexOf(b), 1);
  await b.stop(1000);
}

describe('Bridge', () => {
  it('turns a live-migration lifecycle into scheduled, started and completed CloudEvents', async () => {
    const { stdout } = await startBridge();
    // started by hand once the bridge has seen it scheduled: a loaded machine's slow first read cannot miss that state
    const e = sim.addEvent({ EventType: 'Freeze', Resources: ['vm0', 'vm1'], DurationInSeconds: 5, noticeMs: 600_000, startedMs: 600_000 });
    await waitFor(() => kinds().length === 1, 'the event scheduled', 10_000);
    expect(sim.startEvent(e.eventId)).toBe(true);
    // and ended once the bridge has seen it started
    await waitFor(() => kinds().length === 2, 'the event started', 10_000);
    expect(sim.removeEvent(e.eventId)).toBe(true);
    await waitFor(() => kinds().length === 3, 'three transitions', 10_000);
    expect(kinds()).toEqual([`scheduled:${e.eventId}`, `started:${e.eventId}`, `completed:${e.eventId}`]);
    const [first] = delivered();
    expect(first!.source).toBe(sim.compute().resourceId);
    expect(first!.data).toMatchObject({
      affectsThisVm: true,
      eventType: 'Freeze',
      durationInSeconds: 5,
      vm: { name: 'vm0', location: 'westeurope' },
    });
    await waitFor(() => stdout().split('\n').filter(Boolean).length === 3, 'three stdout lines');
    expect(stdout()).toMatch(/SCHEDULED\s+Freeze\s+\S+\s+vms=vm0\*,vm1/);
  });

  it('reports events already listed when it first starts, including ones already Started', async () => {
    const a = sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
    const b = sim.addEvent({ EventType: 'Redeploy', EventStatus: 'Started', startedMs: 600_000 });
    await startBridge();
    await waitFor(() => kinds().length === 2, 'two transitions');
    expect(kinds().sort()).toEqual([`scheduled:${a.eventId}`, `started:${b.eventId}`].sort());
  });

  it.each<[string, FaultSpec]>([
    ['500', { kind: 'status', status: 500, count: 3 }],
    ['404', { kind: 'status', status: 404, count: 2 }],
    ['410', { kind: 'status', status: 410, count: 2 }],
    ['429', { kind: 'status', status: 429, count: 2 }],
    ['garbage', { kind: 'garbage', count: 2 }],
    ['truncated', { kind: 'truncated', count: 2 }],
    ['schema-invalid', { kind: 'schema', count: 2 }],
    ['connection reset', { kind: 'reset', count: 2 }],
    ['timeout', { kind: 'hang', count: 2 }],
  ])('never takes a failed read (%s) for "no events"', async (_name, fault) => {
    const e = sim.addEvent({ noticeMs: 600_000 });
    const { bridge, lines } = await startBridge();
    await waitFor(() => kinds().length === 1, 'the scheduled event');
    const before = sim.requests.length;
    sim.injectFault(fault);
    await waitFor(() => sim.faults.length === 0 && sim.requests.length > before + (fault.count ?? 1), 'the faults to be served', 20_000);
    await waitFor(() => bridge.status().consecutiveFailures === 0, 'recovery', 20_000);
    expect(kinds()).toEqual([`scheduled:${e.eventId}`]);
    expect(
      lines.some(
        (l) => l.msg === 'IMDS read failed; no transitions from this poll' && typeof l.code === 'string' && l.code.startsWith('IMDS_'),
      ),
    ).toBe(true);
    sim.removeEvent(e.eventId);
    await waitFor(() => kinds().length === 2, 'the cancellation');
    expect(kinds()[1]).toBe(`canceled:${e.eventId}`);
  });

  it('diffs by EventId when the incarnation goes backwards, and handles duplicate EventIds', async () => {
    const a = sim.addEvent({ EventId: 'AAAA', noticeMs: 600_000 });
    const { lines } = await startBridge();
    await waitFor(() => kinds().length === 1, 'scheduled A');
    const wire = sim.document().Events[0]!;
    sim.setRawDocument(
      JSON.stringify({
        DocumentIncarnation: 1,
        Events: [wire, { ...wire, EventId: 'BBBB' }, { ...wire, EventId: 'BBBB', EventStatus: 'Started', NotBefore: '' }],
      }),
    );
    await waitFor(() => kinds().length === 2, 'B');
    expect(kinds()).toEqual([`scheduled:${a.eventId}`, 'started:BBBB']);
    expect(lines.some((l) => l.code === 'IMDS_DUPLICATE_EVENT_IDS')).toBe(true);
    expect(lines.some((l) => typeof l.msg === 'string' && l.msg.startsWith('DocumentIncarnation went backwards'))).toBe(true);
  });

  it('reports what changed while it was stopped: started, and completed after the reboot', async () => {
    const e = sim.addEvent({ noticeMs: 600_000, startedMs: 600_000 });
    let b = await startBridge();
    await waitFor(() => kinds().length === 1, 'scheduled');
    await stopBridge(b.bridge);
    sim.startEvent(e.eventId);
    b = await startBridge();
    await waitFor(() => kinds().length === 2, 'started, after the restart');
    await stopBridge(b.bridge);
    sim.removeEvent(e.eventId);
    b = await startBridge();
    await waitFor(() => kinds().length === 3, 'completed, after the restart');
    expect(kinds()).toEqual([`scheduled:${e.eventId}`, `started:${e.eventId}`, `completed:${e.eventId}`]);
  });

  it('resumes with the stored ETag: an unchanged document after a restart is a 304 and nothing new', async () => {
    sim.addEvent({ noticeMs: 600_000 });
    const b = await startBridge();
    await waitFor(() => kinds().length === 1, 'scheduled');
    await stopBridge(b.bridge);
    const mark = sim.requests.length;
    await startBridge();
    await waitFor(() => sim.requests.slice(mark).some((r) => r.status === 304), 'a 304');
    expect(
      sim.requests
        .slice(mark)
        .filter((r) => r.path === '/metadata/scheduledevents')
        .every((r) => r.status === 304),
    ).toBe(true);
    expect(kinds()).toHaveLength(1);
  });

  it('filters per sink: scope self leaves out events of other VMs', async () => {
    const text = await startBridge({
      sinks: [
        { name: 'audit', type: 'file', path: eventsFile() },
        { name: 'console', type: 'stdout', format: 'json', filter: { scope: 'self', types: ['scheduled'] } },
      ],
    });
    const mine = sim.addEvent({ Resources: ['vm1', 'vm0'], noticeMs: 600_000 });
    sim.addEvent({ Resources: ['vm2'], noticeMs: 600_000 });
    await waitFor(() => kinds().length === 2, 'both in the file');
    await waitFor(() => text.stdout().trim() !== '', 'stdout');
    // a later event of this VM on stdout: the other VM's, added before it, had its turn
    const later = sim.addEvent({ Resources: ['vm0'], noticeMs: 600_000 });
    await waitFor(() => text.stdout().includes(later.eventId), 'the later event on stdout');
    const out = text
      .stdout()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { subject: string });
    expect(out.map((e) => e.subject)).toEqual([mine.eventId, later.eventId]);
  });

  it('in dry run, sends nothing and keeps no state, but says what it would deliver', async () => {
    sim.addEvent({ noticeMs: 600_000 });
    const { lines } = await startBridge({}, true);
    await waitFor(() => lines.some((l) => l.msg === 'dry run: would deliver'), 'a dry-run line');
    expect(delivered()).toEqual([]);
    expect(() => readFileSync(join(dir.path, 'state.db'))).toThrow();
  });

  it('spaces polls by the interval from the end of one to the next, never bunching them', async () => {
    const mark = sim.requests.length;
    await startBridge();
    await waitFor(() => sim.requests.slice(mark).filter((r) => r.path === '/metadata/scheduledevents').length >= 12, 'twelve polls');
    const at = sim.requests
      .slice(mark)
      .filter((r) => r.path === '/metadata/scheduledevents')
      .map((r) => r.at);
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(198);
    // at most 5 requests per second: measured on arrival, so loopback jitter of a few ms is allowed
    const all = sim.requests.slice(mark).map((r) => r.at);
    for (let i = 0; i + 5 < all.length; i++) expect(all[i + 5]! - all[i]!).toBeGreaterThanOrEqual(950);
  });

  it('falls back to the configured name when IMDS cannot say who this VM is', async () => {
    sim.injectFault({ kind: 'status', status: 500, target: 'compute' });
    sim.addEvent({ Resources: ['configured-name'], noticeMs: 600_000 });
    const { bridge } = await startBridge({ identity: { vmName: 'configured-name' } });
    await waitFor(() => kinds().length === 1, 'scheduled');
    expect(bridge.identity.origin).toBe('config');
    expect(delivered()[0]!.source).toBe('urn:se-bridge:vm:configured-name');
    expect(delivered()[0]!.data.affectsThisVm).toBe(true);
  });
});
