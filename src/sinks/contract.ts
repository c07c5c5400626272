/**
 * The sink contract (docs/architecture.md, "The sink contract"). A sink module exports its `type`, its
 * zod config schema and `create`. A sink classifies what happened to each event (delivered,
 * retry with a reason, reject); trying again later, backoff, dead letters, the outbox and the
 * delivery metrics are the dispatcher's, alike for every sink, so a sink returns `retry` rather
 * than sleeping and sending again. Within one attempt a sink may wait for what it started (a
 * drain's evicted pods to go, a load balancer's probe to notice), bounded by the attempt's
 * deadline and aborted by its signal; what must outlive a restart goes in `context.state`.
 */
import { z } from 'zod';
import type { Logger } from 'pino';
import type { BridgeEvent } from '../pipeline/cloudevent.ts';
import type { FleetDigest } from '../present/digest.ts';
import { FilterConfig } from '../pipeline/filter.ts';
import type { VmIdentity } from '../imds/identity.ts';
import type { ScheduledEvent } from '../imds/wire.ts';
import type { Counter, Gauge, Histogram } from '../lib/prometheus.ts';
import { httpUrl, secret } from '../lib/validators.ts';

export type { BridgeEvent };
export { FilterConfig, httpUrl, secret };

/** Outcome is what happened to one event: the dispatcher decides what to do about it. */
export type Outcome =
  /** `detail` says what a preparation did ("node drained: 14 pods evicted"), for status and chat messages. */
  | { readonly status: 'delivered'; readonly detail?: string }
  | { readonly status: 'retry'; readonly reason: string; readonly retryAfterMs?: number }
  | { readonly status: 'reject'; readonly reason: string };

export const delivered: Outcome = Object.freeze({ status: 'delivered' });
/** deliveredWith: delivered, saying what was done. */
export const deliveredWith = (detail: string): Outcome => ({ status: 'delivered', detail });
export const retry = (reason: string, retryAfterMs?: number): Outcome =>
  retryAfterMs === undefined ? { status: 'retry', reason } : { status: 'retry', reason, retryAfterMs };
export const reject = (reason: string): Outcome => ({ status: 'reject', reason });

/** oneByOne sends `events` one at a time, in order, and collects one outcome per event: for sinks whose protocol takes one event per request. */
export async function oneByOne(
  events: readonly BridgeEvent[],
  send: (event: BridgeEvent, index: number) => Promise<Outcome>,
): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  for (const [i, event] of events.entries()) outcomes.push(await send(event, i));
  return outcomes;
}

export interface SendOptions {
  readonly signal: AbortSignal;
}

export interface Sink {
  /** The largest batch this instance accepts, when its configuration decides (overrides the module's). */
  readonly maxBatchSize?: number;
  /** How long one attempt may take, when the sink's configuration decides (overrides delivery.timeoutMs). */
  readonly attemptTimeoutMs?: number;
  /** send delivers `events` (at most `maxBatchSize`) and returns one outcome per event, in order. */
  send(events: readonly BridgeEvent[], options: SendOptions): Promise<Outcome[]>;
  /** digest, in a chat sink: posts the fleet's digest, or updates the message `ref` names; its outcome, and its message (null: one that cannot be updated). */
  digest?(d: FleetDigest, options: SendOptions & { readonly ref: string | null }): Promise<{ outcome: Outcome; ref: string | null }>;
  close(): Promise<void>;
}

/** SinkState is a sink's own small key-value memory in the bridge's store (it survives restarts). */
export interface SinkState {
  get(key: string): string | undefined;
  set(key: string, value: string): void;
}

export interface SinkContext {
  readonly logger: Logger;
  /** The stream the stdout sink writes to (process.stdout unless a test or the demo says otherwise). */
  readonly stdout: NodeJS.WritableStream;
  /** Per-sink state kept in the store, for sinks that must remember what they sent (Slack message ids). */
  readonly state?: SinkState;
  /** Approval links for events a human must decide on, when approvals are configured. */
  readonly approval?: ApprovalLinks;
  /** Who this VM is (its name in `Resources`, its ARM resource id), as the daemon knows it now. */
  readonly vm?: () => VmIdentity;
  /** Every successful IMDS read, for sinks whose state follows what IMDS lists (the probe). */
  readonly reads?: ImdsReads;
  /** The daemon's metrics registry, for sinks that export their own series. */
  readonly metrics?: SinkMetrics;
  /** What the preparations did for an event, for chat sinks that tell the story. */
  readonly preparations?: (eventId: string) => readonly PreparationState[];
  /**
   * Whether an event is a drill's (`se-bridge drill`), and how its preparations play: rehearse
   * (say what would be done, change nothing) or real; null for a real event.
   */
  readonly drill?: (eventId: string) => DrillMode | null;
  /** This VM's health checks (`health`, or `fleet.health`), when configured: the probe waits for them (`health: true`). */
  readonly health?: HealthView;
}

