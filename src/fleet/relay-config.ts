/**
 * The relay's configuration: where it listens, its Service Bus queues, its keys, the API secrets
 * and Slack settings, checked as a whole (the public key must be the signing key's).
 */
import { createPublicKey } from 'node:crypto';
import { z } from 'zod';
import { whsec } from '../lib/standard-webhooks.ts';
import { hostPort, secret } from '../lib/validators.ts';
import { azureAuth, requireOneAuth } from '../azure/messaging.ts';
import { ed25519Private, ed25519Public, publicKeyOf, keyBytes, privateKeyOf } from './keys.ts';
import { SlackSettings } from '../approval/slack.ts';

export const RelayConfig = z.strictObject({
  /** Where the relay listens (behind the load balancer or ingress that terminates TLS). */
  listen: hostPort.default('0.0.0.0:8080'),
  serviceBus: z
    .strictObject({
      ...azureAuth('a Service Bus'),
      /** The bridges' inbox queue (sessions, duplicate detection): the relay Sends. */
      queue: z.string().min(1).default('se-bridge-approvals'),
      /** The outcomes queue (sessions): the relay Listens on its own session. */
      replies: z.string().min(1).default('se-bridge-approval-replies'),
    })
    .superRefine(requireOneAuth),
  /** Ed25519 private key that signs commands (`se-bridge fleet keys`). */
  signingKey: secret(ed25519Private),
  /** The public key the bridges hold (their approval.inbox.relayPublicKey): checked against signingKey at start. */
  publicKey: ed25519Public.optional(),
  /** The fleet key every VM's link key is derived from (`se-bridge fleet keys`). */
  fleetKey: secret(keyBytes),
  /** Standard Webhooks secrets that sign POST /v1/approvals (several while rotating). */
  apiSecrets: z.array(secret(whsec)).default([]),
  /** A Slack app's signing secret: enables POST /v1/slack/interactions (the app's one Request URL). */
  slack: SlackSettings.optional(),
  /** How long a request waits for the VM's outcome before the answer is 202 with a tracking id. */
  replyWaitMs: z.number().int().min(0).max(25_000).default(5000),
  /** Longest life of an approval command (never past a link's own expiry). */
  commandTtlSeconds: z.number().int().min(60).max(86_400).default(900),
  /** How long sending one command to Service Bus may take before the answer is 503 (well below a client's patience). */
  sendTimeoutMs: z.number().int().min(100).max(15_000).default(8000),
  rateLimit: z.strictObject({ perSecond: z.number().min(0.1).max(10_000).default(50), burst: z.number().int().min(1).max(100_000).default(100) }).prefault({}),
  maxConnections: z.number().int().min(1).max(100_000).default(1024),
  /** Open connections from one address at most (behind a proxy every client shares its address: raise it). */
  maxConnectionsPerClient: z.number().int().min(1).max(100_000).default(128),
  /** /livez, /readyz and /metrics on a listener of their own, which approval clients cannot crowd out ("off": none). */
  observability: z.strictObject({ listen: z.union([hostPort, z.literal('off')]).default('0.0.0.0:9464') }).prefault({}),
  log: z.strictObject({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info') }).prefault({}),
}).superRefine((c, ctx) => {
  if (c.publicKey === undefined) return;
  const mine = privateKeyOf(c.signingKey);
  const theirs = publicKeyOf(c.publicKey);
  if (mine === null || theirs === null) return; // reported by the keys' own checks
  const derived = createPublicKey(mine).export({ type: 'spki', format: 'der' });
  if (!derived.equals(theirs.export({ type: 'spki', format: 'der' }))) {
    ctx.addIssue({ code: 'custom', path: ['publicKey'], message: 'is not the public key of signingKey: the bridges would refuse every command (se-bridge fleet public-key prints the right one)' });
  }
});
export type RelayConfig = z.infer<typeof RelayConfig>;
/** relaySecrets: what the relay's logs must never show. */
export function relaySecrets(c: RelayConfig): string[] {
  return [c.serviceBus.connectionString, c.signingKey, c.fleetKey, ...c.apiSecrets, c.slack?.signingSecret].filter((s): s is string => typeof s === 'string' && s.length >= 6);
}
