/**
 * The Lease meter the fleet benchmarks count the API server's work with (testkit/kube-lease-meter.ts):
 * the Lease store's requests to the Kubernetes API stand-in by verb, the bytes of the answers and of
 * the lists by the kind listed, the writes refused (409) by the kind of record, and each Lease's
 * busiest second.
 */
import { describe, expect, it } from 'vitest';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import { FleetConfig } from '../../src/fleet/budget/config.ts';
import { leaseStorePerFile } from '../../testkit/fleet-stores.ts';
import { LeaseMeter, leaseVerb } from '../../testkit/kube-lease-meter.ts';

const leases = leaseStorePerFile();

describe('the Lease meter', () => {
  it('names each request by the API server verb', () => {
    const at = '/apis/coordination.k8s.io/v1/namespaces/se-bridge/leases';
    expect(leaseVerb('GET', `${at}?labelSelector=a%3Db`)).toBe('list');
    expect(leaseVerb('GET', `${at}?watch=true`)).toBe('watch');
    expect(leaseVerb('GET', `${at}/se-bridge-g-slot-0`)).toBe('get');
    expect(leaseVerb('POST', at)).toBe('create');
    expect(leaseVerb('PUT', `${at}/se-bridge-g-slot-0`)).toBe('update');
    expect(leaseVerb('DELETE', `${at}/se-bridge-g-slot-0`)).toBe('delete');
    expect(leaseVerb('GET', '/api/v1/nodes')).toBeNull();
  });

  it('counts the store requests, their bytes, the refused writes by kind and the busiest second of each Lease', async () => {
    const config = FleetConfig.parse({ group: 'meter', store: leases().config('kubernetes') });
    const store = await openFleetStore(config.store, config.group);
    try {
      const meter = new LeaseMeter(leases().kube);
      const slot = await store.put('slot-0', { vm: 'a' }, null);
      expect(await store.put('slot-0', { vm: 'b' }, null)).toBeNull(); // 409 AlreadyExists
      await store.put('member-a', { vm: 'a' }, null);
      expect(await store.put('slot-0', { vm: 'a', again: true }, slot)).not.toBeNull();
      expect(await store.put('slot-0', { vm: 'b' }, slot)).toBeNull(); // 409 Conflict: slot is an old version
      // a collision notice, an overflow record and the pause are labelled as slots (listed with them), but are no hand-off's
      for (const name of ['slot-wave-abc', 'slot-x-a', 'slot-pause']) {
        await store.put(name, { vm: 'a' }, null);
        expect(await store.put(name, { vm: 'b' }, null)).toBeNull();
      }
      expect((await store.list('member-')).map((r) => r.name)).toEqual(['member-a']);
      expect(await store.get('slot-0')).not.toBeNull();
      expect(meter.writes()).toBe(11);
      const cost = meter.take();
      expect(cost.counts).toEqual({ list: 1, get: 1, create: 9, update: 2, watch: 0 });
      expect(cost.lostBy).toEqual({ slot: 2, wave: 1, overflow: 1, 'slot-pause': 1 });
      expect(cost.lost).toBe(5);
      expect(Object.keys(cost.listBytesBy)).toEqual(['member']);
      expect(cost.listBytesBy.member).toBe(cost.bytesBy.list);
      expect(cost.listBytesBy.member).toBeGreaterThan(100);
      expect(cost.bytes).toBe(Object.values(cost.bytesBy).reduce((a, b) => a + b, 0));
      // six requests to slot-0 within a moment: one second, or two when it turned over between them
      expect(cost.busiestSecond['se-bridge-meter-slot-0']).toBeGreaterThanOrEqual(3);
      expect(cost.busiestSecond.list).toBe(1);
      expect(meter.take().counts).toEqual({ list: 0, get: 0, create: 0, update: 0, watch: 0 });
    } finally {
      await store.close();
    }
  });
});