/** This VM's health as its checks last found it: since when (ISO), and why not when not. */
export type HealthState = { readonly healthy: boolean; readonly since: string; readonly detail?: string };

/** The health checks' view: the state as last checked (null before the first), and every check as it is made. */
export type HealthView = { readonly state: HealthState | null; subscribe(listener: (state: HealthState) => void): () => void };

/** How a drill's preparations play. */
export interface DrillMode {
  readonly prepare: 'rehearse' | 'real';
}

/**
 * One successful IMDS read: the events it listed, and this VM's name at the time, or null while
 * the VM does not know its name (instance metadata could not be read): then a preparation treats
 * every listed event as possibly its own.
 */
export interface ImdsRead {
  readonly events: readonly ScheduledEvent[];
  readonly vmName: string | null;
}

export interface ImdsReads {
  /** subscribe calls `listener` after every successful IMDS read (changed or not); it returns the unsubscribe. */
  subscribe(listener: (read: ImdsRead) => void): () => void;
  /** last: the latest successful read since start, or null before the first. */
  last(): ImdsRead | null;
}

/** SinkMetrics hands out metric families by name (the same family to every sink that asks for it). */
export interface SinkMetrics {
  counter(name: string, help: string, labelNames: readonly string[]): Counter;
  gauge(name: string, help: string, labelNames: readonly string[]): Gauge;
  histogram(name: string, help: string, labelNames: readonly string[], buckets: readonly number[]): Histogram;
}

/** Where one preparation stands for one event. */
export interface PreparationState {
  readonly sink: string;
  /** pending: not done yet; done: prepared; failed: dead-lettered; undone: given back after the maintenance. */
  readonly state: 'pending' | 'done' | 'failed' | 'undone';
  /** What the preparation said it did, or why it failed. */
  readonly detail: string | null;
  /** When the state was reached (ISO 8601), or null while pending. */
  readonly at: string | null;
}

export interface ApprovalLinks {
  /** The signed approval page link for a Scheduled event the policy leaves to a human, else null. */
  link(event: BridgeEvent): string | null;
  /** The signed token alone (the value of an interactive Slack button), else null. */
  token(event: BridgeEvent): string | null;
  /** Slack interactions are configured: bot messages carry interactive buttons. */
  readonly slackInteractive: boolean;
}

/** A sink type: `C` its configuration, `S` the schema that makes it (the registry unites every sink's schema by `type`). */
export interface SinkModule<C extends SinkConfigBase = SinkConfigBase, S extends z.ZodType<C> = z.ZodType<C>> {
  readonly type: string;
  readonly configSchema: S;
  /**
   * The stable codes the sink speaks in (log lines, dead-letter reasons), each with its meaning;
   * the registry merges them into the catalogue beside the core's (src/lib/errors.ts).
   */
  readonly codes?: Readonly<Record<string, string>>;
  /** The largest batch `send` accepts; 1 when the sink sends one event at a time. */
  readonly maxBatchSize: number;
  /** A sink that prepares the VM and gives it back (probe, kubernetes): it takes scheduled, updated, a started never seen before, completed and canceled, unless its filter names transition types. */
  readonly undoes?: boolean;
  create(config: C, context: SinkContext): Sink | Promise<Sink>;
  /**
   * Problems of a sink's raw configuration that its schema cannot see (a template that does not
   * compile), each as `key: what is wrong`. `validate` and start-up report them with the sink's path.
   */
  problems?(raw: Readonly<Record<string, unknown>>): Promise<string[]>;
  /**
   * What the sink would send for each event, without sending (`se-bridge template test`), or
   * null when it has nothing to show for this configuration.
   */
  preview?(config: C, approvalUrl: (event: BridgeEvent) => string | null): Promise<((event: BridgeEvent) => Promise<Preview>) | null>;
  /**
   * What a preparation would do to this VM now, changing nothing (`se-bridge prepare --dry-run`):
   * for a sink that prepares the VM and can ask its peer what would happen (a drain's dry-run
   * evictions).
   */
  rehearse?(config: C, options: RehearsalOptions): Promise<Rehearsal>;
  /**
   * The least notice a drill played with real preparations (`se-bridge drill --prepare real`)
   * needs for this sink to finish before its NotBefore (a drain: the longest grace and the
   * margin), and why; a drill with less is refused up front. Absent: any notice will do.
   */
  realDrillNotice?(config: C): { readonly seconds: number; readonly why: string };
  /** Whether a preparation of this configuration acts on an Advisory (a Spot rebalance recommendation: a risk, no maintenance); by default none does. */
  advisories?(config: C): boolean;
}

