/**
 * Records of another shape in a fleet store, over its two real stores (Azure Blob Storage served
 * by Azurite through @azure/storage-blob; Leases served by the Kubernetes API stand-in, written
 * from the API reference, through the project's Kubernetes client (src/kube)): a member record without `events`, a
 * slot that is not JSON, a 10 MiB member record. Each is named once and left out; the store is
 * not called unreachable; `fleet status` prints the rest; the 10 MiB record is never downloaded.
 */
import { BlobServiceClient } from '@azure/storage-blob';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { FleetBudget } from '../../src/fleet/budget/budget.ts';
import { asBudget, FleetConfig } from '../../src/fleet/budget/config.ts';
import { readGroup } from '../../src/fleet/budget/group.ts';
import { groupText } from '../../src/fleet/budget/group-text.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import { leaseName, RECORD_ANNOTATION } from '../../src/fleet/budget/stores/lease.ts';
import { fleetStoresPerFile, memberVm, scheduledFor, STORE_KINDS, type StoreKind } from '../../testkit/fleet-stores.ts';

const fleetStores = fleetStoresPerFile();

const vm = memberVm;

const TEN_MIB = 10 * 1024 * 1024;

/** writeRaw replaces a record's text in the store as it is, past the bridge's own writer (after one write made it exist). */
async function writeRaw(kind: StoreKind, group: string, name: string, text: string): Promise<void> {
  const config = asBudget(FleetConfig.parse({ group, maxUnavailable: 1, store: fleetStores().config(kind) }));
  const store = await openFleetStore(config.store, group);
  await store.put(name, { placeholder: true }, null);
  if (kind === 'blob') {
    const c = fleetStores().config('blob') as { connectionString: string; container: string };
    const blob = BlobServiceClient.fromConnectionString(c.connectionString).getContainerClient(c.container);
    await blob.getBlockBlobClient(`${group}/${name}`).upload(text, Buffer.byteLength(text));
    return;
  }
  const lease = fleetStores().kube.leases.leases.get(`se-bridge/${leaseName(group, name)}`);
  if (lease?.metadata.annotations === undefined) throw new Error(`no Lease for ${name}`);
  lease.metadata.annotations[RECORD_ANNOTATION] = text;
}

describe.each(STORE_KINDS)('records of another shape in the %s store', (kind) => {
  it('are each named once and left out: the store stays reachable, a bad slot is free, fleet status prints the rest, 10 MiB is never downloaded', async () => {
    const group = `odd-${kind}`;
    const config = asBudget(FleetConfig.parse({ group, maxUnavailable: 1, store: fleetStores().config(kind) }));
    const lines: Record<string, unknown>[] = [];
    // a maintenance ahead of vm-a: its heartbeats read the group (a member with none has no collision to foretell)
    const event = scheduledFor('vm-a');
    const view = { vm: vm('vm-a'), document: { incarnation: 1, events: [event] }, goodReads: 1, approvalServerUrl: null };
    const budget = new FleetBudget({
      config,
      store: await openFleetStore(config.store, group),
      view,
      logger: pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) }),
      givenBack: () => true,
    });
    await budget.heartbeat();
    await writeRaw(
      kind,
      group,
      'member-odd',
      JSON.stringify({
        member: 'odd',
        vm: 'vm-odd',
        resourceId: null,
        heartbeatAt: new Date().toISOString(),
        heartbeatSeconds: 30,
        slot: null,
      }),
    );
    await writeRaw(kind, group, 'slot-0', 'this is not JSON');
    await writeRaw(kind, group, 'member-huge', JSON.stringify({ member: 'huge', pad: 'x'.repeat(TEN_MIB) }));

    const gate = fleetStores().gates[kind];
    const before = gate.received;
    await budget.heartbeat();
    await budget.heartbeat();
    const received = gate.received - before;
    const skipped = lines.filter((l) => l.code === 'FLEET_RECORD_SKIPPED');
    expect(skipped.map((l) => l.key).sort()).toEqual(['member-huge', 'member-odd', 'slot-0']);
    expect(skipped.find((l) => l.key === 'member-odd')?.why).toMatch(/^events: /);
    expect(skipped.find((l) => l.key === 'slot-0')?.why).toBe('not JSON');
    expect(skipped.find((l) => l.key === 'member-huge')?.why).toMatch(/^1048\d{4} bytes, over the 262144-byte limit/);
    expect(budget.state()).toMatchObject({ storeReachable: true, lastError: null });
    // the blob is not downloaded (two heartbeats read far less than it); the Lease stand-in sends
    // whole lists, as an API server does, so only the Blob store can leave it on the server
    if (kind === 'blob') expect(received).toBeLessThan(1024 * 1024);

    // the unreadable slot reads as free: an early approval takes it, and writes it whole again
    await expect(budget.take(event, { by: 'test', via: 'api' })).resolves.toBeDefined();

    const g = await readGroup(config);
    expect(g.members.map((m) => m.vm)).toEqual(['vm-a']);
    expect(g.skipped.map((s) => s.key).sort()).toEqual(['member-huge', 'member-odd']);
    expect(g.slots.map((s) => s.vm)).toEqual(['vm-a']);
    const text = groupText(g, (h, rows) => [h, ...rows].map((r) => r.join(' | ')).join('\n'));
    expect(text).toContain('Record member-odd left out: events: ');
    expect(text).toMatch(/Record member-huge left out: \d+ bytes, over the 262144-byte limit/);
  }, 60_000);
});
