/**
 * Hostile or unusual input, end to end: unknown fields nested thousands deep, Microsoft's mock
 * server's EventId pattern, a fully or partly configured identity, and when approval links are
 * offered. Exec hooks that leave children behind or get huge events: sinks/exec/exec.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.ts';
import { linksFor } from '../../src/approval/links.ts';
import { identityFrom } from '../../src/imds/identity.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { toCloudEvent } from '../../src/pipeline/cloudevent.ts';
import { diff } from '../../src/pipeline/diff.ts';
import { MAX_RAW_DEPTH, toDomainDocument, WireDocument } from '../../src/imds/wire.ts';
import { waitFor } from '../helpers.ts';
import { bridgeOn, cleanUpAfterEach, simulator } from './hardening-kit.ts';
import { BridgeState } from '../../src/imds/view.ts';

cleanUpAfterEach();

describe('unknown fields nested 5,000 levels deep', () => {
  it('are cut in raw; the document and its other events go through', async () => {
    const sim = await simulator();
    const { bridge, delivered, lines } = await bridgeOn(sim, { identity: { vmName: 'vm0' } });
    let nested = '"bottom"';
    for (let i = 0; i < 5000; i++) nested = `{"level":${nested}}`;
    const base = { EventType: 'Reboot', EventStatus: 'Scheduled', Resources: ['vm0'], NotBefore: 'Mon, 23 Nov 2026 10:00:00 GMT' };
    sim.setRawDocument(
      `{"DocumentIncarnation":2,"Events":[${JSON.stringify({ ...base, EventId: 'DEEP' }).slice(0, -1)},"Extra":${nested}},${JSON.stringify({ ...base, EventId: 'PLAIN' })}]}`,
    );
    await waitFor(() => delivered().length === 2, 'both events');
    expect(
      delivered()
        .map((e) => e.subject)
        .sort(),
    ).toEqual(['DEEP', 'PLAIN']);
    const raw = delivered().find((e) => e.subject === 'DEEP')!.data.raw as Record<string, unknown>;
    let node: unknown = raw.Extra;
    let depth = 1;
    while (node !== null && typeof node === 'object') {
      node = (node as { level: unknown }).level;
      depth++;
    }
    expect(depth).toBe(MAX_RAW_DEPTH);
    expect(node).toBe(`[left out: nested deeper than ${MAX_RAW_DEPTH} levels]`);
    expect(bridge.status().consecutiveFailures).toBe(0);
    expect(lines.filter((l) => Number(l.level) >= 40)).toEqual([]);
  });
});

describe("Microsoft's mock server pattern: a new EventId for every state", () => {
  it('is reported by the rules: scheduled, then completed (its NotBefore passed) plus an unannounced started, then completed', async () => {
    const sim = await simulator();
    const { delivered } = await bridgeOn(sim, { identity: { vmName: 'vm0' } });
    const e = sim.addEvent({ newIdPerState: true, noticeMs: 400, startedMs: 600 });
    const first = e.eventId;
    await waitFor(() => delivered().length === 4, 'four transitions', 10_000);
    const second = e.eventId;
    expect(second).not.toBe(first);
    const seen = delivered().map((x) => `${x.type.replace('azure.scheduledevent.', '')}:${x.subject}`);
    expect(seen.slice(0, 1)).toEqual([`scheduled:${first}`]);
    // the first id went at its NotBefore, when the maintenance started under the second: it happened, it was not canceled
    expect(seen.slice(1, 3).sort()).toEqual([`completed:${first}`, `started:${second}`].sort());
    expect(delivered().find((x) => x.subject === first && x.type.endsWith('.completed'))!.data).toMatchObject({
      startedObserved: false,
      completedBecause: 'notBefore',
    });
    expect(seen[3]).toBe(`completed:${second}`);
    expect(sim.scenarioOfEvent.size).toBe(0);
    const ids = sim.playScenario('new-id-per-state');
    expect(sim.scenarioOfEvent.get(ids[0]!)).toBe('new-id-per-state');
  });
});

describe('who this VM is', () => {
  const computeReads = (sim: ImdsSimulator) => sim.requests.filter((r) => r.path === '/metadata/instance/compute').length;

  it('fully configured: instance metadata is never asked, and nothing is warned', async () => {
    const sim = await simulator();
    const identity = {
      vmName: 'vm0',
      resourceId: '/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm0',
      subscriptionId: 's',
      resourceGroupName: 'rg',
      location: 'westeurope',
    };
    const { bridge, lines, delivered } = await bridgeOn(sim, { identity }, 'a', 50);
    sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => delivered().length === 1, 'the event');
    await waitFor(() => sim.requests.filter((r) => r.path === '/metadata/scheduledevents').length >= 5, 'five polls');
    expect(computeReads(sim)).toBe(0);
    expect(bridge.identity).toMatchObject({ name: 'vm0', location: 'westeurope', origin: 'config' });
    expect(delivered()[0]!.source).toBe(identity.resourceId);
    expect(lines.filter((l) => Number(l.level) >= 40)).toEqual([]);
  });

  it('partly configured while the compute endpoint fails: warned once, however often it is retried', async () => {
    const sim = await simulator();
    sim.injectFault({ kind: 'status', status: 404, count: 1_000_000, target: 'compute' });
    const { lines } = await bridgeOn(sim, { identity: { vmName: 'vm0' } }, 'a', 50);
    await waitFor(() => computeReads(sim) >= 6, 'six identity reads', 10_000);
    const said = lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('cannot read the VM identity'));
    expect(said).toHaveLength(1);
    expect(said[0]!.level).toBe(40);
    expect(lines.filter((l) => l.msg === 'still cannot read the VM identity from IMDS').length).toBeGreaterThanOrEqual(4);
  });
});

describe('approval links', () => {
  it('are offered for scheduled and updated events only, never for one just canceled', () => {
    const config = validateConfig(
      { approval: { secret: `whsec_${Buffer.alloc(32, 4).toString('base64')}`, publicUrl: 'https://bridge.example' } },
      't',
      {},
    );
    const vm = identityFrom(null, { name: 'vm0' });
    const links = linksFor(config.approval, new BridgeState(vm))!;
    const wire = (NotBefore: string) => ({
      EventId: 'E-LINK',
      EventType: 'Reboot',
      EventStatus: 'Scheduled',
      Resources: ['vm0'],
      NotBefore,
    });
    const doc = (incarnation: number, events: unknown[]) =>
      toDomainDocument(WireDocument.parse({ DocumentIncarnation: incarnation, Events: events })).document;
    const soon = new Date(Date.now() + 3600_000).toUTCString();
    const later = new Date(Date.now() + 7200_000).toUTCString();
    const d1 = doc(1, []);
    const d2 = doc(2, [wire(soon)]);
    const d3 = doc(3, [wire(later)]);
    const d4 = doc(4, []);
    const ce = (a: typeof d1, b: typeof d1) => toCloudEvent(diff(a, b)[0]!, { vm, observedAt: new Date().toISOString() });
    expect(links.link(ce(d1, d2))).toMatch(/^https:\/\/bridge\.example\/v1\/approve\?token=/);
    expect(links.link(ce(d2, d3))).toMatch(/^https:\/\/bridge\.example\/v1\/approve\?token=/);
    const canceled = ce(d3, d4);
    expect(canceled.type).toBe('azure.scheduledevent.canceled');
    expect(canceled.data.eventStatus).toBe('Scheduled');
    expect(links.link(canceled)).toBeNull();
    expect(links.token(canceled)).toBeNull();
  });
});
