/**
 * Odd but legal input from IMDS, end to end through the bridge with a real store and file
 * sink: Unicode resource ids, failures of our own mapping, transitions that recur.
 */
import { ImdsConfig } from '../../src/config/schema.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.ts';
import { Bridge } from '../../src/daemon/bridge.ts';
import { ApprovalService } from '../../src/approval/service.ts';
import { pollOnce } from '../../src/pipeline/poll.ts';
import { ImdsClient } from '../../src/imds/client.ts';
import { identityFrom, type VmIdentity } from '../../src/imds/identity.ts';
import { Store } from '../../src/store/store.ts';
import { silentLogger, tempDir, waitFor } from '../helpers.ts';

import { bridgeOn, cleanUpAfterEach, cleanups, simulator } from './hardening-kit.ts';
import { BridgeState } from '../../src/imds/view.ts';

cleanUpAfterEach();

describe('a resource id that is not plain ASCII', () => {
  it('read from IMDS: events flow, the source is percent-encoded, nothing is logged as an IMDS failure', async () => {
    const sim = await simulator({ resourceGroup: 'rg-café prod' });
    const { lines, delivered } = await bridgeOn(sim);
    const e = sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => delivered().length === 1, 'the scheduled event');
    const [ce] = delivered();
    expect(ce!.source).toContain('/resourceGroups/rg-caf%C3%A9%20prod/');
    expect(decodeURIComponent(ce!.source)).toBe(sim.compute().resourceId);
    expect((ce!.data.vm as { resourceId: string }).resourceId).toBe(sim.compute().resourceId);
    expect(ce!.subject).toBe(e.eventId);
    expect(lines.filter((l) => Number(l.level) >= 40)).toEqual([]);
  });

  it('configured as identity.resourceId: the same', async () => {
    const sim = await simulator();
    const resourceId = '/subscriptions/s/resourceGroups/grüne Gruppe/providers/Microsoft.Compute/virtualMachines/vm0';
    const { lines, delivered } = await bridgeOn(sim, { identity: { vmName: 'vm0', resourceId } });
    sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => delivered().length === 1, 'the scheduled event');
    expect(delivered()[0]!.source).toBe(
      '/subscriptions/s/resourceGroups/gr%C3%BCne%20Gruppe/providers/Microsoft.Compute/virtualMachines/vm0',
    );
    expect(lines.some((l) => l.msg === 'IMDS read failed; no transitions from this poll')).toBe(false);
  });
});

describe('a failure of our own mapping', () => {
  it('is a MappingError, never an IMDS error', async () => {
    const sim = await simulator();
    sim.addEvent({ noticeMs: 600_000 });
    const client = new ImdsClient(ImdsConfig.parse({ endpoint: sim.url }));
    cleanups.push(() => client.close());
    // a VM identity without a name cannot be mapped (affectsThisVm needs it)
    const broken = { ...identityFrom(null, { name: 'x' }), name: undefined } as unknown as VmIdentity;
    await expect(pollOnce(client, null, broken)).rejects.toMatchObject({ name: 'MappingError', code: 'MAPPING_FAILED' });
  });

  it('stops an approval before IMDS is told: the record and the approved event are built first', async () => {
    const sim = await simulator();
    const e = sim.addEvent({ noticeMs: 600_000 });
    const client = new ImdsClient(ImdsConfig.parse({ endpoint: sim.url }));
    const store = Store.open(':memory:');
    cleanups.push(() => store.close());
    cleanups.push(() => client.close());
    const read = await client.getScheduledEvents();
    if (read.kind !== 'document') throw new Error('expected a document');
    let emitted = 0;
    const service = new ApprovalService({
      records: store.approvals,
      journal: store.journal,
      client,
      logger: silentLogger,
      view: Object.assign(new BridgeState(identityFrom(null, { name: 'vm0' })), { document: read.document, goodReads: 1 }),
      route: () => {
        throw new TypeError('cannot route');
      },
      emit: () => void emitted++,
    });
    await expect(service.approve(e.eventId, { by: 'test', via: 'api' })).rejects.toThrow('cannot route');
    expect(sim.startRequests).toEqual([]);
    expect(emitted).toBe(0);
    expect(store.approvals.of(e.eventId)).toBeNull();
  });
});

