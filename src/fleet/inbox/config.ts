/**
 * The approval inbox's configuration (`approval.inbox`): the Service Bus queues and how to reach
 * them, the relay's public key, this VM's link key and session.
 */
import { z } from 'zod';
import { azureAuth, requireOneAuth } from '../../azure/messaging.ts';
import { secret } from '../../lib/validators.ts';
import { decodeKey, ed25519Public, keyBytes, sessionFor, sessionIdOf, sharedQueues } from '../keys.ts';

export const InboxConfig = z
  .strictObject({
    ...azureAuth('a Service Bus'),
    ...sharedQueues('inbox'),
    relayPublicKey: ed25519Public.describe(
      "The relay's public key (se-bridge fleet keys, publicKey): commands signed with anything else are dead-lettered.",
    ),
    linkKey: secret(keyBytes).describe("This VM's link key (`se-bridge fleet link-key`): signs its links' tokens and its outcomes."),
    sessionId: z
      .string()
      .min(1)
      .max(1024)
      .optional()
      .describe("This VM's session; default its resource id, or its name without one (lower-cased; hashed past 128 characters)."),
  })
  .superRefine(requireOneAuth)
  // the link key decoded once: it signs this VM's link tokens and its outcomes
  .transform((c) => ({ ...c, linkKeyBytes: decodeKey(c.linkKey) }));
export type InboxConfig = z.infer<typeof InboxConfig>;

/** inboxSession: the configured session id, or the VM's own. */
export function inboxSession(config: InboxConfig, vm: { resourceId: string | null; name: string }): string {
  return config.sessionId !== undefined ? sessionFor(config.sessionId) : sessionIdOf(vm);
}
