/**
 * Which Node this VM is: the configured `nodeName`, else NODE_NAME, else the Node whose
 * spec.providerID is `azure://` and this VM's resource id (as the Azure cloud provider sets it).
 */
import type { Kube, KubeNode } from './api.ts';
import { KubeFailure } from './failure.ts';

/** nodeNameOf: the Node's name as configured or in NODE_NAME, or null to find it by providerID. */
export function nodeNameOf(configured: string | undefined): string | null {
  return configured ?? (process.env.NODE_NAME || null);
}

/** findNode reads the Node by its name, or finds it by this VM's resource id. */
export async function findNode(kube: Kube, name: string | null, resourceId: () => Promise<string | null>): Promise<KubeNode> {
  if (name !== null) return kube.readNode(name);
  const id = await resourceId();
  if (!id)
    throw new KubeFailure(
      'KUBE_NODE_UNKNOWN',
      "no nodeName configured, NODE_NAME is unset, and this VM's resource id is unknown, so its Node cannot be found",
      false,
    );
  const node = await kube.nodeByProviderId(`azure://${id}`);
  if (node === null)
    throw new KubeFailure('KUBE_NODE_NOT_FOUND', `no Node has spec.providerID azure://${id}; set nodeName or NODE_NAME`, false);
  return node;
}
