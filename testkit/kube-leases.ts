/**
 * coordination.k8s.io/v1 Leases for the Kubernetes API stand-in, written from the API reference
 * (https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/lease-v1/): what the
 * fleet budget's Lease store calls, with the real paths, bodies and status codes.
 *
 *   GET  /apis/coordination.k8s.io/v1/namespaces/{ns}/leases?labelSelector=k=v,j!=w,e,!n   LeaseList
 *        (in chunks: limit, continue; kube-lists.ts)
 *   POST /apis/coordination.k8s.io/v1/namespaces/{ns}/leases          201; 409 AlreadyExists
 *   GET  /apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}   200; 404 NotFound
 *   PUT  /apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}   200; 409 Conflict when
 *        metadata.resourceVersion is not the current one; 404 when there is no such Lease
 *   DELETE /apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}  200 with a Status; 409 Conflict
 *        when DeleteOptions' preconditions.resourceVersion is not the current one; 404
 *
 *   GET  /apis/coordination.k8s.io/v1/namespaces/{ns}/leases?watch=1&resourceVersion=RV&labelSelector=…
 *        a stream of watch events (kube-watch.ts)
 *
 * Each write gives the object a new resourceVersion, as etcd's revision does.
 */
import type { ServerResponse } from 'node:http';
import { json, status, type Json } from './kube-objects.ts';
import type { ListChunks } from './kube-lists.ts';
import { WatchLog } from './kube-watch.ts';

interface Lease {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    creationTimestamp: string;
  };
  spec: Json;
}

const GROUP = 'coordination.k8s.io';

export class LeaseRegistry {
  readonly leases = new Map<string, Lease>();
  /** How many writes each answer got, by status: 201, 200, 409. */
  readonly writes = new Map<number, number>();
  readonly #nextRv: () => string;
  readonly #nextUid: () => string;
  readonly #chunks: ListChunks;
  /** Every change, for watches (kube-watch.ts); a test sets how many it keeps and makes watches expire. */
  readonly watches = new WatchLog<Lease>(
    (rv) => ({ kind: 'Lease', apiVersion: `${GROUP}/v1`, metadata: { resourceVersion: rv } }),
    (l) => l.metadata.resourceVersion,
  );

  constructor(nextRv: () => string, nextUid: () => string, chunks: ListChunks) {
    this.#nextRv = nextRv;
    this.#nextUid = nextUid;
    this.#chunks = chunks;
  }