/** What a rehearsal is given. */
export interface RehearsalOptions {
  /** A maintenance this far ahead (ms) stands for NotBefore; null: none, as an event without one. */
  readonly noticeMs: number | null;
  /** Who this VM is, read from instance metadata when the sink asks, or null when it cannot be. */
  readonly vm: () => Promise<VmIdentity | null>;
  readonly signal: AbortSignal;
}

/** What a preparation would do now. */
export interface Rehearsal {
  /** Nothing would stop the preparation now. */
  readonly ready: boolean;
  /** One line: what it would do, or what would stop it. */
  readonly summary: string;
  /** For people: what it would do, and what would stop it (lines and tables). */
  readonly text: string;
  /** The same as data (`--json`). */
  readonly data: Readonly<Record<string, unknown>>;
}

/** What a sink would send for one event: a request, or the outcome it would have without sending (skipped, failed). */
export type Preview =
  /** `limit`: it failed because it ran past a limit (time, memory, size), at this configuration key. */
  | { readonly outcome: Outcome; readonly limit?: { readonly key: string; readonly message: string } }
  | {
      readonly method: string;
      readonly url: string;
      readonly headers: Readonly<Record<string, string>>;
      readonly body: string | null;
      readonly contentType: string;
    };

/** DeliveryConfig is the per-sink delivery policy the dispatcher applies. */
export const DeliveryConfig = z.strictObject({
  maxAttempts: z.number().int().min(1).max(1000).default(50).describe('Attempts before an event is dead-lettered.'),
  maxAgeMs: z
    .number()
    .int()
    .min(1000)
    .max(7 * 24 * 3600_000)
    .default(3600_000)
    .describe('The age at which an event is dead-lettered, whatever attempts are left.'),
  timeoutMs: z.number().int().min(100).max(3600_000).default(10_000).describe('The time one attempt may take.'),
  initialBackoffMs: z
    .number()
    .int()
    .min(10)
    .max(3600_000)
    .default(500)
    .describe('The first pause after a failed attempt; full-jitter exponential backoff from there.'),
  maxBackoffMs: z.number().int().min(10).max(3600_000).default(60_000).describe("The longest pause; it also bounds a sink's Retry-After."),
});
export type DeliveryConfig = z.infer<typeof DeliveryConfig>;

/** sinkBase holds the keys every sink has; each sink's schema spreads it. */
export const sinkBase = {
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'must be 1 to 64 letters, digits, ".", "_" or "-"')
    .describe('Unique among the sinks: it keys the outbox, the metrics and the logs.'),
  filter: FilterConfig.prefault({}),
  delivery: DeliveryConfig.prefault({}),
};

export interface SinkConfigBase {
  type: string;
  name: string;
  filter: FilterConfig;
  delivery: DeliveryConfig;
}

/**
 * StandardSchema is the validation interface zod, valibot and arktype all implement
 * (standardschema.dev): an external sink's config schema may come from any of them.
 */
export interface StandardSchema<Output = unknown> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    validate(value: unknown): StandardResult<Output> | Promise<StandardResult<Output>>;
  };
}
export type StandardResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: readonly { readonly message: string; readonly path?: readonly (PropertyKey | { readonly key: PropertyKey })[] }[] };

/**
 * ExternalSink is what a sink module from outside the bridge exports (`type: module` in the
 * configuration): a schema for its own `config` block, and `create`. The bridge gives it the
 * same SinkContext and the same delivery policy as every built-in sink.
 */
export interface ExternalSink<C = unknown> {
  /** A name for logs and metrics, e.g. "pagerduty". */
  readonly name: string;
  readonly configSchema: StandardSchema<C>;
  /** The largest batch `send` accepts (default 1). */
  readonly maxBatchSize?: number;
  create(config: C, context: SinkContext): Sink | Promise<Sink>;
}

const SINK_BRAND = Symbol.for('scheduled-events-bridge.sink');

/** defineSink declares an external sink module; export its result as the module's default export. */
export function defineSink<C>(sink: ExternalSink<C>): ExternalSink<C> {
  return Object.freeze({ ...sink, [SINK_BRAND]: true });
}
