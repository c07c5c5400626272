/**
 * openFleetStore loads the configured store's client library (only now, so a bridge without a
 * fleet pays nothing for it) and connects to nothing yet.
 */
import type { FleetStoreConfig } from './config.ts';
import type { FleetStore } from './port.ts';

export async function openFleetStore(config: FleetStoreConfig, group: string): Promise<FleetStore> {
  if (config.type === 'blob') {
    const { BlobFleetStore } = await import('./blob.ts');
    return BlobFleetStore.open(config, group);
  }
  const { LeaseFleetStore } = await import('./lease.ts');
  return LeaseFleetStore.open(config, group);
}
