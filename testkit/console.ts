/**
 * What the console's tests share that need no store: a relay configuration with a console (Service
 * Bus named, never reached) and a snapshot of the fleet made by hand, as a store's read would give
 * it, for a ConsoleServer or an approval over a reader that returns it.
 */
import type { GroupStatus } from '../src/fleet/budget/group.ts';
import { newFleetKeys } from '../src/fleet/keys.ts';
import type { FleetSnapshot } from '../src/fleet/view/snapshot.ts';
import { RelayConfig } from '../src/relay/config.ts';

export type SnapshotMember = GroupStatus['members'][number];

/** consoleRelayConfig: a relay's configuration with `console` (and anything in `over`). */
export function consoleRelayConfig(console: Record<string, unknown>, over: Record<string, unknown> = {}): RelayConfig {
  const keys = newFleetKeys();
  return RelayConfig.parse({
    serviceBus: { connectionString: 'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=c2VjcmV0LWtleQ==' },
    signingKey: keys.signingKey,
    fleetKey: keys.fleetKey,
    fleet: { store: { type: 'blob', connectionString: 'UseDevelopmentStorage=true' } },
    console,
    ...over,
  });
}

/** snapshotOf: the fleet as a read of its store gives it: these groups (one slot each), their members, no record of Azure's. */
export function snapshotOf(groups: Record<string, SnapshotMember[]>, readAt = Date.now()): FleetSnapshot {
  return {
    readAt,
    store: 's',
    groups: Object.entries(groups).map(([group, members]) => ({
      ...{ group, maxUnavailable: 1, counted: null, store: 's', members, slots: [], skipped: [], unread: [] },
      ...{ unhealthyCountsForSeconds: 3600, collision: null, pause: null },
    })),
    azure: [],
    unsealed: 0,
    unread: [],
  };
}
