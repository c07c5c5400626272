/**
 * Entra ID credentials on an Azure VM: the credential choice of a configuration (loaded lazily,
 * so @azure/identity is imported only when something asks for a token), and the managed identity
 * token endpoint: which host it is, and that no proxy stands in front of it.
 */
import type { TokenCredential } from '@azure/core-auth';
import { z } from 'zod';
import { IMDS_ENDPOINT } from '../imds/client.ts';
import { imdsCredential } from './imds-token.ts';

const uuid = z.guid('must be a GUID (8-4-4-4-12 hex digits)');
export const CredentialConfig = z.discriminatedUnion('kind', [
  /** The VM's managed identity: system-assigned, or a user-assigned one named by one of clientId, objectId or resourceId. */
  z
    .strictObject({
      kind: z.literal('managedIdentity').describe("The VM's managed identity."),
      clientId: uuid.optional().describe('A user-assigned identity, by its client id.'),
      objectId: uuid.optional().describe('A user-assigned identity, by its object id.'),
      resourceId: z
        .string()
        .regex(
          /^\/subscriptions\/[^/]+\/resourceGroups\/[^/]+\/providers\/Microsoft\.ManagedIdentity\/userAssignedIdentities\/[^/]+$/i,
          'must be a user-assigned identity resource id (/subscriptions/…/providers/Microsoft.ManagedIdentity/userAssignedIdentities/NAME)',
        )
        .optional()
        .describe('A user-assigned identity, by its resource id.'),
    })
    .refine(
      (c) => [c.clientId, c.objectId, c.resourceId].filter((v) => v !== undefined).length <= 1,
      'name a user-assigned identity by one of clientId, objectId or resourceId, not several',
    ),
  /** DefaultAzureCredential: environment, workload identity, managed identity, Azure CLI… */
  z.strictObject({
    kind: z.literal('default').describe('DefaultAzureCredential: environment, workload identity, managed identity, Azure CLI.'),
    clientId: uuid.optional().describe('The client id of a user-assigned managed identity to use.'),
  }),
]);
export type CredentialConfig = z.infer<typeof CredentialConfig>;

/**
 * createCredential makes the Entra ID credential. The managed identity is asked of IMDS
 * (169.254.169.254), or of the host in AZURE_POD_IDENTITY_AUTHORITY_HOST when that is set (the
 * simulator, in tests and the demo), on the project's HTTP client (imds-token.ts);
 * DefaultAzureCredential is @azure/identity's, imported only now.
 */
export async function createCredential(c: CredentialConfig): Promise<TokenCredential> {
  bypassProxyForTokenEndpoint(process.env);
  if (c.kind === 'managedIdentity') return imdsCredential(c);
  const identity = await import('@azure/identity');
  return new identity.DefaultAzureCredential(c.clientId !== undefined ? { managedIdentityClientId: c.clientId } : {});
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
  const list = current
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
  const missing = hosts.filter((h) => !list.includes(h));
  if (missing.length === 0) return;
  const value = [...list, ...missing].join(',');
  env.NO_PROXY = value;
  env.no_proxy = value;
}
