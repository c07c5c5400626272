/**
 * The relay's configuration: where it listens, its Service Bus queues, its keys, the API secrets
 * and Slack settings, checked as a whole (the public key must be the signing key's).
 */
import { createPublicKey } from 'node:crypto';
import { z } from 'zod';
import { keyOf, whsec } from '../lib/standard-webhooks.ts';
import { serverSettings } from '../lib/server-settings.ts';
import { addressOf, hostPort, secret } from '../lib/validators.ts';
import { azureAuth, requireOneAuth } from '../azure/messaging.ts';
import { ed25519Private, ed25519Public, publicKeyOf, keyBytes, privateKeyOf, sharedQueues } from '../fleet/keys.ts';
import { SlackSettings } from '../approval/slack.ts';
import { secretsOf, SinksConfig } from '../config/schema.ts';
import { AzureFeedConfig, ReadKeys, RelayFleetConfig } from './fleet-config.ts';
import { ConsoleConfig } from './console-config.ts';
import { DigestConfig } from './digest-config.ts';
import { recordKeyOf } from '../fleet/view/seal.ts';

export const RelayConfig = z
  .strictObject({
    listen: hostPort.default('0.0.0.0:8080').describe('Where the relay listens (behind the load balancer or ingress that terminates TLS).'),
    serviceBus: z
      .strictObject({
        ...azureAuth('a Service Bus'),
        ...sharedQueues('relay'),
      })
      .superRefine(requireOneAuth)
      .optional()
      .describe(
        "Approvals to members: commands out on the inbox queue, outcomes back on the replies queue. Without it, the relay serves the fleet view, Azure's feed and approvals via arm only.",
      ),
    signingKey: secret(ed25519Private)
      .optional()
      .describe('Ed25519 private key that signs commands (`se-bridge fleet keys`); required with serviceBus.'),
    publicKey: ed25519Public
      .optional()
      .describe("The public key of signingKey (the bridges' relayPublicKey); when set, the relay refuses to start if it does not match."),
    fleetKey: secret(keyBytes)
      .optional()
      .describe("The fleet key every VM's link key is derived from (`se-bridge fleet keys`); required with serviceBus."),
    apiSecrets: z
      .array(secret(whsec))
      .default([])
      .describe('Standard Webhooks secrets that sign POST /v1/approvals (several while rotating).'),
    slack: SlackSettings.optional().describe(
      "A Slack app's signing secret: enables POST /v1/slack/interactions (the app's one Request URL).",
    ),
    replyWaitMs: z
      .number()
      .int()
      .min(0)
      .max(25_000)
      .default(5000)
      .describe("How long a request waits for the VM's outcome before the answer is 202 with a tracking id."),
    commandTtlSeconds: z
      .number()
      .int()
      .min(60)
      .max(86_400)
      .default(900)
      .describe("Longest life of an approval command (never past a link's own expiry)."),
    sendTimeoutMs: z
      .number()
      .int()
      .min(100)
      .max(15_000)
      .default(8000)
      .describe("How long sending one command to Service Bus may take before the answer is 503 (well below a client's patience)."),
    ...serverSettings({ what: 'the relay', perSecond: 50, burst: 100, maxConnections: 1024, maxConnectionsPerClient: 128, most: 100_000 }),
    fleet: RelayFleetConfig.optional(),
    readKeys: ReadKeys,
    console: ConsoleConfig.optional(),
    azure: AzureFeedConfig.optional(),
    sinks: SinksConfig.default([]).describe(
      "Where the relay's own CloudEvents go (azure.scheduledevent.unwatched): the bridge's sink types.",
    ),
    digest: DigestConfig.optional().describe(
      "The chat digest: what is coming in the fleet's next hours, by group, posted to the relay's Slack or Teams sinks every period and updated in place (docs/fleet-console.md).",
    ),
    observability: z
      .strictObject({
        listen: z
          .union([hostPort, z.literal('off')])
          .default('127.0.0.1:9464')
          .describe("Where /livez, /readyz and /metrics listen, or off; 0.0.0.0:9464 for a pod's probes or a scraper on another host."),
      })
      .prefault({})
      .describe('/livez, /readyz and /metrics on a listener of their own, which approval clients cannot crowd out ("off": none).'),
    log: z
      .strictObject({
        level: z
          .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
          .default('info')
          .describe('The least severe level logged. Env LOG_LEVEL overrides it.'),
      })
      .prefault({}),
  })
  .superRefine((c, ctx) => {
    const need = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
    if (c.serviceBus === undefined && c.fleet === undefined)
      need('serviceBus', 'set serviceBus (approvals to members) or fleet (the fleet view): the relay has nothing to serve');
    if (c.serviceBus !== undefined && c.signingKey === undefined)
      need('signingKey', 'is required with serviceBus: it signs every approval command');
    if (c.serviceBus !== undefined && c.fleetKey === undefined)
      need('fleetKey', "is required with serviceBus: every VM's link key is derived from it");
    if (c.serviceBus === undefined && c.slack !== undefined) need('slack', 'needs serviceBus: a Slack approval goes to the VM through it');
    if (c.publicKey !== undefined && c.signingKey === undefined) need('publicKey', 'needs signingKey, whose public key it is');
    if (c.azure !== undefined && c.fleet === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['azure'],
        message: "needs fleet: Azure's events are matched to the members' records in its store",
      });
    if (c.azure !== undefined && c.azure.recordKey === undefined && c.fleetKey === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['azure', 'recordKey'],
        params: { reads: ['fleetKey'] },
        message:
          "is required without fleetKey: the relay seals Azure's records in the store, which every member may write, with a key no member holds (se-bridge fleet keys prints one)",
      });
    if (c.readKeys.length > 0 && c.fleet === undefined)
      ctx.addIssue({ code: 'custom', path: ['readKeys'], message: 'need fleet: the read API reads its store' });
    if (c.console !== undefined && c.fleet === undefined)
      ctx.addIssue({ code: 'custom', path: ['console'], message: "needs fleet: the console shows the members' records in its store" });
    digestProblems(c, ctx);
    if (c.publicKey === undefined || c.signingKey === undefined) return;
    const mine = privateKeyOf(c.signingKey);
    const theirs = publicKeyOf(c.publicKey);
    if (mine === null || theirs === null) return; // reported by the keys' own checks
    const derived = createPublicKey(mine).export({ type: 'spki', format: 'der' });
    if (!derived.equals(theirs.export({ type: 'spki', format: 'der' }))) {
      ctx.addIssue({
        code: 'custom',
        path: ['publicKey'],
        // compared with signingKey: a command that leaves signingKey unresolved leaves this unchecked
        params: { reads: ['signingKey'] },
        message:
          'is not the public key of signingKey: the bridges would refuse every command (se-bridge fleet public-key prints the right one)',
      });
    }
  })
  // decoded once: where the relay and its probes listen, and the keys that verify POST /v1/approvals
  .transform((c) => ({
    ...c,
    // approvals to members: Service Bus with the keys it needs, together or not at all
    bus:
      c.serviceBus === undefined || c.signingKey === undefined || c.fleetKey === undefined
        ? null
        : { ...c.serviceBus, signingKey: c.signingKey, fleetKey: c.fleetKey },
    // the key of Azure's records: its own, else derived from the fleet key
    recordKey: c.azure === undefined ? null : recordKeyOf({ recordKey: c.azure.recordKey, fleetKey: c.fleetKey }),
    // the key of the digest's record: the same
    digestKey: c.digest === undefined ? null : recordKeyOf({ recordKey: c.azure?.recordKey, fleetKey: c.fleetKey }),
    at: addressOf(c.listen),
    observability: { ...c.observability, at: c.observability.listen === 'off' ? null : addressOf(c.observability.listen) },
    apiKeys: c.apiSecrets.map(keyOf),
  }));
