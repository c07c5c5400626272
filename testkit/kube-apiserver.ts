/**
 * A stand-in for the Kubernetes API server, written from the Kubernetes API reference: no API server can run
 * on the machines the tests run on. It speaks HTTPS (the test certificate in test/fixtures/tls, trusted
 * through the kubeconfig's certificate-authority-data, as a real cluster's CA is) and bearer-token
 * authentication, and serves the real paths, bodies and status codes of what the kubernetes sink calls:
 *
 *   GET   /api/v1/nodes, /api/v1/nodes/{name}        (lists in chunks: limit, continue; kube-lists.ts)
 *   PATCH /api/v1/nodes/{name}/status strategic-merge-patch+json of status.conditions (merged by
 *                                     type; `$patch: delete` removes one); nothing else of the Node
 *   PATCH /api/v1/nodes/{name}        strategic-merge-patch+json (maps merge, null deletes, lists replace as Node's
 *                                     taints do), merge-patch+json, resourceVersion in the patch is a precondition (409)
 *   GET   /api/v1/pods?fieldSelector=spec.nodeName=NAME, /api/v1/namespaces/{ns}/pods/{name}
 *   POST  /api/v1/namespaces/{ns}/pods/{name}/eviction   201, 404, or 429 while a budget holds the pod; an evicted
 *                                     pod is deleted after its grace; dryRun=All (query or DeleteOptions) changes nothing
 *   DELETE /api/v1/namespaces/{ns}/pods/{name}            200 (DeleteOptions: gracePeriodSeconds)
 *   POST  /api/v1/namespaces/{ns}/events 201;  /apis/coordination.k8s.io/v1/namespaces/{ns}/leases (kube-leases.ts)
 *
 * and a Status body for every error. `forbid` makes RBAC refuse a resource with a 403 as the real authorizer
 * words it; `faults` answers the next request to a path with any other refusal, a throttling 429 or no
 * answer at all (kube-faults.ts); `gate` holds requests back.
 */
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import {
  dryRunOf,
  forbidden,
  json,
  KUBE_CERT,
  KUBE_KEY,
  KUBE_TOKEN,
  kubeconfigOf,
  type Json,
  type KubeStandInOptions,
  newPod,
  patchNode,
  patchNodeStatus,
  type PodShape,
  type Request,
  requestOf,
  type StandInNode,
  type StandInPod,
  status,
  withKind,
} from './kube-objects.ts';
import { KubeFaults } from './kube-faults.ts';
import { LeaseRegistry } from './kube-leases.ts';
import { ListChunks } from './kube-lists.ts';

export { KUBE_CERT } from './kube-objects.ts';
export type { KubeStandInOptions, Request, StandInNode, StandInPod } from './kube-objects.ts';

export class KubeStandIn {
  readonly nodes = new Map<string, StandInNode>();
  readonly pods = new Map<string, StandInPod>();
  readonly events: Json[] = [];
  /** Every request as it came, with its answer once sent (`answer`). */
  readonly requests: Request[] = [];
  /** Per pod (ns/name): how many more evictions a budget refuses with 429. */
  readonly budgets = new Map<string, number>();
  /** Pods deleted (DELETE, past any budget), with the grace asked. */
  readonly deletions = new Map<string, number | null>();
  /** Evictions answered, per pod: the HTTP statuses in order. */
  readonly evictions = new Map<string, number[]>();
  /** Dry-run evictions answered, per pod: the HTTP statuses in order (nothing changed). */
  readonly dryRuns = new Map<string, number[]>();
  /** Per pod (ns/name): the name of the budget that holds it, in the 429's cause (default pdb). */
  readonly budgetNames = new Map<string, string>();
  /** The bearer tokens the server takes (a test rotates them); a client certificate signed by the CA is taken too. */
  readonly tokens = new Set([KUBE_TOKEN]);
  /** Lists in chunks (limit, continue), and the continue tokens a test makes expire (kube-lists.ts). */
  readonly chunks = new ListChunks();
  readonly faults = new KubeFaults();
  /** coordination.k8s.io/v1 Leases (kube-leases.ts). */
  readonly leases = new LeaseRegistry(
    () => this.#nextRv(),
    () => this.#nextUid(),
    this.chunks,
  );
  readonly #server: https.Server;
  readonly #o: Required<KubeStandInOptions>;
  #rv = 100;
  #uid = 0;
  url = '';
  /** Awaited before each request (logged already) is answered. */
  gate: ((method: string, path: string) => Promise<void>) | null = null;