  /** handle answers a request under /apis/coordination.k8s.io/v1/namespaces/{ns}/leases; false when the path is not one. */
  handle(method: string, p: readonly string[], url: URL, body: unknown, res: ServerResponse): boolean {
    if (p[0] !== 'apis' || p[1] !== GROUP || p[2] !== 'v1' || p[3] !== 'namespaces' || p[5] !== 'leases') return false;
    const ns = p[4]!;
    const name = p[6];
    if (name === undefined && method === 'GET') return (this.#list(res, ns, url), true);
    if (name === undefined && method === 'POST') return (this.#create(res, ns, body), true);
    if (name !== undefined && p.length === 7 && method === 'GET') {
      const lease = this.leases.get(`${ns}/${name}`);
      if (lease === undefined) status(res, 404, 'NotFound', `leases.${GROUP} "${name}" not found`, { name, group: GROUP, kind: 'leases' });
      else json(res, 200, full(lease));
      return true;
    }
    if (name !== undefined && p.length === 7 && method === 'PUT') return (this.#replace(res, ns, name, body), true);
    if (name !== undefined && p.length === 7 && method === 'DELETE') return (this.#delete(res, ns, name, body), true);
    status(res, 405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
    return true;
  }

  #list(res: ServerResponse, ns: string, url: URL): void {
    const holds = selected(url.searchParams.get('labelSelector'));
    const here = (l: Lease) => l.metadata.namespace === ns && holds(l);
    if (/^(true|1)$/.test(url.searchParams.get('watch') ?? ''))
      return this.watches.serve(res, url, () => [...this.leases.values()], here, full);
    const items = [...this.leases.values()].filter(here);
    const list = {
      kind: 'LeaseList',
      apiVersion: `${GROUP}/v1`,
      rv: this.#nextRv(),
      items: items.map(full),
      keyOf: (l: Lease) => l.metadata.name,
    };
    this.#chunks.answer(res, url, list);
  }

  #create(res: ServerResponse, ns: string, body: unknown): void {
    const b = body as { metadata?: Partial<Lease['metadata']>; spec?: Json } | null;
    const name = b?.metadata?.name;
    if (typeof name !== 'string' || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name) || name.length > 253)
      return status(res, 422, 'Invalid', `Lease.${GROUP} "${String(name)}" is invalid: metadata.name: Invalid value`);
    if (b!.metadata!.resourceVersion !== undefined)
      return status(res, 400, 'BadRequest', 'resourceVersion should not be set on objects to be created');
    const key = `${ns}/${name}`;
    if (this.leases.has(key)) {
      this.#count(409);
      return status(res, 409, 'AlreadyExists', `leases.${GROUP} "${name}" already exists`, { name, group: GROUP, kind: 'leases' });
    }
    const lease: Lease = {
      metadata: {
        name,
        namespace: ns,
        uid: this.#nextUid(),
        resourceVersion: this.#nextRv(),
        creationTimestamp: new Date().toISOString(),
        ...(b!.metadata!.labels ? { labels: b!.metadata!.labels } : {}),
        ...(b!.metadata!.annotations ? { annotations: b!.metadata!.annotations } : {}),
      },
      spec: b!.spec ?? {},
    };
    this.leases.set(key, lease);
    this.watches.record('ADDED', lease);
    this.#count(201);
    json(res, 201, full(lease));
  }

  #replace(res: ServerResponse, ns: string, name: string, body: unknown): void {
    const b = body as { metadata?: Partial<Lease['metadata']>; spec?: Json } | null;
    if (b?.metadata?.name !== name) return status(res, 400, 'BadRequest', 'the name of the object does not match the name on the URL');
    const key = `${ns}/${name}`;
    const current = this.leases.get(key);
    if (current === undefined)
      return status(res, 404, 'NotFound', `leases.${GROUP} "${name}" not found`, { name, group: GROUP, kind: 'leases' });
    if (b.metadata.resourceVersion !== undefined && b.metadata.resourceVersion !== current.metadata.resourceVersion) {
      this.#count(409);
      return status(
        res,
        409,
        'Conflict',
        `Operation cannot be fulfilled on leases.${GROUP} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
        { name, group: GROUP, kind: 'leases' },
      );
    }
    const next: Lease = {
      metadata: {
        ...current.metadata,
        resourceVersion: this.#nextRv(),
        ...(b.metadata.labels ? { labels: b.metadata.labels } : {}),
        ...(b.metadata.annotations ? { annotations: b.metadata.annotations } : {}),
      },
      spec: b.spec ?? {},
    };
    this.leases.set(key, next);
    this.watches.record('MODIFIED', next);
    this.#count(200);
    json(res, 200, full(next));
  }

  #delete(res: ServerResponse, ns: string, name: string, body: unknown): void {
    const key = `${ns}/${name}`;
    const current = this.leases.get(key);
    if (current === undefined)
      return status(res, 404, 'NotFound', `leases.${GROUP} "${name}" not found`, { name, group: GROUP, kind: 'leases' });
    const wanted = (body as { preconditions?: { resourceVersion?: string } } | null)?.preconditions?.resourceVersion;
    if (wanted !== undefined && wanted !== current.metadata.resourceVersion) {
      this.#count(409);
      return status(
        res,
        409,
        'Conflict',
        `Operation cannot be fulfilled on leases.${GROUP} "${name}": Precondition failed: ResourceVersion in precondition: ${wanted}, ResourceVersion in object meta: ${current.metadata.resourceVersion}`,
        { name, group: GROUP, kind: 'leases' },
      );
    }
    this.leases.delete(key);
    this.watches.record('DELETED', { ...current, metadata: { ...current.metadata, resourceVersion: this.#nextRv() } });
    this.#count(200);
    json(res, 200, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      details: { name, group: GROUP, kind: 'leases', uid: current.metadata.uid },
    });
  }

  #count(code: number): void {
    this.writes.set(code, (this.writes.get(code) ?? 0) + 1);
  }
}

const full = (l: Lease) => ({ kind: 'Lease', apiVersion: `${GROUP}/v1`, ...structuredClone(l) });

/**
 * selected: whether a Lease is one a label selector takes. The requirements, as the API server
 * reads them: equality-based, k=v, k==v, k!=v (true also without the label); and the set-based
 * existence ones: k (the label is there), !k (it is not).
 */
function selected(selector: string | null): (l: Lease) => boolean {
  const wanted = (selector ?? '')
    .split(',')
    .filter(Boolean)
    .map((r) => r.trim())
    .map((r) => {
      const exists = /^(!?)([A-Za-z0-9._/-]+)$/.exec(r);
      if (exists !== null) return { key: exists[2]!, not: exists[1] === '!', value: null };
      const m = /^([^!=]+)(!=|==|=)(.*)$/.exec(r);
      return { key: m?.[1] ?? '', not: m?.[2] === '!=', value: m?.[3] ?? '' };
    });
  const holds = (l: Lease, w: (typeof wanted)[number]) =>
    (w.value === null ? l.metadata.labels?.[w.key] !== undefined : l.metadata.labels?.[w.key] === w.value) !== w.not;
  return (l) => wanted.every((w) => holds(l, w));
}