export type RelayConfig = z.infer<typeof RelayConfig>;

/** digestProblems: the digest needs the fleet, a key to seal its record with, and chat sinks of the relay's own by name. */
function digestProblems(
  c: {
    digest?: DigestConfig | undefined;
    fleet?: unknown;
    fleetKey?: string | undefined;
    azure?: { recordKey?: string | undefined } | undefined;
    sinks: readonly { name: string; type: string }[];
  },
  ctx: z.RefinementCtx,
): void {
  const d = c.digest;
  if (d === undefined) return;
  if (c.fleet === undefined)
    ctx.addIssue({ code: 'custom', path: ['digest'], message: "needs fleet: the digest says what the members' records in its store say" });
  if (c.fleetKey === undefined && c.azure?.recordKey === undefined)
    ctx.addIssue({
      code: 'custom',
      path: ['digest'],
      message:
        'needs fleetKey or azure.recordKey: the relay seals the record of its digest messages in the store, which every member may write',
    });
  d.sinks.forEach((name, i) => {
    const sink = c.sinks.find((s) => s.name === name);
    if (sink === undefined) ctx.addIssue({ code: 'custom', path: ['digest', 'sinks', i], message: `names no sink of the relay's sinks` });
    else if (sink.type !== 'slack' && sink.type !== 'teams')
      ctx.addIssue({
        code: 'custom',
        path: ['digest', 'sinks', i],
        message: `is a ${sink.type} sink: the digest goes to a slack or teams sink`,
      });
    if (d.sinks.indexOf(name) !== i) ctx.addIssue({ code: 'custom', path: ['digest', 'sinks', i], message: 'is named twice' });
  });
}
/** RelayBusConfig: Service Bus and the keys of approvals to members, when the relay has them. */
export type RelayBusConfig = NonNullable<RelayConfig['bus']>;
/** relaySecrets: what the relay's logs must never show. */
export function relaySecrets(c: RelayConfig): string[] {
  const store = c.fleet?.store;
  return [
    ...[c.serviceBus?.connectionString, c.signingKey, c.fleetKey, ...c.apiSecrets, c.slack?.signingSecret],
    ...[
      ...c.readKeys,
      ...(c.console?.keys ?? []).map((k) => k.key),
      c.console?.sessionKey,
      c.azure?.eventGrid?.key,
      c.azure?.recordKey,
      store?.type === 'blob' ? store.connectionString : undefined,
    ],
    // the relay's own sinks' secrets, found as a bridge's are
    ...secretsOf({ sinks: c.sinks }),
  ].filter((s): s is string => typeof s === 'string' && s.length >= 6);
}
