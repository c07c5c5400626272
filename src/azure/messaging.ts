/**
 * Azure messaging (Service Bus, Event Hubs): connection strings, the authentication keys of a
 * configuration (a connection string, or a namespace with an Entra ID credential), the Service
 * Bus client factory (the SDK is imported only when called), and the SDK options every client
 * of the bridge uses.
 */
import type { ServiceBusClient, ServiceBusClientOptions } from '@azure/service-bus';
import { z } from 'zod';
import { secret } from '../lib/validators.ts';
import { createCredential, CredentialConfig } from './credentials.ts';

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
    : new sb.ServiceBusClient(
        auth.fullyQualifiedNamespace!,
        await createCredential(auth.credential ?? { kind: 'managedIdentity' }),
        options,
      );
}

const namespaceHost = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9.-]*(:\d{1,5})?$/, 'must be a host name such as myns.servicebus.windows.net');

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
    connectionString: secret(
      z
        .string()
        .refine(isConnectionString, `must be ${service} connection string (Endpoint=sb://…;SharedAccessKeyName=…;SharedAccessKey=…)`),
    )
      .optional()
      .describe('A connection string with a shared access key; or fullyQualifiedNamespace with a credential.'),
    fullyQualifiedNamespace: namespaceHost
      .optional()
      .describe('The namespace host (myns.servicebus.windows.net), reached with an Entra ID credential.'),
    credential: CredentialConfig.optional().describe(
      "The Entra ID credential with fullyQualifiedNamespace; default: the VM's managed identity.",
    ),
  };
}

/** requireOneAuth: a connection string, or a namespace with an Entra ID credential, never both. */
export function requireOneAuth(
  c: { connectionString?: string | undefined; fullyQualifiedNamespace?: string | undefined; credential?: unknown },
  ctx: z.core.$RefinementCtx,
): void {
  if ((c.connectionString === undefined) === (c.fullyQualifiedNamespace === undefined)) {
    ctx.addIssue({
      code: 'custom',
      path: ['connectionString'],
      message: 'set either connectionString or fullyQualifiedNamespace (with credential)',
    });
  }
  if (c.connectionString !== undefined && c.credential !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['credential'], message: 'goes with fullyQualifiedNamespace, not with connectionString' });
  }
}

/** sdkOptions: the SDKs' own retries off (the dispatcher retries), one attempt bounded by the delivery timeout. */
export function sdkOptions(timeoutMs: number) {
  return { retryOptions: { maxRetries: 0, timeoutInMs: timeoutMs }, userAgentOptions: { userAgentPrefix: 'se-bridge' } };
}
