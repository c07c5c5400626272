/**
 * Fleet approvals for tests and benchmarks: an AMQP peer with the inbox and replies queues, a
 * set of fleet keys, the relay's and a bridge's configuration sections for them.
 */
import { linkKeyFor, newFleetKeys, sessionIdOf, type FleetKeys } from '../src/approval/fleet.ts';
import { RelayConfig } from '../src/approval/relay.ts';
import type { ImdsSimulator } from '../src/simulator/server.ts';
import { AmqpPeer } from '../src/simulator/amqp-peer.ts';

export const INBOX = 'se-bridge-approvals';
export const REPLIES = 'se-bridge-approval-replies';
export const API_SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
export const SLACK_SECRET = 'fleet-slack-signing-secret';

/** fleetPeer: an AMQP peer holding both queues, listening. */
export async function fleetPeer(lockDurationMs = 30_000): Promise<AmqpPeer> {
  const peer = new AmqpPeer();
  peer.queue(INBOX, { sessions: true, duplicateDetectionMs: 10 * 60_000, lockDurationMs, maxDeliveryCount: 10 });
  peer.queue(REPLIES, { sessions: true, lockDurationMs });
  await peer.listen();
  return peer;
}

export function fleetKeys(): FleetKeys {
  return newFleetKeys();
}

/** The session of the VM a simulator plays (its resource id, lower-cased). */
export function sessionOf(sim: ImdsSimulator): string {
  return sessionIdOf({ resourceId: `/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/${sim.resourceGroup}/providers/Microsoft.Compute/virtualMachines/${sim.vmName}`, name: sim.vmName });
}

export function relayConfig(peer: AmqpPeer, keys: FleetKeys, over: Record<string, unknown> = {}): RelayConfig {
  return RelayConfig.parse({
    listen: '127.0.0.1:0',
    serviceBus: { connectionString: peer.connectionString(), queue: INBOX, replies: REPLIES },
    signingKey: keys.signingKey,
    fleetKey: keys.fleetKey,
    apiSecrets: [API_SECRET],
    slack: { signingSecret: SLACK_SECRET },
    replyWaitMs: 10_000,
    log: { level: 'silent' },
    ...over,
  });
}

/** inboxSection: a bridge's `approval` section for the fleet, with the link key of `session`. */
export function fleetApproval(peer: AmqpPeer, keys: FleetKeys, session: string, relayUrl = 'https://approvals.example.com'): Record<string, unknown> {
  return {
    relayUrl,
    inbox: {
      connectionString: peer.connectionString(),
      queue: INBOX,
      replies: REPLIES,
      relayPublicKey: keys.publicKey,
      linkKey: linkKeyFor(Buffer.from(keys.fleetKey, 'base64'), session).toString('base64'),
    },
  };
}
