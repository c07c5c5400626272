/**
 * The store of the fleet benchmarks with bridges as processes (fleet-processes.ts, fleet-wave.ts),
 * chosen with `--store blob|kubernetes`: Azure Blob Storage (Azurite behind a proxy that counts
 * requests per operation and blob, the default) or Kubernetes Leases (the API stand-in on
 * 127.0.0.1, counted from its own records of its requests: testkit/kube-lease-meter.ts). Both
 * count in the same shape, so a benchmark reads either alike.
 */
import { Azurite, DEV_ACCOUNT } from '../src/simulator/azurite.ts';
import { CountingProxy } from '../testkit/counting-proxy.ts';
import { LeaseStore, type StoreKind } from '../testkit/fleet-stores.ts';
import { LeaseMeter, type LeaseCost } from '../testkit/kube-lease-meter.ts';

/** What a store counted between two takes, with the bytes of its lists by the kind listed (slot, member, queue). */
export type StoreCost = LeaseCost;

export interface BenchStore {
  readonly kind: StoreKind;
  /** config: a member's `fleet.store`, its records in `container` (Blob Storage) or the namespace se-bridge (Leases). */
  config(container: string): Record<string, unknown>;
  /** writes: the writes of records since the last take. */
  writes(): number;
  /** take: the cost since the last take, and a fresh start. */
  take(): StoreCost;
  stop(): Promise<void>;
}

/** busiestOf: the busiest second of the five busiest records (blobs or Leases; not the lists, nor the container's own requests). */
export const busiestOf = (seconds: Record<string, number>): Record<string, number> =>
  Object.fromEntries(
    Object.entries(seconds)
      .filter(([name]) => name !== 'list' && name !== 'container')
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5),
  );

/** storeOf: the store a benchmark's arguments name (`--store kubernetes`, `--store=blob`; blob by default) and the other arguments. */
export function storeOf(argv: readonly string[]): { store: StoreKind; rest: string[] } {
  const rest: string[] = [];
  let store = 'blob';
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--store') store = argv[++i] ?? '';
    else if (a.startsWith('--store=')) store = a.slice('--store='.length);
    else rest.push(a);
  }
  if (store !== 'blob' && store !== 'kubernetes') throw new Error(`--store: blob or kubernetes, not "${store}"`);
  return { store, rest };
}

export async function startStore(kind: StoreKind): Promise<BenchStore> {
  if (kind === 'kubernetes') {
    const leases = await LeaseStore.start();
    const meter = new LeaseMeter(leases.kube);
    return {
      kind,
      config: () => leases.config('kubernetes'),
      writes: () => meter.writes(),
      take: () => meter.take(),
      stop: () => leases.stop(),
    };
  }
  const azurite = await Azurite.start();
  const proxy = await new CountingProxy(azurite.url).start();
  return {
    kind,
    config: (container) => ({ type: 'blob', connectionString: azurite.connectionString(`${proxy.url}/${DEV_ACCOUNT}`), container }),
    writes: () => proxy.counts.get('write') ?? 0,
    take: () => proxy.take(),
    stop: async () => {
      await proxy.stop();
      await azurite.stop();
    },
  };
}
