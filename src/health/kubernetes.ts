/**
 * The Kubernetes health check: this VM's Node is Ready, and the pods on it are Ready (all of
 * them, or those of some namespaces). A pod that has finished (Succeeded, Failed) or is being
 * deleted does not count: a drained node's pods are gone, and a finished Job's pod is never
 * Ready. Which Node: `nodeName`, else NODE_NAME, else the Node whose spec.providerID is
 * `azure://` and this VM's resource id, as the kubernetes sink finds it. Through the client the
 * project already uses (kube/config.ts), loaded at the first check.
 */
import { z } from 'zod';
import type { KubeConnection } from '../kube/client.ts';
import { NOT_CONFIGURED } from '../lib/errors.ts';

type Condition = { type: string; status: string; reason?: string };
interface V1Node {
  metadata?: { name?: string };
  spec?: { providerID?: string };
  status?: { conditions?: Condition[] };
}
interface V1Pod {
  metadata?: { name?: string; namespace?: string; deletionTimestamp?: string };
  status?: { phase?: string; conditions?: Condition[] };
}

export const KubernetesCheck = z.strictObject({
  node: z.boolean().default(true).describe("The Node's Ready condition must be True."),
  pods: z
    .union([
      z.enum(['all', 'none']),
      z.strictObject({ namespaces: z.array(z.string().min(1).max(63)).min(1).describe('Only the pods of these namespaces count.') }),
    ])
    .default('all')
    .describe(
      "The pods on the Node that must be Ready: all, none, or { namespaces: [...] }; finished pods and pods being deleted don't count.",
    ),
  nodeName: z
    .string()
    .min(1)
    .max(253)
    .optional()
    .describe('The Node; default the NODE_NAME environment variable, else the Node whose spec.providerID names this VM.'),
  kubeconfig: z.string().min(1).optional().describe('A kubeconfig file; default the in-cluster service account.'),
});
export type KubernetesCheck = z.infer<typeof KubernetesCheck>;

/** A Kubernetes check, its client made at the first run and kept. */
export class KubernetesHealth {
  readonly #check: KubernetesCheck;
  readonly #resourceId: () => string | null;
  #kube: KubeConnection | null = null;
  /** The Node's name, once found by its providerID. */
  #found: string | null = null;

  constructor(check: KubernetesCheck, resourceId: () => string | null) {
    this.#check = check;
    this.#resourceId = resourceId;
  }

  /** run: null when healthy, else why not. */
  async run(signal: AbortSignal): Promise<string | null> {
    const kube = await this.#client();
    const node = await this.#node(kube, signal);
    const name = node.metadata?.name ?? '?';
    const problems: string[] = [];
    if (this.#check.node) {
      const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
      if (ready?.status !== 'True') problems.push(`Node ${name} is not Ready${ready?.reason ? ` (${ready.reason})` : ''}`);
    }
    const pods = this.#check.pods;
    if (pods !== 'none') {
      const only = pods === 'all' ? null : new Set(pods.namespaces);
      // in chunks: how many are not Ready, and the first five names
      const notReady = await kube.list<V1Pod, { count: number; names: string[] }>(
        { path: '/api/v1/pods', query: { fieldSelector: `spec.nodeName=${name}` }, signal },
        {
          start: () => ({ count: 0, names: [] }),
          page: (kept, items) => {
            const more = items.filter((p) => counts(p, only) && !podReady(p)).map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`);
            return { count: kept.count + more.length, names: [...kept.names, ...more].slice(0, 5) };
          },
        },
      );
      if (notReady.count > 0)
        problems.push(
          `${notReady.count} pod${notReady.count === 1 ? '' : 's'} on ${name} not Ready: ${notReady.names.join(', ')}${notReady.count > 5 ? ', …' : ''}`,
        );
    }
    return problems.length === 0 ? null : problems.join('; ');
  }

  /** client: the Kubernetes client, loaded at the first check (a bridge without this check never loads it). */
  async #client(): Promise<KubeConnection> {
    if (this.#kube !== null) return this.#kube;
    const { KubeConnection } = await import('../kube/client.ts');
    const kube = KubeConnection.open(this.#check.kubeconfig);
    if (kube === null) throw new Error(NOT_CONFIGURED);
    this.#kube = kube;
    return kube;
  }

  async #node(kube: KubeConnection, signal: AbortSignal): Promise<V1Node> {
    const name = this.#check.nodeName ?? (process.env.NODE_NAME || null) ?? this.#found;
    if (name !== null) return kube.request<V1Node>({ method: 'GET', path: `/api/v1/nodes/${encodeURIComponent(name)}`, signal });
    const id = this.#resourceId();
    if (!id)
      throw new Error("no nodeName configured, NODE_NAME is unset, and this VM's resource id is unknown, so its Node cannot be found");
    const providerId = `azure://${id}`.toLowerCase();
    const node = await kube.list<V1Node, V1Node | undefined>(
      { path: '/api/v1/nodes', signal },
      {
        start: () => undefined,
        page: (kept, items) => kept ?? items.find((n) => n.spec?.providerID?.toLowerCase() === providerId),
        done: (kept) => kept !== undefined,
      },
    );
    if (node === undefined) throw new Error(`no Node has spec.providerID azure://${id}; set nodeName or NODE_NAME`);
    this.#found = node.metadata?.name ?? null;
    return node;
  }
}

/** counts: whether a pod's readiness counts (running or starting, not being deleted, in a namespace asked for). */
function counts(p: V1Pod, only: ReadonlySet<string> | null): boolean {
  const phase = p.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed' || p.metadata?.deletionTimestamp !== undefined) return false;
  return only === null || only.has(p.metadata?.namespace ?? '');
}

const podReady = (p: V1Pod): boolean => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
