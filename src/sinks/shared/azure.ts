/**
 * Shared parts of the Azure messaging sinks: connection strings, the authentication keys, the
 * Entra ID credential choice (loaded lazily, so @azure/identity is imported only when such a
 * sink is configured), the partition or session key, and the batching loop that fills SDK
 * batches, splits them when full, and turns each send into outcomes.
 */
import type { TokenCredential } from '@azure/core-auth';
import type { ServiceBusClient, ServiceBusClientOptions } from '@azure/service-bus';
import { z } from 'zod';
import { classifyAzureError } from './classify.ts';
import { IMDS_ENDPOINT } from '../../imds/client.ts';
import { delivered, reject, secret, type BridgeEvent, type Outcome } from '../contract.ts';

const uuid = z.guid('must be a GUID (8-4-4-4-12 hex digits)');
export const CredentialConfig = z.discriminatedUnion('kind', [
  /** The VM's managed identity: system-assigned, or a user-assigned one named by one of clientId, objectId or resourceId. */
  z
    .strictObject({
      kind: z.literal('managedIdentity'),
      clientId: uuid.optional(),
      objectId: uuid.optional(),
      resourceId: z.string().regex(/^\/subscriptions\/[^/]+\/resourceGroups\/[^/]+\/providers\/Microsoft\.ManagedIdentity\/userAssignedIdentities\/[^/]+$/i, 'must be a user-assigned identity resource id (/subscriptions/…/providers/Microsoft.ManagedIdentity/userAssignedIdentities/NAME)').optional(),
    })
    .refine((c) => [c.clientId, c.objectId, c.resourceId].filter((v) => v !== undefined).length <= 1, 'name a user-assigned identity by one of clientId, objectId or resourceId, not several'),
  /** DefaultAzureCredential: environment, workload identity, managed identity, Azure CLI… */
  z.strictObject({ kind: z.literal('default'), clientId: uuid.optional() }),
]);
export type CredentialConfig = z.infer<typeof CredentialConfig>;

/**
 * createCredential makes the Entra ID credential (@azure/identity is imported only now). The
 * managed identity is asked through IMDS (169.254.169.254), or through the host in
 * AZURE_POD_IDENTITY_AUTHORITY_HOST when that is set (the simulator, in tests and the demo).
 */
export async function createCredential(c: CredentialConfig): Promise<TokenCredential> {
  bypassProxyForTokenEndpoint(process.env);
  const identity = await import('@azure/identity');
  if (c.kind === 'default') return new identity.DefaultAzureCredential(c.clientId !== undefined ? { managedIdentityClientId: c.clientId } : {});
  if (c.clientId !== undefined) return new identity.ManagedIdentityCredential({ clientId: c.clientId });
  if (c.objectId !== undefined) return new identity.ManagedIdentityCredential({ objectId: c.objectId });
  if (c.resourceId !== undefined) return new identity.ManagedIdentityCredential({ resourceId: c.resourceId });
  return new identity.ManagedIdentityCredential();
}

/**
 * tokenEndpointFollowsImds points the managed identity credential at the configured IMDS (the
 * simulator, a test double) when `imds.endpoint` is not Azure's and the environment does not
 * already name a token endpoint (AZURE_POD_IDENTITY_AUTHORITY_HOST), and some part of `config`
 * uses an Entra ID credential. Returns the endpoint it set, or null.
 */
export function tokenEndpointFollowsImds(imdsEndpoint: string, config: unknown, env: NodeJS.ProcessEnv): string | null {
  const origin = new URL(imdsEndpoint).origin;
  if (origin === IMDS_ENDPOINT || env.AZURE_POD_IDENTITY_AUTHORITY_HOST || !usesEntraId(config)) return null;
  env.AZURE_POD_IDENTITY_AUTHORITY_HOST = origin;
  return origin;
}

/** usesEntraId: whether a configuration holds a credential (`{kind: managedIdentity | default}`) anywhere. */
export function usesEntraId(config: unknown): boolean {
  if (Array.isArray(config)) return config.some(usesEntraId);
  if (config === null || typeof config !== 'object') return false;
  const o = config as Record<string, unknown>;
  return o.kind === 'managedIdentity' || o.kind === 'default' || Object.values(o).some(usesEntraId);
}

/**
 * bypassProxyForTokenEndpoint adds the managed identity endpoint's host (169.254.169.254, or the
 * host of AZURE_POD_IDENTITY_AUTHORITY_HOST) to NO_PROXY. The Azure SDKs' HTTP pipeline honours
 * HTTP(S)_PROXY, and IMDS refuses requests that come through a proxy; the bridge's own IMDS
 * calls never use one. It must run before the SDK's first request, which reads NO_PROXY once.
 */
export function bypassProxyForTokenEndpoint(env: NodeJS.ProcessEnv): void {
  const hosts = [new URL(IMDS_ENDPOINT).hostname];
  try {
    if (env.AZURE_POD_IDENTITY_AUTHORITY_HOST) hosts.push(new URL(env.AZURE_POD_IDENTITY_AUTHORITY_HOST).hostname);
  } catch {
    // not a URL: @azure/identity reports it
  }
  const current = env.NO_PROXY || env.no_proxy || '';
  const list = current.split(',').map((h) => h.trim()).filter(Boolean);
  const missing = hosts.filter((h) => !list.includes(h));
  if (missing.length === 0) return;
  const value = [...list, ...missing].join(',');
  env.NO_PROXY = value;
  env.no_proxy = value;
}

