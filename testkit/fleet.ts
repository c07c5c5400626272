/**
 * Fleet approvals for tests and benchmarks: the local set-up of src/commands/local-fleet.ts with the
 * tests' API and Slack secrets, and the session of the VM a simulator plays.
 */
import { newFleetKeys, sessionIdOf, type FleetKeys } from '../src/fleet/keys.ts';
import { RelayConfig } from '../src/relay/config.ts';
import type { AmqpPeer } from '../src/simulator/servicebus/amqp-peer.ts';
import { localInbox, localRelayInput, localServiceBus } from '../src/commands/local-fleet.ts';
import type { ImdsSimulator } from '../src/simulator/server.ts';

export { INBOX, REPLIES } from '../src/commands/local-fleet.ts';
export const API_SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
export const SLACK_SECRET = 'fleet-slack-signing-secret';

export const fleetPeer = localServiceBus;

export function fleetKeys(): FleetKeys {
  return newFleetKeys();
}

/** The session of the VM a simulator plays (its resource id, lower-cased). */
export function sessionOf(sim: ImdsSimulator): string {
  return sessionIdOf({ resourceId: sim.compute().resourceId ?? null, name: sim.vmName });
}

/** relayInput: the tests' relay configuration as written in its file. */
export function relayInput(peer: AmqpPeer, keys: FleetKeys, over: Record<string, unknown> = {}): Record<string, unknown> {
  return localRelayInput(peer, keys, {
    apiSecrets: [API_SECRET],
    slack: { signingSecret: SLACK_SECRET, responseUrls: ['http://127.0.0.1:'] },
    replyWaitMs: 10_000,
    log: { level: 'silent' },
    ...over,
  });
}

/** relayConfig: the same, validated. */
export function relayConfig(peer: AmqpPeer, keys: FleetKeys, over: Record<string, unknown> = {}): RelayConfig {
  return RelayConfig.parse(relayInput(peer, keys, over));
}

/** fleetApproval: a bridge's `approval` section for the fleet, with the link key of `session`. */
export function fleetApproval(
  peer: AmqpPeer,
  keys: FleetKeys,
  session: string,
  relayUrl = 'https://approvals.example.com',
): Record<string, unknown> {
  return localInbox(peer, keys, session, relayUrl);
}
