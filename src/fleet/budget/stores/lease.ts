/**
 * LeaseFleetStore keeps a group's records as coordination.k8s.io/v1 Leases in one namespace: one
 * Lease per record (`se-bridge-<group>-<name>`, labelled with the group and the kind of record), the record in an
 * annotation, the holder in `spec.holderIdentity` so `kubectl get leases` reads well. A Lease is
 * created with POST (409 AlreadyExists when another came first) and replaced with PUT carrying the
 * resourceVersion read (409 Conflict when it changed since).
 * https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/lease-v1/
 * The Kubernetes client (src/kube) is loaded only here, when a kubernetes store is configured.
 */
import { createHash } from 'node:crypto';
import type { FleetStoreConfig } from './config.ts';
import { KubeApiError, KubeConfigError, KubeConnection, NOT_CONFIGURED } from '../../../kube/client.ts';
import { FleetStoreError, recordOf, type FleetStore, type Versioned } from './port.ts';
import { watchRecords, type Seen, type V1Lease } from './lease-watch.ts';

type KubeConfig = Extract<FleetStoreConfig, { type: 'kubernetes' }>;

export const RECORD_ANNOTATION = 'se-bridge.io/record';
export const NAME_ANNOTATION = 'se-bridge.io/name';
export const GROUP_LABEL = 'se-bridge.io/group';
/** What a Lease holds (slot, member, record), so a list asks the API server for one kind only. */
export const KIND_LABEL = 'se-bridge.io/kind';

const KINDS = ['slot', 'member', 'queue', 'asking', 'record'];
const kindOf = (name: string): string => KINDS.find((k) => k !== 'record' && name.startsWith(`${k}-`)) ?? 'record';

/** selectorFor: the labels of a list of records named `prefix`…; a Lease written before the kind label is listed as any kind. */
function selectorFor(group: string, prefix: string): string {
  // every group's records (the fleet view): those of the group `…`, named `<group>/<name>`
  if (group === '') return GROUP_LABEL;
  const others = KINDS.filter((k) => k !== kindOf(prefix));
  return [`${GROUP_LABEL}=${group}`, ...(prefix === '' ? [] : others.map((k) => `${KIND_LABEL}!=${k}`))].join(',');
}

/** leaseName: a DNS subdomain name for a record of a group (hashed when a name would be too long or not a name). */
export function leaseName(group: string, name: string): string {
  const plain = `se-bridge-${group}-${name}`;
  if (plain.length <= 253 && /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(plain)) return plain;
  const safe = name
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .slice(0, 40);
  return `se-bridge-${group}-${safe}-${createHash('sha256').update(name).digest('hex').slice(0, 12)}`.replace(/-+/g, '-');
}

export class LeaseFleetStore implements FleetStore {
  readonly where: string;
  readonly #kube: KubeConnection;
  readonly #namespace: string;
  readonly #group: string;

  private constructor(kube: KubeConnection, namespace: string, group: string) {
    this.#kube = kube;
    this.#namespace = namespace;
    this.#group = group;
    this.where = `kubernetes leases ${namespace}/${group === '' ? GROUP_LABEL : `${GROUP_LABEL}=${group}`}`;
  }

  static async open(config: KubeConfig, group: string): Promise<LeaseFleetStore> {
    const kube = KubeConnection.open(config.kubeconfig);
    if (kube === null) throw new FleetStoreError('connect', NOT_CONFIGURED);
    return new LeaseFleetStore(kube, config.namespace, group);
  }

  async get(name: string, signal?: AbortSignal): Promise<Versioned | null> {
    try {
      const lease = await this.#kube.request<V1Lease>({ method: 'GET', path: this.#path(leaseName(this.#group, name)), signal });
      return fromLease(lease, name);
    } catch (err) {
      if (statusOf(err) === 404) return null;
      throw failure(`read ${name}`, err);
    }
  }

  async put(name: string, value: unknown, version: string | null, signal?: AbortSignal): Promise<string | null> {
    const holder = (value as { vm?: unknown } | null)?.vm;
    const lease = leaseName(this.#group, name);
    const body: V1Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: lease,
        namespace: this.#namespace,
        labels: { [GROUP_LABEL]: this.#group, [KIND_LABEL]: kindOf(name) },
        annotations: { [NAME_ANNOTATION]: name, [RECORD_ANNOTATION]: JSON.stringify(value) },
        ...(version === null ? {} : { resourceVersion: version }),
      },
      spec: {
        ...(typeof holder === 'string' ? { holderIdentity: holder } : {}),
        renewTime: new Date().toISOString().replace('Z', '000Z'),
      },
    };
    try {
      const written =
        version === null
          ? await this.#kube.request<V1Lease>({ method: 'POST', path: this.#path(), body, signal })
          : await this.#kube.request<V1Lease>({ method: 'PUT', path: this.#path(lease), body, signal });
      return written.metadata?.resourceVersion ?? null;
    } catch (err) {
      const status = statusOf(err);
      // 409: AlreadyExists on create, Conflict on replace; 404: replaced a Lease deleted meanwhile
      if (status === 409 || (status === 404 && version !== null)) return null;
      throw failure(`write ${name}`, err);
    }
  }

