/**
 * The objects of the Kubernetes API stand-in (kube-apiserver.ts) and how it answers: a JSON body,
 * a Status body for every error, and a JSON merge patch (RFC 7396).
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';

const TLS_DIR = fileURLToPath(new URL('../test/fixtures/tls/', import.meta.url));
export const KUBE_CERT = readFileSync(`${TLS_DIR}cert.pem`, 'utf8');
export const KUBE_KEY = readFileSync(`${TLS_DIR}key.pem`, 'utf8');
export const KUBE_TOKEN = 'stand-in-service-account-token';

/** kubeconfigOf: a kubeconfig file's text that trusts the stand-in's CA (the test certificate) and carries its token. */
export function kubeconfigOf(url: string | undefined): string {
  const ca = Buffer.from(KUBE_CERT).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: stand-in`,
    `  cluster: { server: "${url}", certificate-authority-data: "${ca}" }`,
    'users:',
    `- name: bridge`,
    `  user: { token: "${KUBE_TOKEN}" }`,
    'contexts:',
    `- name: stand-in`,
    '  context: { cluster: stand-in, user: bridge }',
    'current-context: stand-in',
    '',
  ].join('\n');
}

export type Json = Record<string, unknown>;

export interface StandInNode {
  metadata: { name: string; uid: string; resourceVersion: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: { providerID?: string; unschedulable?: boolean; taints?: { key: string; value?: string; effect: string }[] };
  /** Conditions, as the kubelet or node-problem-detector report them. */
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

export interface StandInPod {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    annotations?: Record<string, string>;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[];
    deletionTimestamp?: string;
  };
  spec: { nodeName: string; terminationGracePeriodSeconds?: number; volumes?: { name: string; emptyDir?: Json }[] };
  status: { phase: string; conditions?: { type: string; status: string }[] };
}

export interface KubeStandInOptions {
  /** Seconds of grace are this many ms here (default 10: a 30 s grace period takes 300 ms). */
  msPerGraceSecond?: number;
  /** `pods/eviction`, `nodes`, `events`: answered 403 by "RBAC". */
  forbid?: string[];
}

export interface Request {
  readonly method: string;
  readonly path: string;
  readonly contentType: string | undefined;
  readonly userAgent: string | undefined;
  /** The Authorization header as sent (a test cluster's credentials only). */
  readonly authorization: string | undefined;
  readonly body: unknown;
  /** When it arrived (epoch ms). */
  readonly at: number;
  /** Its answer once sent: the status and the bytes of the body (its content-length; 0 without one). */
  answer?: { readonly status: number; readonly bytes: number };
}

/** requestOf: a request as the stand-in records it (its answer added once sent). */
export const requestOf = (req: IncomingMessage, path: string, body: unknown): Request => ({
  method: req.method ?? '',
  path,
  contentType: req.headers['content-type'],
  userAgent: req.headers['user-agent'],
  authorization: req.headers.authorization,
  body,
  at: Date.now(),
});

/** merge applies a JSON merge patch (RFC 7396), which is what a strategic merge patch is for the Node fields the sink changes. */
export function merge(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out = (target !== null && typeof target === 'object' && !Array.isArray(target) ? target : {}) as Json;
  for (const [k, v] of Object.entries(patch as Json)) {
    if (v === null) delete out[k];
    else out[k] = merge(out[k], v);
  }
  return out;
}

export const withKind =
  (kind: string) =>
  <T extends object>(o: T) => ({ kind, apiVersion: 'v1', ...o });

export function json(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  // set one by one (not in writeHead), so the stand-in reads the length back when it records the answer
  res.setHeader('content-type', 'application/json');
  res.setHeader('content-length', Buffer.byteLength(text));
  res.writeHead(code);
  res.end(text);
}

/** forbidden answers 403 as the RBAC authorizer words it (for the service account se-bridge); true. */
export function forbidden(res: ServerResponse, resource: string, verb: string, ns?: string): true {
  const where = ns === undefined ? 'at the cluster scope' : `in the namespace "${ns}"`;
  const who = 'User "system:serviceaccount:kube-system:se-bridge"';
  status(
    res,
    403,
    'Forbidden',
    `${resource.split('/')[0]} is forbidden: ${who} cannot ${verb} resource "${resource}" in API group "" ${where}`,
  );
  return true;
}

export function status(res: ServerResponse, code: number, reason: string, message: string, details?: Json): void {
  json(res, code, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  });
}

/** What a test says of a pod: its controller's kind (none: unmanaged), mirror, an emptyDir volume, its grace, its phase. */
export interface PodShape {
  readonly owner?: string;
  readonly mirror?: boolean;
  readonly emptyDir?: boolean;
  readonly grace?: number;
  readonly phase?: string;
  /** Its Ready condition (none when unsaid). */
  readonly ready?: boolean;
}

/** newPod: a Pod as the API server holds it. */
export function newPod(namespace: string, name: string, nodeName: string, more: PodShape, uid: () => string): StandInPod {
  return {
    metadata: {
      name,
      namespace,
      uid: uid(),
      ...(more.mirror ? { annotations: { 'kubernetes.io/config.mirror': 'abc123' } } : {}),
      ...(more.owner
        ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: more.owner, name: `${name}-owner`, uid: uid(), controller: true }] }
        : {}),
    },
    spec: {
      nodeName,
      terminationGracePeriodSeconds: more.grace ?? 30,
      ...(more.emptyDir ? { volumes: [{ name: 'scratch', emptyDir: {} }] } : {}),
    },
    status: {
      phase: more.phase ?? 'Running',
      ...(more.ready === undefined ? {} : { conditions: [{ type: 'Ready', status: more.ready ? 'True' : 'False' }] }),
    },
  };
}

/**
 * patchNode answers PATCH /api/v1/nodes/{name}: a strategic-merge or merge patch (both merge the
 * Node fields the sink changes), with the resourceVersion in the patch as a precondition (409).
 */
export function patchNode(
  res: ServerResponse,
  node: StandInNode,
  type: string | undefined,
  body: unknown,
  resourceVersion: string,
  save: (node: StandInNode) => void,
): void {
  if (type !== 'application/strategic-merge-patch+json' && type !== 'application/merge-patch+json') {
    return status(
      res,
      415,
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json`,
    );
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return status(res, 400, 'BadRequest', 'the patch is not a JSON object');
  const rv = (body as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
  if (rv !== undefined && rv !== node.metadata.resourceVersion) {
    return status(
      res,
      409,
      'Conflict',
      `Operation cannot be fulfilled on nodes "${node.metadata.name}": the object has been modified; please apply your changes to the latest version and try again`,
    );
  }
  const merged = merge(structuredClone(node), body) as StandInNode;
  merged.metadata.resourceVersion = resourceVersion;
  merged.metadata.name = node.metadata.name;
  merged.metadata.uid = node.metadata.uid;
  save(merged);
  json(res, 200, { kind: 'Node', apiVersion: 'v1', ...merged });
}

