/** The stable codes of the kubernetes sink (SinkModule.codes): in log lines and dead-letter reasons. */
export const KUBE_CODES = {
  KUBE_CONFIG_INVALID:
    'the kubeconfig is one the client refuses (an http:// server without insecure-skip-tls-verify, a proxy-url it cannot use, a CA with insecure-skip-tls-verify, an exec plugin kubectl would refuse, an ExecCredential it cannot read): dead-lettered, naming the key',
  KUBE_EXEC_FAILED: "the kubeconfig's exec credential plugin could not be run, failed, or hung past its deadline (tried again)",
  KUBE_API_UNREADABLE:
    'the Kubernetes API answered more than the client keeps (an object over 3 MiB, a page of a list over 8 MiB) or something that is not JSON (tried again)',
  KUBE_NOT_CONFIGURED: 'a kubernetes sink has no kubeconfig and is not in a cluster (dead-lettered)',
  KUBE_NODE_UNKNOWN: 'a kubernetes sink cannot tell which Node this VM is (no nodeName, NODE_NAME or resource id)',
  KUBE_NODE_NOT_FOUND: 'no Node has the providerID of this VM (dead-lettered)',
  KUBE_NOT_FOUND: 'the Kubernetes API answered 404 (the Node does not exist)',
  KUBE_FORBIDDEN: 'RBAC refused a Kubernetes API call (403, dead-lettered)',
  KUBE_UNAUTHORIZED: 'the Kubernetes API refused the credentials (401)',
  KUBE_API_STATUS: 'the Kubernetes API answered another unexpected status',
  KUBE_API_UNREACHABLE: 'the Kubernetes API server could not be reached',
  KUBE_API_TIMEOUT: 'a Kubernetes API call did not finish in time',
  KUBE_DRAIN_BLOCKED: 'the drain did not finish in its timeout (a budget or an emptyDir volume holds a pod); tried again',
  KUBE_DRAIN_INCOMPLETE: 'NotBefore passed with the node not drained (dead-lettered)',
  KUBE_DELETED_PAST_BUDGET: 'a pod its disruption budget still held was deleted before NotBefore (drain.onDeadline: delete)',
  KUBE_DRILL_BLOCKED: "a drill's rehearsed drain would be blocked (dry-run evictions): the drill's report says by which pods",
  KUBE_DRAIN_STOPPED: 'the drain stopped because IMDS no longer lists its event (canceled, completed); the end gives the node back',
} as const;

export type KubeCode = keyof typeof KUBE_CODES;
