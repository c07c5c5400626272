import {
  NOT_CONFIGURED,
  openKube,
  withDeadline,
  type KubeConnection,
  type KubeListRequest,
  type KubeRequest,
  type ListFold,
} from '../../src/kit.ts';
import { KubeFailure, toFailure } from './failure.ts';

export { describeFailure, KubeFailure } from './failure.ts';
/**
 * The few Kubernetes API calls the kubernetes sink makes, through the project's Kubernetes client (src/kube):
 * nodes get/list/patch, nodes/status patch, pods list, pods/eviction create, events create. Nothing else,
 * which is what the RBAC in config/kubernetes/ grants. Each call has a deadline, and each
 * failure becomes a KubeFailure that says whether trying again can help.
 */

/** How long one API call may take. */
const CALL_DEADLINE_MS = 30_000;
const COMPONENT = 'scheduled-events-bridge';

export interface Taint {
  readonly key: string;
  readonly value?: string;
  readonly effect: string;
}

export interface KubeNode {
  readonly name: string;
  readonly uid: string;
  readonly resourceVersion: string;
  readonly unschedulable: boolean;
  readonly taints: readonly Taint[];
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  /** The Node's conditions that hold (status True): type, and the reason and message of whoever set it. */
  readonly conditions: readonly NodeCondition[];
}

export interface NodeCondition {
  readonly type: string;
  readonly reason: string;
  readonly message: string;
}

export interface KubePod {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly ownerKinds: readonly string[];
  readonly mirror: boolean;
  readonly emptyDir: boolean;
  readonly terminating: boolean;
  readonly finished: boolean;
  readonly gracePeriodSeconds: number | null;
}

/** What an eviction got: done (or, dry run, would be), the pod was gone, or a disruption budget holds it (the API's words). */
export type Eviction = 'evicted' | 'gone' | { readonly budget: string };

export interface Kube {
  readNode(name: string): Promise<KubeNode>;
  nodeByProviderId(providerId: string): Promise<KubeNode | null>;
  patchNode(name: string, patch: unknown): Promise<KubeNode>;
  /** patchNodeStatus patches the Node's status subresource (its conditions). */
  patchNodeStatus(name: string, patch: unknown): Promise<KubeNode>;
  podsOn(node: string): Promise<KubePod[]>;
  /** evict asks the Eviction API; with `dryRun` (the API's dryRun=All) the server checks everything and changes nothing. */
  evict(pod: KubePod, gracePeriodSeconds: number, dryRun?: boolean): Promise<Eviction>;
  /** deletePod deletes a pod with this grace, past any disruption budget (drain.onDeadline: delete); false when it was gone. */
  deletePod(pod: KubePod, gracePeriodSeconds: number): Promise<boolean>;
  /** scoped: the same calls, each also aborted when `signal` aborts (one delivery attempt's). */
  scoped(signal: AbortSignal): Kube;
  /** event records a Kubernetes Event on the Node, or on a pod; a failure is logged by the caller's logger, never thrown. */
  event(on: KubeNode | KubePod, reason: string, message: string, type?: 'Normal' | 'Warning'): Promise<void>;
}

/**
 * connect reads the configuration: the kubeconfig file, or the in-cluster service account. A
 * kubeconfig the client refuses (KUBE_CONFIG_INVALID, naming the key) and no configuration at all
 * (KUBE_NOT_CONFIGURED) make a client whose every call says so: the sink's events are
 * dead-lettered with the reason, and the other sinks go on.
 */
export async function connect(kubeconfig: string | undefined): Promise<Kube> {
  let kube: KubeConnection | null;
  try {
    kube = await openKube(kubeconfig);
  } catch (err) {
    return failing(toFailure('kubeconfig', err));
  }
  if (kube === null) return failing(new KubeFailure('KUBE_NOT_CONFIGURED', NOT_CONFIGURED, false));
  return bound(kube, undefined);
}

const SMP = 'application/strategic-merge-patch+json';
const NODES = '/api/v1/nodes';
const pods = (namespace: string, name = '') =>
  `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods${name === '' ? '' : `/${encodeURIComponent(name)}`}`;

/**
 * bound: the API calls, each aborted at its own deadline or when `signal` aborts (the attempt's),
 * so a call that gets no answer closes its connection rather than leaving it open.
 */
