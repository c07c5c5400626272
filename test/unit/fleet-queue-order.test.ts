/**
 * The order of the queue's entries: the page a member reads is a prefix of the entries in the
 * order of their names; the place it reads from the page is in the order of inOrder. The two must
 * agree, or the page cuts off the true head (VM names with '_' or '.', which member keys make '-').
 */
import { describe, expect, it } from 'vitest';
import { QueuePlace } from '../../src/fleet/budget/queue.ts';
import { inOrder, waiterOf } from '../../src/fleet/budget/queue-order.ts';
import { memberKey } from '../../src/fleet/budget/records.ts';
import { entryName, headSize, QueueEntries, waitersIn } from '../../src/fleet/budget/queue-entries.ts';
import type { FleetStore, Versioned } from '../../src/fleet/budget/stores/port.ts';

const NOW = Date.parse('2026-11-26T10:00:00.000Z');
const NOT_BEFORE = new Date(NOW + 900_000).toISOString();
const vmOf = (name: string) => ({
  name,
  resourceId: `/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/${name}`,
});

/** entryOf: the entry of a member named `vm` whose maintenance at NOT_BEFORE nobody held yet (a wave: it may ask now). */
function entryOf(vm: string): Versioned {
  const parts = { member: memberKey(vmOf(vm)), vm, eventId: `E-${vm}`, notBefore: NOT_BEFORE, since: null, need: 1 };
  return { name: entryName(parts), version: '1', value: { ...parts, heartbeatAt: new Date(NOW).toISOString(), heartbeatSeconds: 20 } };
}

/** A store whose head is the first `limit` records in the order of their names, as List Blobs and the API server answer. */
function storeOf(records: Versioned[]): FleetStore {
  const sorted = [...records].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return {
    where: 'memory',
    get: async () => null,
    put: async () => null,
    remove: async () => false,
    list: async () => sorted,
    head: async (prefix, limit) => sorted.filter((r) => r.name.startsWith(prefix)).slice(0, limit),
    close: async () => undefined,
  };
}

describe('the order of the entries’ names and the queue’s order', () => {
  it('sorts the entries of one NotBefore, none held yet, as inOrder sorts their members', () => {
    // Azure VM names may hold '_' and '.' (scale-set instances are `<set>_<n>`); the member key makes them '-'
    const vms = ['web-1', 'web_2', 'web.3'];
    const byName = vms.map(entryOf).sort((a, b) => (a.name < b.name ? -1 : 1));
    const byQueue = waitersIn(byName, 'nobody', NOW, true);
    expect(byName.map((r) => (r.value as { vm: string }).vm)).toEqual(byQueue.map((w) => w.vm));
  });

  it('a wave larger than the page: only the first of the queue finds nobody ahead of it', async () => {
    // K = 1: a page of 10. Ten members `app-0`…`app-9` and one `app_z` (its key app-z-…): by VM name ('_' before '-')
    // app_z would come first, by the names last; the queue's order is the names'
    const vms = [...Array.from({ length: headSize(1) }, (_, i) => `app-${i}`), 'app_z'];
    const store = storeOf(vms.map(entryOf));
    const firsts: string[] = [];
    for (const vm of vms) {
      const me = waiterOf(memberKey(vmOf(vm)), vm, { eventId: `E-${vm}`, notBefore: NOT_BEFORE }, undefined, NOW);
      const candidates = await new QueueEntries(store, 20).read(1, me, NOW, new Set(), true);
      // one free slot, a first ask: its turn, or null
      const turn = new QueuePlace({ maxUnavailable: 1, retryMs: 2000, heartbeatSeconds: 20 }).place(
        candidates,
        me,
        NOW,
        1,
        true,
        new Set(),
      );
      if (turn !== null) firsts.push(vm);
    }
    // one member alone finds its turn: the first of the queue's order (inOrder, as every member sorts, whatever its locale)
    const all = vms.map((vm) => waiterOf(memberKey(vmOf(vm)), vm, { eventId: `E-${vm}`, notBefore: NOT_BEFORE }, undefined, NOW));
    expect(all.sort(inOrder).map((w) => w.vm)).toEqual(['app-0', ...vms.slice(1, -1), 'app_z']);
    expect(firsts).toEqual(['app-0']);
  });
});
