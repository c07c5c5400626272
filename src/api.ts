/**
 * The public API of scheduled-events-bridge, for sinks written outside it, and the only part of
 * the bridge its own sinks (the top-level `sinks/` folder) may import:
 *
 *   import { defineSink, delivered, retry, reject } from 'scheduled-events-bridge';
 *
 * A sink module exports `defineSink({ name, configSchema, create })` as its default export and
 * is named in the configuration with `type: module` and `module: ./my-sink.js` (or a package
 * name). docs/architecture.md, "Adding a sink", shows one end to end. Everything below the
 * contract is what the built-in sinks are made of, there for any sink to use.
 */

// ----- the contract: a sink, its outcomes, its context --------------------------------------
export { defineSink, delivered, deliveredWith, reject, retry, oneByOne } from './sinks/contract.ts';
export type {
  ApprovalLinks,
  BridgeEvent,
  ExternalSink,
  ImdsRead,
  ImdsReads,
  Outcome,
  PreparationState,
  Preview,
  SendOptions,
  Sink,
  SinkConfigBase,
  SinkContext,
  SinkMetrics,
  SinkModule,
  SinkState,
  StandardSchema,
} from './sinks/contract.ts';
/** The configuration keys every sink has, and the shared validators of a sink's own keys. */
export {
  allowInsecureHttp,
  DeliveryConfig,
  FilterConfig,
  httpUrl,
  isLoopback,
  ProxySetting,
  refusePlainHttpCredentials,
  secret,
  sinkBase,
} from './sinks/contract.ts';
export { cidrList, hostPort, parseHostPort } from './lib/validators.ts';
export { Cidrs } from './lib/client-address.ts';

// ----- events --------------------------------------------------------------------------------
export type { EventData } from './pipeline/cloudevent.ts';
export type { TransitionKind } from './pipeline/diff.ts';
export type { ScheduledEvent } from './imds/wire.ts';
export { transitionOf } from './pipeline/cloudevent.ts';
export { matchesFilter } from './pipeline/filter.ts';

// ----- the outcome classifier: HTTP statuses, network and Azure SDK errors -------------------
export { classifyAzureError, classifyHttpStatus, classifyNetworkError, printable } from './sinks/classify.ts';

// ----- CloudEvents protocol bindings: HTTP (binary, structured) and AMQP --------------------
export { HTTP, percentEncode, type HttpMessage } from './cloudevents/http.ts';
export { AMQP, toAmqpPayload, type AmqpPayload } from './cloudevents/amqp.ts';
export { STRUCTURED_CONTENT_TYPE, type Binding, type BindingMode } from './cloudevents/binding.ts';

// ----- Azure: Entra ID tokens, credentials, Service Bus and Event Hubs ----------------------
export { BearerSource, credentialOf, EntraAuth } from './azure/entra.ts';
export { createCredential, CredentialConfig } from './azure/credentials.ts';
export { azureAuth, entityPathOf, requireOneAuth, sdkOptions, serviceBusClient } from './azure/messaging.ts';

// ----- the chat presentation: one model, Slack blocks, a Teams card, a text line -------------
export { toChatMessage } from './present/chat-model.ts';
export { slackMessage, threadLine } from './present/slack-blocks.ts';
export { teamsMessage } from './present/teams-card.ts';
export { formatEventLine } from './present/text-line.ts';

// ----- HTTP: the client, a guarded server, Standard Webhooks signatures ---------------------
export { HttpClient, type HttpResponse } from './lib/http-client.ts';
export { text as responseText } from './lib/http-body.ts';
export { createGuardedServer, DEFAULT_SERVER_LIMITS, listen } from './lib/http-server.ts';
export { secretKey, signatureHeaders, whsec } from './lib/standard-webhooks.ts';

// ----- the rest: errors with stable codes, time, the version --------------------------------
export { BridgeError, type Code } from './lib/errors.ts';
export { sleep, withDeadline } from './lib/time.ts';
export { VERSION } from './lib/version.ts';