  async remove(name: string, version: string, signal?: AbortSignal): Promise<boolean> {
    try {
      await this.#kube.request({
        method: 'DELETE',
        path: this.#path(leaseName(this.#group, name)),
        body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { resourceVersion: version } },
        signal,
      });
      return true;
    } catch (err) {
      // 409: the precondition failed (another writer came first); 404: gone already
      const status = statusOf(err);
      if (status === 409 || status === 404) return false;
      throw failure(`delete ${name}`, err);
    }
  }

  list(prefix: string, signal?: AbortSignal): Promise<Versioned[]> {
    // in chunks of 500 Leases (a record is a few KiB), each kept as its record alone
    return this.#list(prefix, 500, Infinity, signal);
  }

  head(prefix: string, limit: number, signal?: AbortSignal): Promise<Versioned[]> {
    // the API server lists in the order of the names: the first page (of the records named so) is the head
    return this.#list(prefix, Math.max(1, Math.min(limit, 500)), limit, signal);
  }

  async #list(prefix: string, perPage: number, most: number, signal?: AbortSignal): Promise<Versioned[]> {
    try {
      const kept = await this.#kube.list<V1Lease, Versioned[]>(
        { path: this.#path(), query: { labelSelector: selectorFor(this.#group, prefix) }, limit: perPage, signal },
        {
          start: () => [],
          page: (kept, items) => {
            for (const l of items) {
              const record = fromLease(l, this.#nameOf(l));
              if (record !== null && record.name.startsWith(prefix)) kept.push(record);
            }
            return kept;
          },
          done: (kept) => kept.length >= most,
        },
      );
      return kept.slice(0, most);
    } catch (err) {
      throw failure(`list ${prefix}*`, err);
    }
  }

  watch(prefix: string, signal: AbortSignal, seen: Seen): Promise<void> {
    const query = { labelSelector: selectorFor(this.#group, prefix) };
    const recordOfLease = (l: V1Lease) => {
      const record = fromLease(l, this.#nameOf(l));
      return record !== null && record.name.startsWith(prefix) ? record : null;
    };
    return watchRecords(
      { kube: this.#kube, path: this.#path(), query, recordOf: recordOfLease, failure: (err) => failure(`watch ${prefix}*`, err) },
      signal,
      seen,
    );
  }

  async close(): Promise<void> {
    this.#kube.close();
  }

  #path(lease = ''): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(this.#namespace)}/leases${lease === '' ? '' : `/${encodeURIComponent(lease)}`}`;
  }

  /** nameOf: a Lease's record name; in the whole namespace's view (group ''), `<group>/<name>`. */
  #nameOf(l: V1Lease): string {
    const name = l.metadata?.annotations?.[NAME_ANNOTATION] ?? '';
    const group = l.metadata?.labels?.[GROUP_LABEL] ?? '';
    return this.#group !== '' || name === '' || group === '' ? name : `${group}/${name}`;
  }
}

function fromLease(lease: V1Lease, name: string): Versioned | null {
  const text = lease.metadata?.annotations?.[RECORD_ANNOTATION];
  const version = lease.metadata?.resourceVersion;
  if (text === undefined || version === undefined || name === '') return null;
  return recordOf(name, text, version);
}

const statusOf = (err: unknown): number | undefined => (err instanceof KubeApiError ? err.status : undefined);

function failure(operation: string, err: unknown): FleetStoreError {
  if (err instanceof FleetStoreError) return err;
  const e = err as { message?: string; cause?: { code?: string; message?: string } };
  if (err instanceof KubeApiError) {
    let said = '';
    try {
      said = (JSON.parse(err.body) as { message?: string }).message ?? '';
    } catch {
      said = err.body.slice(0, 200);
    }
    return new FleetStoreError(operation, `the Kubernetes API answered ${err.status}${said ? `: ${said}` : ''}`, err);
  }
  if (err instanceof KubeConfigError) return new FleetStoreError(operation, err.message, err);
  return new FleetStoreError(
    operation,
    `cannot reach the Kubernetes API server (${e.cause?.code ?? e.cause?.message ?? e.message ?? String(err)})`,
    err,
  );
}