/**
 * serviceBusClient makes a ServiceBusClient (the SDK is imported only now) from a connection
 * string, or from a namespace and an Entra ID credential (the VM's managed identity by default).
 */
export async function serviceBusClient(
  auth: { connectionString?: string | undefined; fullyQualifiedNamespace?: string | undefined; credential?: CredentialConfig | undefined },
  options: ServiceBusClientOptions,
): Promise<ServiceBusClient> {
  const sb = await import('@azure/service-bus');
  return auth.connectionString !== undefined
    ? new sb.ServiceBusClient(auth.connectionString, options)
    : new sb.ServiceBusClient(auth.fullyQualifiedNamespace!, await createCredential(auth.credential ?? { kind: 'managedIdentity' }), options);
}

const namespaceHost = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9.-]*(:\d{1,5})?$/, 'must be a host name such as myns.servicebus.windows.net');

/** entityPathOf reads EntityPath from an Azure connection string, if it has one. */
export function entityPathOf(connectionString: string): string | undefined {
  const m = /(?:^|;)\s*EntityPath=([^;]+)/i.exec(connectionString);
  return m?.[1]?.trim();
}

/** isConnectionString tells whether a string looks like an Azure messaging connection string. */
function isConnectionString(value: string): boolean {
  return /(?:^|;)\s*Endpoint=sb:\/\//i.test(value) && /SharedAccessKey(Name)?=|SharedAccessSignature=/i.test(value);
}

/** azureAuth: the keys of both sinks' authentication: a connection string, or a namespace and an Entra ID credential. */
export function azureAuth(service: string) {
  return {
    connectionString: secret(z.string().refine(isConnectionString, `must be ${service} connection string (Endpoint=sb://…;SharedAccessKeyName=…;SharedAccessKey=…)`)).optional(),
    fullyQualifiedNamespace: namespaceHost.optional(),
    credential: CredentialConfig.optional(),
  };
}

/** GroupBy: what keeps events together (an Event Hubs partition key, a Service Bus session): the EventId, the VM, or nothing. */
export const GroupBy = z.enum(['eventId', 'vmName', 'none']);

/** groupOf is the partition key or session id of an event. */
export function groupOf(by: z.infer<typeof GroupBy>, e: BridgeEvent): string | undefined {
  return by === 'eventId' ? e.subject : by === 'vmName' ? e.data?.vm.name : undefined;
}

/** A batch as both SDKs offer it. */
export interface SdkBatch<M> {
  readonly count: number;
  readonly maxSizeInBytes: number;
  tryAdd(message: M): boolean;
}

/**
 * sendInBatches sends `events` grouped by `groupOf` (events of one group share a batch, in
 * order), splitting a batch when it is full. An event too large for an empty batch is
 * rejected with the size it has and the size allowed. A failed send gives every event of that
 * batch, and the rest of its group, the classified outcome.
 */
export async function sendInBatches<M>(
  events: readonly BridgeEvent[],
  groupOf: (e: BridgeEvent) => string | undefined,
  toMessage: (e: BridgeEvent) => M,
  sizeOf: (m: M) => number,
  newBatch: (group: string | undefined) => Promise<SdkBatch<M>>,
  sendBatch: (batch: SdkBatch<M>) => Promise<void>,
): Promise<Outcome[]> {
  const outcomes: (Outcome | undefined)[] = new Array(events.length);
  const groups = new Map<string | undefined, number[]>();
  events.forEach((e, i) => {
    const g = groupOf(e);
    const list = groups.get(g);
    if (list) list.push(i);
    else groups.set(g, [i]);
  });
  for (const [group, indexes] of groups) {
    let members: number[] = [];
    try {
      let batch = await newBatch(group);
      for (const i of indexes) {
        const message = toMessage(events[i]!);
        if (batch.tryAdd(message)) {
          members.push(i);
          continue;
        }
        if (members.length > 0) {
          await sendBatch(batch);
          for (const m of members) outcomes[m] = delivered;
          members = [];
          batch = await newBatch(group);
          if (batch.tryAdd(message)) {
            members.push(i);
            continue;
          }
        }
        outcomes[i] = reject(`MessageSizeExceeded: the event is about ${sizeOf(message)} bytes; the entity accepts at most ${batch.maxSizeInBytes}`);
      }
      if (members.length > 0) {
        await sendBatch(batch);
        for (const m of members) outcomes[m] = delivered;
      }
    } catch (err) {
      const outcome = classifyAzureError(err);
      for (const i of indexes) outcomes[i] ??= outcome;
    }
  }
  return outcomes.map((o) => o ?? reject('internal: no outcome'));
}

/** requireOneAuth: a connection string, or a namespace with an Entra ID credential, never both. */
export function requireOneAuth(
  c: { connectionString?: string | undefined; fullyQualifiedNamespace?: string | undefined; credential?: unknown },
  ctx: z.core.$RefinementCtx,
): void {
  if ((c.connectionString === undefined) === (c.fullyQualifiedNamespace === undefined)) {
    ctx.addIssue({ code: 'custom', path: ['connectionString'], message: 'set either connectionString or fullyQualifiedNamespace (with credential)' });
  }
  if (c.connectionString !== undefined && c.credential !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['credential'], message: 'goes with fullyQualifiedNamespace, not with connectionString' });
  }
}

/** sdkOptions: the SDKs' own retries off (the dispatcher retries), one attempt bounded by the delivery timeout. */
export function sdkOptions(timeoutMs: number) {
  return { retryOptions: { maxRetries: 0, timeoutInMs: timeoutMs }, userAgentOptions: { userAgentPrefix: 'se-bridge' } };
}
