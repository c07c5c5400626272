/**
 * What the fleet budget's Lease store costs the API server, read from the Kubernetes API
 * stand-in's own records of its requests (kube-apiserver.ts): the requests by the verb the API
 * server (and RBAC) calls them, the bytes answered, the conditional writes refused (409: AlreadyExists
 * on create, Conflict on update or delete), and each Lease's busiest second. The Lease counterpart of
 * what CountingProxy counts of Blob Storage, in the same shape.
 */
import { recordKind } from './counting-proxy.ts';
import type { KubeStandIn } from './kube-apiserver.ts';
import type { Request } from './kube-objects.ts';

/** The verbs a Lease meter always reports, even at 0 (the store never watches; a watch would show here). */
export const LEASE_VERBS = ['list', 'get', 'create', 'update', 'watch'] as const;

const LEASES = /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/[^/]+\/leases(?:\/([^/]+))?$/;
const KIND_LABEL = 'se-bridge.io/kind';

/** leaseVerb: the API server's verb of a request to the Lease API (list, watch, get, create, update, patch, delete), or null when it is not one. */
export function leaseVerb(method: string, path: string): string | null {
  const url = new URL(path, 'https://stand-in');
  const m = LEASES.exec(url.pathname);
  if (m === null) return null;
  const named = m[1] !== undefined;
  if (method === 'GET') return /^(true|1)$/.test(url.searchParams.get('watch') ?? '') ? 'watch' : named ? 'get' : 'list';
  if (method === 'DELETE') return named ? 'delete' : 'deletecollection';
  return { POST: 'create', PUT: 'update', PATCH: 'patch' }[method] ?? method.toLowerCase();
}

/** leaseNameOf: the Lease a request is about (in its path, or a create's body), or undefined for a list. */
function leaseNameOf(r: Request): string | undefined {
  const named = LEASES.exec(new URL(r.path, 'https://stand-in').pathname)?.[1];
  if (named !== undefined) return decodeURIComponent(named);
  const name = (r.body as { metadata?: { name?: unknown } } | null)?.metadata?.name;
  return r.method === 'POST' && typeof name === 'string' ? name : undefined;
}

/**
 * kindOf: the kind of record a written Lease holds (slot, wave, overflow, member, record): its kind label when the
 * request carries the Lease, else its name (`se-bridge-<group>-slot-0`, `…-member-…`).
 */
function kindOf(r: Request, lease: string): string {
  const label = (r.body as { metadata?: { labels?: Record<string, unknown> } } | null)?.metadata?.labels?.[KIND_LABEL];
  const kind = typeof label === 'string' ? label : /-slot-/.test(lease) ? 'slot' : /-member-/.test(lease) ? 'member' : 'record';
  // the notices, overflow records and the pause are labelled as slots (listed with them): told apart by name, as on Blob Storage
  return kind === 'slot' ? recordKind(lease.slice(lease.lastIndexOf('-slot-') + 1)) : kind;
}

/** listedKind: what a list asks for, from its label selector: the one kind it does not exclude, or `all`. */
function listedKind(path: string): string {
  const selector = new URL(path, 'https://stand-in').searchParams.get('labelSelector') ?? '';
  const excluded = selector
    .split(',')
    .map((r) => r.trim())
    .filter((r) => r.startsWith(`${KIND_LABEL}!=`))
    .map((r) => r.slice(KIND_LABEL.length + 2));
  const left = ['slot', 'member', 'queue', 'asking', 'record'].filter((k) => !excluded.includes(k));
  // the queue's entries, held or asking, are counted as one
  return left.length === 1 ? left[0]!.replace('asking', 'queue') : 'all';
}

/** What a LeaseMeter counted between two takes. */
export interface LeaseCost {
  /** Requests by verb (LEASE_VERBS always; `other`: requests to anything but Leases). */
  readonly counts: Record<string, number>;
  /** Writes answered 409, and the same by the kind of record written. */
  readonly lost: number;
  readonly lostBy: Record<string, number>;
  /** Bytes of the answers' bodies, by verb, and the lists' by the kind listed (slot, member, record, all). */
  readonly bytes: number;
  readonly bytesBy: Record<string, number>;
  readonly listBytesBy: Record<string, number>;
  /** Each Lease's most requests in one second (the lists: `list`). */
  readonly busiestSecond: Record<string, number>;
}

/** LeaseMeter counts the stand-in's requests since its last take. */
export class LeaseMeter {
  readonly #kube: KubeStandIn;
  #seen: number;

  constructor(kube: KubeStandIn) {
    this.#kube = kube;
    this.#seen = kube.requests.length;
  }

  /** writes: the creates and updates since the last take (a live count, taken nothing). */
  writes(): number {
    return this.#kube.requests.slice(this.#seen).filter((r) => ['create', 'update'].includes(leaseVerb(r.method, r.path) ?? '')).length;
  }

  /** take: the cost since the last take, and a fresh start (a request not answered yet counts, its answer does not). */
  take(): LeaseCost {
    const counts: Record<string, number> = Object.fromEntries(LEASE_VERBS.map((v) => [v, 0]));
    const lostBy: Record<string, number> = {};
    const bytesBy: Record<string, number> = {};
    const listBytesBy: Record<string, number> = {};
    const perSecond = new Map<string, Map<number, number>>();
    const add = (to: Record<string, number>, key: string, by: number) => (to[key] = (to[key] ?? 0) + by);
    const requests = this.#kube.requests.slice(this.#seen);
    this.#seen = this.#kube.requests.length;
    for (const r of requests) {
      const verb = leaseVerb(r.method, r.path);
      if (verb === null) {
        add(counts, 'other', 1);
        continue;
      }
      add(counts, verb, 1);
      const bytes = r.answer?.bytes ?? 0;
      add(bytesBy, verb, bytes);
      if (verb === 'list') add(listBytesBy, listedKind(r.path), bytes);
      const lease = leaseNameOf(r);
      if (r.answer?.status === 409 && lease !== undefined) add(lostBy, kindOf(r, lease), 1);
      const key = lease ?? verb;
      const second = Math.floor(r.at / 1000);
      const seconds = perSecond.get(key) ?? new Map<number, number>();
      perSecond.set(key, seconds.set(second, (seconds.get(second) ?? 0) + 1));
    }
    const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
    return {
      counts,
      lost: sum(lostBy),
      lostBy,
      bytes: sum(bytesBy),
      bytesBy,
      listBytesBy,
      busiestSecond: Object.fromEntries([...perSecond].map(([lease, seconds]) => [lease, Math.max(...seconds.values())])),
    };
  }
}
