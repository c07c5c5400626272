/**
 * The public API of scheduled-events-bridge, for sinks written outside it:
 *
 *   import { defineSink, delivered, retry, reject } from 'scheduled-events-bridge';
 *
 * A sink module exports `defineSink({ name, configSchema, create })` as its default export and
 * is named in the configuration with `type: module` and `module: ./my-sink.js` (or a package
 * name). docs/architecture.md, "Adding a sink", shows one end to end.
 */
export { defineSink, delivered, reject, retry } from './sinks/contract.ts';
export type {
  ApprovalLinks,
  BridgeEvent,
  ExternalSink,
  Outcome,
  SendOptions,
  Sink,
  SinkContext,
  SinkState,
  StandardSchema,
} from './sinks/contract.ts';
export type { EventData } from './pipeline/cloudevent.ts';
export type { TransitionKind } from './pipeline/diff.ts';
export { transitionOf } from './pipeline/cloudevent.ts';