describe('a transition that happens again', () => {
  // NotBefore days ahead: an event gone before its NotBefore was canceled (one gone after it has happened)
  const ahead = (days: number) => {
    const t = new Date(Math.floor(Date.now() / 60_000) * 60_000 + days * 86_400_000);
    return { rfc: t.toUTCString(), iso: t.toISOString().replace('.000Z', 'Z') };
  };
  const [d1, d2, d3] = [ahead(3), ahead(4), ahead(5)];
  const doc = (incarnation: number, events: Record<string, unknown>[]) =>
    JSON.stringify({ DocumentIncarnation: incarnation, Events: events });
  const ev = (status: string, notBefore: string) => ({
    EventId: 'E-RECUR',
    EventType: 'Reboot',
    ResourceType: 'VirtualMachine',
    Resources: ['vm0', 'vm1'],
    EventStatus: status,
    NotBefore: notBefore,
    Description: '',
    EventSource: 'Platform',
    DurationInSeconds: -1,
  });

  it('Scheduled, canceled, Scheduled again: a new id with the current data, the same on every VM', async () => {
    const sim = await simulator();
    // two VMs of one availability set, each with its own bridge and state, reading the same IMDS
    const a = await bridgeOn(sim, { identity: { vmName: 'vm0' } }, 'a');
    const b = await bridgeOn(sim, { identity: { vmName: 'vm1' } }, 'b');
    const steps: [number, Record<string, unknown>[], number][] = [
      [2, [ev('Scheduled', d1.rfc)], 1],
      [3, [], 2],
      [4, [ev('Scheduled', d2.rfc)], 3],
      [5, [], 4],
      [6, [ev('Scheduled', d3.rfc)], 5],
    ];
    for (const [incarnation, events, count] of steps) {
      sim.setRawDocument(doc(incarnation, events));
      await waitFor(() => a.delivered().length === count && b.delivered().length === count, `${count} events at both VMs`);
    }
    const got = a.delivered();
    expect(got.map((e) => e.id)).toEqual([
      'E-RECUR/scheduled',
      'E-RECUR/canceled',
      'E-RECUR/scheduled/2',
      'E-RECUR/canceled/2',
      'E-RECUR/scheduled/3',
    ]);
    expect(got.map((e) => [e.data.notBefore, e.data.documentIncarnation])).toEqual([
      [d1.iso, 2],
      [d1.iso, 3],
      [d2.iso, 4],
      [d2.iso, 5],
      [d3.iso, 6],
    ]);
    expect(b.delivered().map((e) => e.id)).toEqual(got.map((e) => e.id));
    expect(new Set(got.map((e) => e.id)).size).toBe(got.length);
  });

  it('Started, back to Scheduled, Started again: the second started has its own id and body', async () => {
    const sim = await simulator();
    const a = await bridgeOn(sim, { identity: { vmName: 'vm0' } });
    const steps: [number, Record<string, unknown>[], number][] = [
      [2, [ev('Started', '')], 1],
      [3, [ev('Scheduled', d1.rfc)], 2],
      [4, [ev('Started', '')], 3],
    ];
    for (const [incarnation, events, count] of steps) {
      sim.setRawDocument(doc(incarnation, events));
      await waitFor(() => a.delivered().length === count, `${count} events`);
    }
    const got = a.delivered();
    expect(got.map((e) => e.id)).toEqual([
      'E-RECUR/started',
      expect.stringMatching(/^E-RECUR\/updated\/[0-9a-f]{16}$/),
      'E-RECUR/started/2',
    ]);
    expect(got.map((e) => e.data.documentIncarnation)).toEqual([2, 3, 4]);
  });

  it('keeps counting across a restart', async () => {
    const sim = await simulator();
    const dir = tempDir();
    cleanups.push(() => dir.cleanup());
    const config = validateConfig(
      {
        imds: { endpoint: sim.url, pollIntervalMs: 200 },
        state: { path: join(dir.path, 's.db') },
        sinks: [{ name: 'f', type: 'file', path: join(dir.path, 'e.jsonl') }],
        identity: { vmName: 'vm0' },
      },
      't',
      {},
    );
    const ids = () =>
      readFileSync(join(dir.path, 'e.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { id: string }).id);
    let bridge = await Bridge.create({ config, logger: silentLogger });
    await bridge.start();
    sim.setRawDocument(doc(2, [ev('Scheduled', d1.rfc)]));
    await waitFor(() => bridge.store.journal.all().length === 1, 'scheduled');
    sim.setRawDocument(doc(3, []));
    await waitFor(() => bridge.store.journal.all().length === 2, 'canceled');
    await bridge.stop(1000);
    sim.setRawDocument(doc(4, [ev('Scheduled', d2.rfc)]));
    bridge = await Bridge.create({ config, logger: silentLogger });
    cleanups.push(() => bridge.stop(1000));
    await bridge.start();
    await waitFor(() => bridge.store.journal.all().length === 3, 'scheduled again');
    await waitFor(() => ids().length === 3, 'three deliveries');
    expect(ids()).toEqual(['E-RECUR/scheduled', 'E-RECUR/canceled', 'E-RECUR/scheduled/2']);
  });
});
