/**
 * openFleetStore loads the configured store's client library (only now, so a bridge without a
 * fleet pays nothing for it) and connects to nothing yet. Every call to the store it returns has
 * a deadline on the client (deadline.ts).
 */
import type { FleetStoreConfig } from './config.ts';
import { withDeadlines } from './deadline.ts';
import type { FleetStore } from './port.ts';

/** How long one call to a store may take, unless `fleet.storeTimeoutMs` says otherwise. */
export const STORE_TIMEOUT_MS = 10_000;

export async function openFleetStore(config: FleetStoreConfig, group: string, timeoutMs: number = STORE_TIMEOUT_MS): Promise<FleetStore> {
  if (config.type === 'blob') {
    const { BlobFleetStore } = await import('./blob.ts');
    return withDeadlines(await BlobFleetStore.open(config, group), timeoutMs);
  }
  const { LeaseFleetStore } = await import('./lease.ts');
  return withDeadlines(await LeaseFleetStore.open(config, group), timeoutMs);
}
