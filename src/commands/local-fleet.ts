/**
 * A local fleet-approvals set-up, for `demo --fleet`, the tests and the benchmarks: the AMQP
 * peer with the inbox and replies queues, the relay's configuration and a bridge's `approval`
 * section for it.
 */
import { linkKeyFor, type FleetKeys, INBOX_QUEUE, REPLIES_QUEUE } from '../fleet/keys.ts';
import { RelayConfig } from '../relay/config.ts';
import { AmqpPeer } from '../simulator/servicebus/amqp-peer.ts';

export const INBOX = INBOX_QUEUE;
export const REPLIES = REPLIES_QUEUE;

/** localServiceBus: an AMQP peer holding both queues, listening on 127.0.0.1. */
export async function localServiceBus(
  lockDurationMs = 30_000,
  at: { host: string; port: number } = { host: '127.0.0.1', port: 0 },
): Promise<AmqpPeer> {
  const peer = new AmqpPeer();
  peer.queue(INBOX, { sessions: true, duplicateDetectionMs: 10 * 60_000, lockDurationMs, maxDeliveryCount: 10 });
  peer.queue(REPLIES, { sessions: true, lockDurationMs });
  await peer.listen(at);
  return peer;
}

/** localRelayInput: a relay's configuration as written in its file, on 127.0.0.1 for the peer, with `over` on top. */
export function localRelayInput(peer: AmqpPeer, keys: FleetKeys, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    listen: '127.0.0.1:0',
    observability: { listen: '127.0.0.1:0' },
    serviceBus: { connectionString: peer.connectionString(), queue: INBOX, replies: REPLIES },
    signingKey: keys.signingKey,
    fleetKey: keys.fleetKey,
    ...over,
  };
}

/** localRelayConfig: the same, validated (its keys and addresses decoded). */
export function localRelayConfig(peer: AmqpPeer, keys: FleetKeys, over: Record<string, unknown> = {}): RelayConfig {
  return RelayConfig.parse(localRelayInput(peer, keys, over));
}

/** localInbox: a bridge's `approval` section for the peer, with the link key of `session`. */
export function localInbox(peer: AmqpPeer, keys: FleetKeys, session: string, relayUrl: string): Record<string, unknown> {
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