  constructor(options: KubeStandInOptions = {}) {
    this.#o = { msPerGraceSecond: 10, forbid: [], ...options };
    // a client certificate signed by the cluster's CA authenticates as a token does (x509 client certs)
    this.#server = https.createServer(
      { cert: KUBE_CERT, key: KUBE_KEY, ca: KUBE_CERT, requestCert: true, rejectUnauthorized: false },
      (req, res) => void this.#handle(req, res),
    );
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `https://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** kubeconfig: a kubeconfig file's text that trusts this server's CA and carries its token. */
  kubeconfig(): string {
    return kubeconfigOf(this.url);
  }

  addNode(name: string, spec: StandInNode['spec'] = {}, metadata: Partial<StandInNode['metadata']> = {}): StandInNode {
    const node: StandInNode = {
      metadata: {
        name,
        uid: this.#nextUid(),
        resourceVersion: this.#nextRv(),
        labels: { 'kubernetes.io/hostname': name },
        annotations: {},
        ...metadata,
      },
      spec: structuredClone(spec),
    };
    this.nodes.set(name, node);
    return node;
  }

  addPod(namespace: string, name: string, nodeName: string, more: PodShape = {}): StandInPod {
    const pod = newPod(namespace, name, nodeName, more, () => this.#nextUid());
    this.pods.set(`${namespace}/${name}`, pod);
    return pod;
  }

  podsOn(node: string): StandInPod[] {
    return [...this.pods.values()].filter((p) => p.spec.nodeName === node);
  }

  #nextRv(): string {
    return String((this.#rv += 1));
  }

  #nextUid(): string {
    this.#uid += 1;
    return `00000000-0000-4000-8000-${String(this.#uid).padStart(12, '0')}`;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'https://stand-in');
    let body: unknown = null;
    try {
      body = text === '' ? null : JSON.parse(text);
    } catch {
      return status(res, 400, 'BadRequest', 'the body is not JSON');
    }
    const request = requestOf(req, `${url.pathname}${url.search}`, body);
    this.requests.push(request);
    res.once('finish', () => (request.answer = { status: res.statusCode, bytes: Number(res.getHeader('content-length') ?? 0) }));
    await this.gate?.(req.method ?? '', url.pathname);
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const byCertificate = (req.socket as TLSSocket).authorized;
    if (!byCertificate && (token === undefined || !this.tokens.has(token))) return status(res, 401, 'Unauthorized', 'Unauthorized');
    if (this.faults.answer(url.pathname, res)) return;
    const p = url.pathname.split('/').filter(Boolean);
    const forbid = (resource: string, verb: string, ns?: string) => this.#o.forbid.includes(resource) && forbidden(res, resource, verb, ns);
    // /api/v1/nodes/{name}/status: the status subresource, conditions merged by type
    if (p[0] === 'api' && p[1] === 'v1' && p[2] === 'nodes' && p.length === 5 && p[4] === 'status') {
      if (forbid('nodes/status', req.method === 'PATCH' ? 'patch' : 'get')) return;
      const node = this.nodes.get(p[3]!);
      if (node === undefined) return status(res, 404, 'NotFound', `nodes "${p[3]}" not found`, { name: p[3], kind: 'nodes' });
      if (req.method !== 'PATCH')
        return status(res, 405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
      return patchNodeStatus(res, node, req.headers['content-type'], body, this.#nextRv(), (n) => this.nodes.set(n.metadata.name, n));
    }
    // /api/v1/nodes[/{name}]
    if (p[0] === 'api' && p[1] === 'v1' && p[2] === 'nodes') {
      if (forbid('nodes', req.method === 'PATCH' ? 'patch' : p[3] ? 'get' : 'list')) return;
      const items = [...this.nodes.values()].map(withKind('Node'));
      const list = { kind: 'NodeList', apiVersion: 'v1', rv: String(this.#rv), items, keyOf: (n: StandInNode) => n.metadata.name };
      if (p.length === 3 && req.method === 'GET') return this.chunks.answer(res, url, list);
      const node = this.nodes.get(p[3] ?? '');
      if (p.length !== 4) return status(res, 404, 'NotFound', 'the server could not find the requested resource');
      if (node === undefined) return status(res, 404, 'NotFound', `nodes "${p[3]}" not found`, { name: p[3], kind: 'nodes' });
      if (req.method === 'GET') return json(res, 200, withKind('Node')(node));
      if (req.method === 'PATCH')
        return patchNode(res, node, req.headers['content-type'], body, this.#nextRv(), (n) => this.nodes.set(n.metadata.name, n));
      return status(res, 405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
    }
    if (p[0] === 'api' && p[1] === 'v1' && p[2] === 'pods' && p.length === 3 && req.method === 'GET') {
      if (forbid('pods', 'list')) return;
      const selector = url.searchParams.get('fieldSelector') ?? '';
      const m = /^spec\.nodeName=(.+)$/.exec(selector);
      const items = (m ? this.podsOn(m[1]!) : [...this.pods.values()]).map(withKind('Pod'));
      const keyOf = (pod: StandInPod) => `${pod.metadata.namespace}/${pod.metadata.name}`;
      return this.chunks.answer(res, url, { kind: 'PodList', apiVersion: 'v1', rv: String(this.#rv), items, keyOf });
    }
    if (p[0] === 'api' && p[1] === 'v1' && p[2] === 'namespaces' && p.length >= 5) {
      const ns = p[3]!;
      if (p[4] === 'events' && p.length === 5 && req.method === 'POST') {
        if (forbid('events', 'create', ns)) return;
        const e = body as Json & { metadata?: Json };
        const created = {
          ...e,
          metadata: {
            ...(e.metadata ?? {}),
            name: `${String(e.metadata?.generateName ?? 'event.')}${this.#nextRv()}`,
            namespace: ns,
            uid: this.#nextUid(),
          },
        };
        this.events.push(created);
        return json(res, 201, created);
      }
      if (p[4] === 'pods' && p.length === 6 && req.method === 'GET') {
        if (forbid('pods', 'get', ns)) return;
        const pod = this.pods.get(`${ns}/${p[5]}`);
        return pod
          ? json(res, 200, withKind('Pod')(pod))
          : status(res, 404, 'NotFound', `pods "${p[5]}" not found`, { name: p[5], kind: 'pods' });
      }
      if (p[4] === 'pods' && p.length === 6 && req.method === 'DELETE') {
        if (forbid('pods', 'delete', ns)) return;
        // DeleteOptions come in the body, or as query parameters (as the client sends them)
        const q = url.searchParams.get('gracePeriodSeconds');
        return this.#deletePod(res, ns, p[5]!, q === null ? body : { ...(body as object | null), gracePeriodSeconds: Number(q) });
      }
      if (p[4] === 'pods' && p[6] === 'eviction' && p.length === 7 && req.method === 'POST') {
        if (forbid('pods/eviction', 'create', ns)) return;
        return this.#evict(res, ns, p[5]!, body, url.searchParams.getAll('dryRun'));
      }
    }
    if (this.leases.handle(req.method ?? '', p, url, body, res)) return;
    status(res, 404, 'NotFound', 'the server could not find the requested resource');
  }

  #evict(res: ServerResponse, ns: string, name: string, body: unknown, dryRunQuery: string[]): void {
    const key = `${ns}/${name}`;
    const b = body as {
      kind?: string;
      apiVersion?: string;
      metadata?: { name?: string };
      deleteOptions?: { gracePeriodSeconds?: number; dryRun?: string[] };
    } | null;
    if (b?.kind !== 'Eviction' || b.apiVersion !== 'policy/v1' || b.metadata?.name !== name) {
      return status(res, 400, 'BadRequest', 'name in URL does not match name in Eviction object');
    }
    const dry = dryRunOf(dryRunQuery, b.deleteOptions);
    if (typeof dry === 'string') return status(res, 400, 'BadRequest', dry);
    const log = dry ? this.dryRuns : this.evictions;
    const answered = (code: number) => log.set(key, [...(log.get(key) ?? []), code]);
    const pod = this.pods.get(key);
    if (pod === undefined) {
      answered(404);
      return status(res, 404, 'NotFound', `pods "${name}" not found`, { name, kind: 'pods' });
    }
    const held = this.budgets.get(key) ?? 0;
    if (held > 0) {
      if (!dry) this.budgets.set(key, held - 1);
      answered(429);
      const budget = this.budgetNames.get(key) ?? 'pdb';
      return status(res, 429, 'TooManyRequests', "Cannot evict pod as it would violate the pod's disruption budget.", {
        causes: [{ reason: 'DisruptionBudget', message: `The disruption budget ${budget} needs 1 healthy pods and has 1 currently` }],
      });
    }
    answered(201);
    if (!dry) this.#terminate(key, pod, b.deleteOptions?.gracePeriodSeconds);
    json(res, 201, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 });
  }

  /** DELETE a pod (DeleteOptions in the body): no disruption budget is asked; 200 with the pod, now terminating. */
  #deletePod(res: ServerResponse, ns: string, name: string, body: unknown): void {
    const key = `${ns}/${name}`;
    const pod = this.pods.get(key);
    if (pod === undefined) return status(res, 404, 'NotFound', `pods "${name}" not found`, { name, kind: 'pods' });
    const grace = (body as { gracePeriodSeconds?: number } | null)?.gracePeriodSeconds;
    this.deletions.set(key, grace ?? null);
    this.#terminate(key, pod, grace);
    json(res, 200, withKind('Pod')(pod));
  }

  /** terminate starts a pod's grace period (the smaller of the asked one and its own), then removes it. */
  #terminate(key: string, pod: StandInPod, asked: number | undefined): void {
    if (pod.metadata.deletionTimestamp !== undefined) return;
    const own = pod.spec.terminationGracePeriodSeconds ?? 30;
    const grace = Math.min(asked ?? own, own);
    pod.metadata.deletionTimestamp = new Date(Date.now() + grace * 1000).toISOString();
    const uid = pod.metadata.uid;
    setTimeout(() => {
      if (this.pods.get(key)?.metadata.uid === uid) this.pods.delete(key);
    }, grace * this.#o.msPerGraceSecond).unref();
  }
}
