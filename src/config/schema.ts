/**
 * The configuration schema: the single source of truth for what `bridge.yaml` may hold.
 * `se-bridge schema` prints the JSON Schema derived from it, and `config/bridge.example.yaml`
 * documents every key. Unknown keys are rejected everywhere.
 */
import { platform } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { SINK_CONFIG_SCHEMAS } from '../registry/sinks.ts';
import { keyOf, whsec } from '../lib/standard-webhooks.ts';
import { httpUrl, secret } from '../lib/validators.ts';
import { markedSecrets } from './marked-secrets.ts';
import { ObservabilityConfig, ServerConfig } from './endpoints.ts';
import { Rule } from '../approval/policy.ts';
import { InboxConfig } from '../fleet/inbox/config.ts';
import { FleetConfig } from '../fleet/budget/config.ts';
import { HealthConfig } from '../health/config.ts';
import { CalendarConfig } from '../calendar/config.ts';
import { SlackSettings } from '../approval/slack.ts';
import { IMDS_ENDPOINT } from '../imds/client.ts';
import type { IdentityOverride } from '../imds/identity.ts';

function defaultStatePath(): string {
  return platform() === 'win32'
    ? join(process.env.ProgramData ?? 'C:\\ProgramData', 'se-bridge', 'state.db')
    : '/var/lib/se-bridge/state.db';
}

export const ImdsConfig = z.strictObject({
  endpoint: httpUrl.default(IMDS_ENDPOINT).describe('Base URL of IMDS. Env SE_BRIDGE_IMDS_ENDPOINT overrides it.'),
  pollIntervalMs: z
    .number()
    .int()
    .min(200)
    .max(60_000)
    .default(1000)
    .describe('How often to read the Scheduled Events document. All IMDS calls share a 5 requests/s budget.'),
  maxRetryPauseMs: z
    .number()
    .int()
    .min(200)
    .max(60_000)
    .default(5000)
    .describe(
      'Longest pause between two reads after failed ones (the pause grows with jitter from the poll interval up to this; never below the interval). A Spot eviction gives 30 s of notice.',
    ),
  requestTimeoutMs: z
    .number()
    .int()
    .min(100)
    .max(120_000)
    .default(5000)
    .describe('Timeout of one IMDS request once Scheduled Events answered at least once.'),
  firstRequestTimeoutMs: z
    .number()
    .int()
    .min(100)
    .max(600_000)
    .default(120_000)
    .describe('Timeout of the very first request: the one that enables Scheduled Events may take 2 minutes.'),
});

const StateConfig = z.strictObject({
  path: z.string().min(1).default(defaultStatePath).describe('SQLite database holding the last document, the outbox and dead letters.'),
});

const LogConfig = z.strictObject({
  level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').describe('Env LOG_LEVEL overrides it.'),
});

const IdentityConfig = z.strictObject({
  vmName: z.string().min(1).optional().describe("This VM's name, instead of instance metadata's."),
  resourceId: z.string().min(1).optional().describe("This VM's ARM resource id: the CloudEvents' source and the fleet session."),
  vmScaleSetName: z.string().min(1).optional().describe('The scale set this VM belongs to.'),
  subscriptionId: z.string().min(1).optional().describe("The subscription's id."),
  resourceGroupName: z.string().min(1).optional().describe("The resource group's name."),
  location: z.string().min(1).optional().describe('The Azure region.'),
  zone: z.string().min(1).optional().describe('The availability zone.'),
});

export const SinkConfig = z.discriminatedUnion('type', SINK_CONFIG_SCHEMAS);
export type SinkConfig = z.infer<typeof SinkConfig>;

/** Cross-field rules run even when other keys have problems, so that every problem is reported at once. */
const ALWAYS = { when: () => true };

