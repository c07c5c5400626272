/**
 * MemoryStore: the fleet store's port (src/fleet/budget/stores/port.ts) kept in memory, with its
 * one rule: a write lands only over the version its writer read. For unit tests that need an exact
 * interleaving of replicas and members, or a write that fails at a chosen moment, which a real
 * store cannot be made to order; Blob Storage (Azurite) and the Lease stand-in serve every test of
 * the stores themselves.
 */
import type { FleetStore, Versioned } from '../src/fleet/budget/stores/port.ts';

export class MemoryStore {
  readonly records = new Map<string, Versioned>();
  /** The next writes that throw, as a store that fails answers. */
  failPuts = 0;
  #n = 0;

  /** store: the port over these records. */
  readonly store: FleetStore = {
    where: 'memory',
    get: (name) => Promise.resolve(this.records.get(name) ?? null),
    put: (name, value, version) => {
      if (this.failPuts > 0) return (this.failPuts--, Promise.reject(new Error('store: 503')));
      if ((this.records.get(name)?.version ?? null) !== version) return Promise.resolve(null);
      return Promise.resolve(this.write(name, JSON.parse(JSON.stringify(value)) as unknown));
    },
    remove: (name, version) => Promise.resolve(this.records.get(name)?.version === version && this.records.delete(name)),
    list: (prefix) => Promise.resolve([...this.records.values()].filter((r) => r.name.startsWith(prefix))),
    head: (prefix, limit) => Promise.resolve([...this.records.values()].filter((r) => r.name.startsWith(prefix)).slice(0, limit)),
    close: () => Promise.resolve(),
  };

  /** write: a record written whatever is there (as a member may), its new version. */
  write(name: string, value: unknown): string {
    const version = String(++this.#n);
    this.records.set(name, { name, value, version });
    return version;
  }
}
