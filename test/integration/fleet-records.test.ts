/**
 * Records of another shape in a fleet store, over its two real stores (Azure Blob Storage served
 * by Azurite through the project's Blob REST client, with @azure/storage-blob to plant the odd
 * records; Leases served by the Kubernetes API stand-in, written
 * from the API reference, through the project's Kubernetes client (src/kube)): a member record without `events`, a
 * slot that is not JSON, a member record of 10 MiB (1 MiB in a Lease). Each is named once and left
 * out; the store is not called unreachable; `fleet status` prints the rest; the 10 MiB record is
 * never downloaded.
 *
 * And a Blob listing larger than one answer may be: read page by page (pages asked small enough
 * for records at their largest), or, when an answer overflows all the same, an error that says
 * so, never a list cut short. The limit on an answer is made small here (the real one, 32 MiB,
 * would need some 4,000 records); the code path is the real one.
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
import { BlobFleetStore, listPage, METADATA_RECORD_BYTES } from '../../src/fleet/budget/stores/blob.ts';
import { FleetStoreError } from '../../src/fleet/budget/stores/port.ts';
import { FleetStoreConfig } from '../../src/fleet/budget/stores/config.ts';
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
    // 10 MiB in a blob; in a Lease, 1 MiB (an API server keeps no Lease's annotations over 256 KiB,
    // nor any object over 1.5 MiB, and the client reads no page of a list over 8 MiB)
    await writeRaw(kind, group, 'member-huge', JSON.stringify({ member: 'huge', pad: 'x'.repeat(kind === 'blob' ? TEN_MIB : 2 ** 20) }));

    const gate = fleetStores().gates[kind];
    const before = gate.received;
    await budget.heartbeat();
    await budget.heartbeat();
    const received = gate.received - before;
    const skipped = lines.filter((l) => l.code === 'FLEET_RECORD_SKIPPED');
    expect(skipped.map((l) => l.key).sort()).toEqual(['member-huge', 'member-odd', 'slot-0']);
    expect(skipped.find((l) => l.key === 'member-odd')?.why).toMatch(/^events: /);
    expect(skipped.find((l) => l.key === 'slot-0')?.why).toBe('not JSON');
    expect(skipped.find((l) => l.key === 'member-huge')?.why).toMatch(
      kind === 'blob' ? /^1048\d{4} bytes, over the 262144-byte limit/ : /^1048\d{3} bytes, over the 262144-byte limit/,
    );
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

describe('a Blob listing', () => {
  type BlobStoreConfig = Extract<FleetStoreConfig, { type: 'blob' }>;
  const config = () => FleetStoreConfig.parse(fleetStores().config('blob')) as BlobStoreConfig;
  /** A record at its largest that is still carried in its blob's metadata. */
  const largest = (name: string) => {
    const bare = JSON.stringify({ member: name, pad: '' });
    return { member: name, pad: 'x'.repeat(METADATA_RECORD_BYTES - Buffer.byteLength(bare)) };
  };
  const names = ['slot-0', ...Array.from({ length: 9 }, (_, i) => `member-vm-${i}`)];

  it('of more records than one answer holds is read page by page, every record, slot-0 included', async () => {
    const group = 'paged';
    const writer = await BlobFleetStore.open(config(), group);
    for (const name of names) expect(await writer.put(name, largest(name), null)).not.toBeNull();
    await writer.close();
    // 64 KiB an answer: three records at their largest a page; the ten in one answer would be about 90 KiB
    expect(listPage(64 * 1024)).toBe(3);
    const reader = await BlobFleetStore.open(config(), group, 64 * 1024);
    const listed = await reader.list('');
    await reader.close();
    expect(listed.map((r) => r.name).sort()).toEqual([...names].sort());
    for (const r of listed) expect(r.value).toEqual(largest(r.name));
  }, 60_000);

  it('whose answer overflows all the same fails, and says so: never a list cut short', async () => {
    const group = 'overflow';
    const writer = await BlobFleetStore.open(config(), group);
    for (const name of names.slice(0, 3)) expect(await writer.put(name, largest(name), null)).not.toBeNull();
    await writer.close();
    // 8 KiB an answer: one record a page, and one record at its largest (8,000 characters of metadata) is more
    const reader = await BlobFleetStore.open(config(), group, 8 * 1024);
    const err = await reader.list('').then(
      (listed) => listed,
      (e: unknown) => e,
    );
    await reader.close();
    expect(err).toBeInstanceOf(FleetStoreError);
    expect(err).toMatchObject({
      code: 'FLEET_STORE_UNAVAILABLE',
      message: 'list *: Blob Storage answered more than 8192 bytes, and no part of it is used',
      cause: { code: 'BLOB_ANSWER_TOO_LARGE' },
    });
  }, 60_000);
});