function bound(kube: KubeConnection, signal: AbortSignal | undefined): Kube {
  const within = <T>(what: string, work: (signal: AbortSignal) => Promise<T>): Promise<T> => {
    const abort = new AbortController();
    return withDeadline(work(AbortSignal.any([abort.signal, ...(signal === undefined ? [] : [signal])])), CALL_DEADLINE_MS, () => {
      abort.abort();
      return new KubeFailure('KUBE_API_TIMEOUT', `${what}: no answer within ${CALL_DEADLINE_MS / 1000} s`, true);
    })
      .catch((err: unknown) => {
        throw toFailure(what, err);
      })
      .finally(() => abort.abort());
  };
  const call = <T>(what: string, r: Omit<KubeRequest, 'signal'>): Promise<T> => within(what, (s) => kube.request<T>({ ...r, signal: s }));
  /** list: a list read in chunks, each page folded into what is kept (the whole list is never held), within one deadline. */
  const list = <T, A>(what: string, r: Omit<KubeListRequest, 'signal'>, fold: ListFold<T, A>): Promise<A> =>
    within(what, (s) => kube.list({ ...r, signal: s }, fold));
  const node = (name: string) => `${NODES}/${encodeURIComponent(name)}`;
  return {
    readNode: async (name) => nodeOf(await call<NodeLike>(`get node ${name}`, { method: 'GET', path: node(name) })),
    async nodeByProviderId(providerId) {
      const wanted = providerId.toLowerCase();
      const found = await list<NodeLike & { spec?: { providerID?: string } }, NodeLike | null>(
        'list nodes',
        { path: NODES },
        {
          start: () => null,
          page: (kept, items) => kept ?? items.find((n) => n.spec?.providerID?.toLowerCase() === wanted) ?? null,
          done: (kept) => kept !== null,
        },
      );
      return found === null ? null : nodeOf(found);
    },
    patchNode: async (name, body) =>
      nodeOf(await call<NodeLike>(`patch node ${name}`, { method: 'PATCH', path: node(name), body, contentType: SMP })),
    patchNodeStatus: async (name, body) =>
      nodeOf(await call<NodeLike>(`patch node ${name} status`, { method: 'PATCH', path: `${node(name)}/status`, body, contentType: SMP })),
    podsOn: (nodeName) =>
      list<PodLike, KubePod[]>(
        `list pods on ${nodeName}`,
        { path: '/api/v1/pods', query: { fieldSelector: `spec.nodeName=${nodeName}` } },
        { start: () => [], page: (kept, items) => (kept.push(...items.map(podOf)), kept) },
      ),
    async evict(pod, gracePeriodSeconds, dryRun = false) {
      const dry = dryRun ? { dryRun: ['All'] } : {};
      const body = {
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name: pod.name, namespace: pod.namespace },
        deleteOptions: { gracePeriodSeconds, ...dry },
      };
      const what = `${dryRun ? 'dry-run ' : ''}evict pod ${pod.namespace}/${pod.name}`;
      try {
        await call(what, {
          method: 'POST',
          path: `${pods(pod.namespace, pod.name)}/eviction`,
          query: { dryRun: dryRun ? 'All' : undefined },
          body,
        });
        return 'evicted';
      } catch (err) {
        if (err instanceof KubeFailure && err.status === 404) return 'gone';
        if (err instanceof KubeFailure && err.status === 429) return { budget: err.said ?? 'HTTP 429' };
        throw err;
      }
    },
    async deletePod(pod, gracePeriodSeconds) {
      try {
        await call(`delete pod ${pod.namespace}/${pod.name}`, {
          method: 'DELETE',
          path: pods(pod.namespace, pod.name),
          body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds },
        });
        return true;
      } catch (err) {
        if (err instanceof KubeFailure && err.status === 404) return false;
        throw err;
      }
    },
    async event(on, reason, message, type = 'Normal') {
      const now = new Date().toISOString();
      const isPod = 'ownerKinds' in on;
      const namespace = isPod ? on.namespace : 'default';
      const body = {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { generateName: `${on.name}.`, namespace },
        involvedObject: isPod
          ? { apiVersion: 'v1', kind: 'Pod', name: on.name, namespace, uid: on.uid }
          : { apiVersion: 'v1', kind: 'Node', name: on.name, uid: on.uid },
        reason,
        message,
        type,
        source: { component: COMPONENT, ...(isPod ? {} : { host: on.name }) },
        reportingComponent: COMPONENT,
        reportingInstance: isPod ? COMPONENT : on.name,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      };
      // the story on the Node is worth telling, but never worth failing the preparation for
      await call(`create event ${reason}`, {
        method: 'POST',
        path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`,
        body,
      }).catch(() => undefined);
    },
    scoped: (s) => bound(kube, s),
  };
}

/** failing: no client to be had (no kubeconfig nor a cluster around, or a kubeconfig refused); every call says why. */
function failing(why: KubeFailure): Kube {
  const fail = (): never => {
    throw why;
  };
  const kube: Kube = {
    readNode: fail,
    nodeByProviderId: fail,
    patchNode: fail,
    patchNodeStatus: fail,
    podsOn: fail,
    evict: fail,
    deletePod: fail,
    event: async () => undefined,
    scoped: () => kube,
  };
  return kube;
}

interface NodeLike {
  metadata?: {
    name?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: { unschedulable?: boolean; taints?: { key: string; value?: string; effect: string }[] };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

function nodeOf(n: NodeLike): KubeNode {
  return {
    name: n.metadata?.name ?? '',
    uid: n.metadata?.uid ?? '',
    resourceVersion: n.metadata?.resourceVersion ?? '',
    unschedulable: n.spec?.unschedulable === true,
    taints: (n.spec?.taints ?? []).map((t) => ({ key: t.key, effect: t.effect, ...(t.value === undefined ? {} : { value: t.value }) })),
    labels: n.metadata?.labels ?? {},
    annotations: n.metadata?.annotations ?? {},
    conditions: (n.status?.conditions ?? [])
      .filter((c) => c.status === 'True')
      .map((c) => ({ type: c.type, reason: c.reason ?? '', message: c.message ?? '' })),
  };
}

interface PodLike {
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    annotations?: Record<string, string>;
    ownerReferences?: { kind: string; controller?: boolean }[];
    deletionTimestamp?: unknown;
  };
  spec?: { volumes?: { emptyDir?: unknown }[]; terminationGracePeriodSeconds?: number };
  status?: { phase?: string };
}

function podOf(p: PodLike): KubePod {
  return {
    namespace: p.metadata?.namespace ?? 'default',
    name: p.metadata?.name ?? '',
    uid: p.metadata?.uid ?? '',
    ownerKinds: (p.metadata?.ownerReferences ?? []).filter((o) => o.controller !== false).map((o) => o.kind),
    mirror: p.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined,
    emptyDir: (p.spec?.volumes ?? []).some((v) => v.emptyDir !== undefined && v.emptyDir !== null),
    terminating: p.metadata?.deletionTimestamp !== undefined && p.metadata?.deletionTimestamp !== null,
    finished: p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed',
    gracePeriodSeconds: p.spec?.terminationGracePeriodSeconds ?? null,
  };
}
