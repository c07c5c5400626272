/**
 * Where the Kubernetes API is, for everything that talks to it (the kubernetes sink, the fleet
 * budget's Lease store): a kubeconfig file when one is named, else the in-cluster service
 * account. The client library is loaded only here, and only when asked.
 */
type ClientModule = typeof import('@kubernetes/client-node');

export interface KubeConnection {
  /** The client library, loaded. */
  readonly k8s: ClientModule;
  readonly config: InstanceType<ClientModule['KubeConfig']>;
}

/** Why there is no connection: said the same by every caller. */
export const NOT_CONFIGURED = 'no kubeconfig is configured and this process is not in a cluster (KUBERNETES_SERVICE_HOST is unset)';

/** loadKubeConfig: the kubeconfig file, or the in-cluster service account; null when neither is there. */
export async function loadKubeConfig(kubeconfig: string | undefined): Promise<KubeConnection | null> {
  const k8s: ClientModule = await import('@kubernetes/client-node');
  if (kubeconfig === undefined && !process.env.KUBERNETES_SERVICE_HOST) return null;
  const config = new k8s.KubeConfig();
  if (kubeconfig !== undefined) config.loadFromFile(kubeconfig);
  else config.loadFromCluster();
  return { k8s, config };
}

/** abortWith: the options of one API call that abort its request when `signal` aborts. */
export function abortWith(k8s: ClientModule, signal: AbortSignal): ReturnType<ClientModule['setHeaderOptions']> {
  const middleware = {
    pre: (ctx: { setSignal(s: AbortSignal): void }) => {
      ctx.setSignal(signal);
      return new k8s.Observable(Promise.resolve(ctx));
    },
    post: <R>(response: R) => new k8s.Observable(Promise.resolve(response)),
  };
  return { middleware: [middleware], middlewareMergeStrategy: 'append' } as unknown as ReturnType<ClientModule['setHeaderOptions']>;
}
