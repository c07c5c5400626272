/**
 * The public API of scheduled-events-bridge: the sink contract. With `scheduled-events-bridge/kit`
 * (src/kit.ts) it is all a sink may import, the built-in ones (the top-level `sinks/` folder)
 * included:
 *
 *   import { defineSink, delivered, retry, reject } from 'scheduled-events-bridge';
 *
 * A sink module exports `defineSink({ name, configSchema, create })` as its default export and
 * is named in the configuration with `type: module` and `module: ./my-sink.js` (or a package
 * name). docs/architecture.md, "Adding a sink", shows one end to end. What is here follows
 * semantic versioning: a name is removed or changes meaning only in a major release.
 */

// ----- the contract: a sink, its outcomes, its context --------------------------------------
export { defineSink, delivered, deliveredWith, reject, retry, oneByOne } from './sinks/contract.ts';
export type {
  ApprovalLinks,
  BridgeEvent,
  DrillMode,
  ExternalSink,
  HealthState,
  HealthView,
  ImdsRead,
  ImdsReads,
  Outcome,
  PreparationState,
  Preview,
  Rehearsal,
  RehearsalOptions,
  SendOptions,
  Sink,
  SinkConfigBase,
  SinkContext,
  SinkMetrics,
  SinkModule,
  SinkState,
  StandardSchema,
} from './sinks/contract.ts';
/** The configuration keys every sink has, and the validators of a sink's own keys every sink uses. */
export { DeliveryConfig, FilterConfig, httpUrl, secret, sinkBase } from './sinks/contract.ts';

// ----- events --------------------------------------------------------------------------------
export type { EventData } from './pipeline/cloudevent.ts';
export type { FleetDigest } from './present/digest.ts';
export type { TransitionKind } from './pipeline/diff.ts';
export type { ScheduledEvent } from './imds/wire.ts';
export { transitionOf } from './pipeline/cloudevent.ts';
export { matchesFilter } from './pipeline/filter.ts';

// ----- errors with stable codes, the version -------------------------------------------------
export { BridgeError, type Code } from './lib/errors.ts';
export { VERSION } from './lib/version.ts';