/**
 * patchNodeStatus: the status subresource's strategic merge, as the API server applies it to a
 * Node's conditions: each one in the patch replaces the one of its type (merge key `type`), one
 * with `$patch: delete` removes it; the rest of the Node is not touched.
 */
export function patchNodeStatus(
  res: ServerResponse,
  node: StandInNode,
  type: string | undefined,
  body: unknown,
  resourceVersion: string,
  save: (node: StandInNode) => void,
): void {
  if (type !== 'application/strategic-merge-patch+json')
    return status(res, 415, 'UnsupportedMediaType', 'the status of a Node is patched here with application/strategic-merge-patch+json');
  const patch = (body as { status?: { conditions?: unknown } } | null)?.status?.conditions;
  if (!Array.isArray(patch)) return status(res, 400, 'BadRequest', 'the patch has no status.conditions list');
  const next = structuredClone(node);
  let conditions = [...(next.status?.conditions ?? [])];
  for (const c of patch as { type?: unknown; $patch?: unknown; status?: string }[]) {
    if (typeof c.type !== 'string') return status(res, 422, 'Invalid', 'status.conditions[].type: Required value');
    conditions = conditions.filter((x) => x.type !== c.type);
    if (c.$patch !== 'delete') conditions.push(c as { type: string; status: string });
  }
  // a stand-in Node starts with no status: removing its last condition leaves none
  if (conditions.length > 0) next.status = { ...next.status, conditions };
  else delete next.status;
  next.metadata.resourceVersion = resourceVersion;
  save(next);
  json(res, 200, { kind: 'Node', apiVersion: 'v1', ...next });
}

/**
 * dryRunOf: whether an eviction is a dry run, from the query's dryRun (CreateOptions) and its
 * DeleteOptions' dryRun, as the API server reads them: each value must be "All", and when both
 * are given they must match; else the refusal's words (a 400).
 */
export function dryRunOf(query: readonly string[], options: unknown): boolean | string {
  const given = (options as { dryRun?: unknown } | null | undefined)?.dryRun;
  const body = Array.isArray(given) ? given.map(String) : [];
  const bad = [...query, ...body].find((v) => v !== 'All');
  if (bad !== undefined) return `dryRun: Unsupported value: "${bad}": supported values: "All"`;
  if (query.length > 0 && body.length > 0 && query.join() !== body.join())
    return `DryRun in DeleteOptions (${body.join()}) and CreateOptions (${query.join()}) must match`;
  return query.length > 0 || body.length > 0;
}
