/**
 * `scheduled-events-bridge/kit`: what the built-in sinks are made of, there for any sink to use:
 * the CloudEvents bindings, the outcome classifiers, Azure credentials and clients, the chat
 * presentation, HTTP (a client, a guarded server, Standard Webhooks signatures) and a few
 * validators. Unlike the package root (the sink contract, src/api.ts), it may change in a minor
 * release: pin the version of a sink that imports it.
 *
 *   import { classifyHttpStatus, HttpClient } from 'scheduled-events-bridge/kit';
 */

// ----- keys and validators of the HTTP sinks -------------------------------------------------
export { allowInsecureHttp, isLoopback, ProxySetting, refusePlainHttpCredentials } from './lib/http-settings.ts';
export { cidrList, hostPort, parseHostPort } from './lib/validators.ts';
export { Cidrs } from './lib/client-address.ts';

// ----- the outcome classifier: HTTP statuses, network and Azure SDK errors -------------------
export { classifyAzureError, classifyHttpStatus, classifyNetworkError } from './sinks/classify.ts';
export { printable } from './lib/printable.ts';
export { table } from './lib/table.ts';

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
export { digestSlack, digestTeams } from './present/digest.ts';
export { formatEventLine } from './present/text-line.ts';

// ----- HTTP: the client, a guarded server, Standard Webhooks signatures ---------------------
export { HttpClient, type HttpResponse } from './lib/http-client.ts';
export { text as responseText } from './lib/http-body.ts';
export { createGuardedServer, DEFAULT_SERVER_LIMITS, listen } from './lib/http-server.ts';
export { secretKey, signatureHeaders, whsec } from './lib/standard-webhooks.ts';

// ----- Kubernetes: where the API is (a kubeconfig, or the in-cluster service account) -------
// the client itself is loaded by openKube, only when a configuration talks to Kubernetes
export type { KubeApiError, KubeConfigError, KubeConnection, KubeListRequest, KubeRequest, ListFold } from './kube/client.ts';
export { NOT_CONFIGURED } from './lib/errors.ts';

/** openKube: the kubeconfig file, or the in-cluster service account (null when neither is there); loads the client. */
export async function openKube(kubeconfig: string | undefined): Promise<import('./kube/client.ts').KubeConnection | null> {
  return (await import('./kube/client.ts')).KubeConnection.open(kubeconfig);
}

// ----- time ----------------------------------------------------------------------------------
export { sleep, withDeadline } from './lib/time.ts';

// ----- commands: a command's processes, started as a group and stopped as one ---------------
export { killTree, ownGroup } from './lib/process-tree.ts';