/** Sinks: each name once (it keys the outbox, the metrics and the logs). */
export const SinksConfig = z
  .array(SinkConfig)
  .superRefine((sinks, ctx) => {
    const seen = new Map<string, number>();
    (Array.isArray(sinks) ? sinks : []).forEach((sink: unknown, i) => {
      const name = (sink as { name?: unknown } | null)?.name;
      if (typeof name !== 'string') return;
      const first = seen.get(name);
      if (first === undefined) seen.set(name, i);
      else ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate sink name "${name}" (also sinks[${first}])` });
    });
  }, ALWAYS)
  .meta({ description: 'The sinks; every name must be unique.' });

const ApprovalConfig = z
  .strictObject({
    secret: secret(whsec)
      .optional()
      .describe('Signs approval links and verifies POST /v1/approvals (Standard Webhooks). Enables the approval server.'),
    publicUrl: httpUrl.optional().describe('The base URL people reach the approval server at; approval links start with it.'),
    slack: SlackSettings.optional().describe("A Slack app's signing secret: enables POST /v1/slack/interactions."),
    rules: z.array(Rule).default([]).describe('Ordered rules, first match wins; default: await (a human decides).'),
    linkTtlSeconds: z
      .number()
      .int()
      .min(60)
      .max(7 * 86400)
      .default(86400)
      .describe('Longest life of an approval link; never past NotBefore.'),
    inbox: InboxConfig.optional().describe('Fleet approvals: approval commands arrive from the relay over Service Bus (no inbound port).'),
    relayUrl: httpUrl
      .optional()
      .describe("The relay's public URL: links and Slack buttons point there, with tokens signed by inbox.linkKey."),
  })
  // links and Slack buttons carry tokens that approval.secret signs
  .superRefine((a, ctx) => {
    if (a?.publicUrl !== undefined && a.secret === undefined)
      ctx.addIssue({ code: 'custom', path: ['secret'], message: 'is required with approval.publicUrl (it signs the links)' });
    if (a?.slack !== undefined && a.secret === undefined)
      ctx.addIssue({ code: 'custom', path: ['secret'], message: 'is required with approval.slack (it signs the button tokens)' });
    if (a?.relayUrl !== undefined && a.inbox === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['inbox'],
        message: 'is required with approval.relayUrl (its linkKey signs the links, and commands arrive through it)',
      });
    if (a?.relayUrl !== undefined && a.publicUrl !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['publicUrl'],
        message: 'goes with the approval server; with approval.relayUrl, links point at the relay',
      });
  }, ALWAYS)
  .meta({ dependentRequired: { publicUrl: ['secret'], slack: ['secret'], relayUrl: ['inbox'] } })
  // the secret decoded once: the key that signs links and verifies approval requests, or null
  .transform((a) => ({ ...a, key: a.secret === undefined ? null : keyOf(a.secret) }));

export const BridgeConfig = z.strictObject({
  imds: ImdsConfig.prefault({}),
  state: StateConfig.prefault({}),
  sinks: SinksConfig.default([]),
  log: LogConfig.prefault({}),
  identity: IdentityConfig.prefault({}),
  approval: ApprovalConfig.prefault({}),
  server: ServerConfig.prefault({}),
  observability: ObservabilityConfig.prefault({}),
  fleet: FleetConfig.optional().describe(
    "The fleet: this VM's record in its group's store (the fleet view the relay reads) and, with maxUnavailable, the group's budget: early approvals never take more members down at once than it allows.",
  ),
  calendar: CalendarConfig.optional().describe(
    'When early approval is allowed: windows (for rules with within: windows) and blackouts (no early approval but a forced one), in one time zone.',
  ),
  health: HealthConfig.optional().describe(
    "This VM's health checks without a fleet budget (with one, write them under fleet.health): the probe sink's `health: true` waits for them.",
  ),
});
export type BridgeConfig = z.infer<typeof BridgeConfig>;

/** identityOverride: what the configuration says of this VM (identity.*), as the override of instance metadata. */
export function identityOverride(i: BridgeConfig['identity']): IdentityOverride {
  return {
    name: i.vmName,
    resourceId: i.resourceId,
    vmScaleSetName: i.vmScaleSetName,
    subscriptionId: i.subscriptionId,
    resourceGroupName: i.resourceGroupName,
    location: i.location,
    zone: i.zone,
  };
}

/** jsonSchema is the JSON Schema of the configuration file (what users write, defaults included). */
export function jsonSchema(): Record<string, unknown> {
  return {
    ...(nullIsAbsent(z.toJSONSchema(BridgeConfig, { io: 'input', unrepresentable: 'any' })) as Record<string, unknown>),
    title: 'scheduled-events-bridge configuration',
  };
}

/**
 * nullIsAbsent says in the JSON Schema what the loader does: a key written with no value
 * (`identity:` followed only by comments) is null in YAML and counts as absent, so every object
 * property also takes null. Array items do not.
 */
export function nullIsAbsent(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(nullIsAbsent);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    out[k] =
      k === 'properties' && v !== null && typeof v === 'object'
        ? Object.fromEntries(Object.entries(v).map(([name, p]) => [name, { anyOf: [nullIsAbsent(p), { type: 'null' }] }]))
        : nullIsAbsent(v);
  }
  return out;
}

/** everyString visits each string inside a value. */
export function everyString(v: unknown, visit: (s: string) => void): void {
  if (typeof v === 'string') visit(v);
  else if (Array.isArray(v)) v.forEach((x) => everyString(x, visit));
  else if (v !== null && typeof v === 'object') Object.values(v).forEach((x) => everyString(x, visit));
}

/**
 * secretsOf collects the values a log line or a stored failure reason must never show: every
 * value the schema marks as a secret (`secret(...)`, `writeOnly` in the JSON Schema) with, for
 * URLs, their path and query values; and of any other URL, its password and query values.
 * Longest first, so that a secret containing another is scrubbed whole.
 */
export function secretsOf(config: unknown): string[] {
  const out = new Set<string>();
  const addUrlParts = (v: string, whole: boolean) => {
    if (!/^https?:\/\//i.test(v)) return;
    try {
      const u = new URL(v);
      if (u.password) out.add(u.password);
      // a webhook URL is a credential in itself: its path is as secret as the whole
      if (whole && u.pathname.length >= 8) out.add(u.pathname);
      for (const value of u.searchParams.values()) if (value.length >= 6) out.add(value);
    } catch {
      /* not a URL */
    }
  };
  for (const marked of markedSecrets(BridgeConfig, config)) {
    everyString(marked.value, (v) => {
      if (v.length >= 6) out.add(v);
      addUrlParts(v, true);
    });
  }
  everyString(config, (v) => addUrlParts(v, false));
  return [...out].sort((a, b) => b.length - a.length);
}
