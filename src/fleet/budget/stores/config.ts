/**
 * Where a fleet budget's slots and member records live: Azure Blob Storage or Kubernetes Leases
 * (the `store` key of `fleet`).
 */
import { z } from 'zod';
import { CredentialConfig } from '../../../azure/credentials.ts';
import { httpsOrLoopback } from '../../../lib/http-settings.ts';
import { secret } from '../../../lib/validators.ts';

const BlobStoreConfig = z
  .strictObject({
    type: z.literal('blob').describe('Azure Blob Storage: one blob per slot and per member, written with ETag conditions.'),
    accountUrl: httpsOrLoopback('the Entra ID token')
      .optional()
      .describe('The storage account (https://ACCOUNT.blob.core.windows.net), reached with credential.'),
    connectionString: secret(z.string().regex(/AccountName=|BlobEndpoint=|UseDevelopmentStorage=/i, 'must be a storage connection string'))
      .optional()
      .describe('A storage connection string (development, Azurite); or accountUrl with a credential.'),
    credential: CredentialConfig.optional().describe("The Entra ID credential with accountUrl; default: the VM's managed identity."),
    container: z
      .string()
      .regex(/^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}$/, 'must be a container name: 3 to 63 lower-case letters, digits and single dashes')
      .default('se-bridge-fleet')
      .describe('The container that holds every group of this account (created when missing and allowed).'),
  })
  .superRefine((c, ctx) => {
    if ((c.accountUrl === undefined) === (c.connectionString === undefined))
      ctx.addIssue({ code: 'custom', path: ['accountUrl'], message: 'set either accountUrl (with credential) or connectionString' });
    if (c.connectionString !== undefined && c.credential !== undefined)
      ctx.addIssue({ code: 'custom', path: ['credential'], message: 'goes with accountUrl, not with connectionString' });
  })
  // the default said where it applies: the VM's managed identity with accountUrl (so the token
  // endpoint follows a simulated IMDS as it does for every other credential)
  .transform((c) =>
    c.accountUrl !== undefined && c.credential === undefined ? { ...c, credential: { kind: 'managedIdentity' as const } } : c,
  );

const KubernetesStoreConfig = z.strictObject({
  type: z.literal('kubernetes').describe('coordination.k8s.io/v1 Leases, one per slot and per member, written with resourceVersion.'),
  namespace: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a namespace name')
    .default('se-bridge')
    .describe('The namespace of the Leases.'),
  kubeconfig: z.string().min(1).optional().describe('A kubeconfig file; default: the in-cluster service account.'),
});

export const FleetStoreConfig = z.discriminatedUnion('type', [BlobStoreConfig, KubernetesStoreConfig]);
export type FleetStoreConfig = z.infer<typeof FleetStoreConfig>;

/** storeTimeoutMs: how long one call to the store may take (the deadline on the client), said as `what` happens past it. */
export const storeTimeoutMs = (what: string) => z.number().int().min(500).max(60_000).default(10_000).describe(what);
