/**
 * The fleet budget's two stores for tests and benchmarks, each behind a TCP gate that a test can
 * close: Azure Blob Storage served by Azurite (Microsoft's emulator, see azurite.ts) and
 * coordination.k8s.io/v1 Leases served by the Kubernetes API stand-in (kube-apiserver.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { ApprovalError } from '../src/approval/service.ts';
import type { VmIdentity } from '../src/imds/identity.ts';
import type { ScheduledEvent } from '../src/imds/wire.ts';
import { Azurite, DEV_ACCOUNT } from '../src/simulator/azurite.ts';
import { KubeStandIn } from './kube-apiserver.ts';
import { kubeconfigOf } from './kube-objects.ts';
import { TcpGate } from './tcp-gate.ts';

export type StoreKind = 'blob' | 'kubernetes';

/** scheduledFor: a Reboot Scheduled for `vm` 15 minutes from now, with a new EventId (or what `more` says). */
export function scheduledFor(vm: string, more: Partial<ScheduledEvent> = {}): ScheduledEvent {
  return {
    eventId: randomUUID().toUpperCase(),
    eventType: 'Reboot',
    resourceType: 'VirtualMachine',
    resources: [vm],
    eventStatus: 'Scheduled',
    notBefore: new Date(Date.now() + 15 * 60_000).toISOString(),
    description: '',
    eventSource: 'Platform',
    durationInSeconds: -1,
    raw: {},
    ...more,
  };
}

/** outcome: what an approval through the budget came to: `granted`, or the ApprovalError's code. */
export async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'granted';
  } catch (err) {
    if (err instanceof ApprovalError) return err.code;
    throw err;
  }
}

/** memberVm: the identity of a member VM named `name` (configured, so its name is known). */
export const memberVm = (name: string): VmIdentity => ({
  name,
  resourceId: `/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/${name}`,
  vmScaleSetName: null,
  subscriptionId: '00000000-0000-0000-0000-000000000000',
  resourceGroupName: 'rg',
  location: 'westeurope',
  zone: null,
  origin: 'config',
  nameKnown: true,
});
export const STORE_KINDS: readonly StoreKind[] = ['blob', 'kubernetes'];

export class FleetStores {
  readonly azurite: Azurite;
  readonly kube: KubeStandIn;
  readonly gates: Readonly<Record<StoreKind, TcpGate>>;
  readonly #dir: string;

  private constructor(azurite: Azurite, kube: KubeStandIn, gates: Record<StoreKind, TcpGate>, dir: string) {
    this.azurite = azurite;
    this.kube = kube;
    this.gates = gates;
    this.#dir = dir;
  }

  static async start(): Promise<FleetStores> {
    const [azurite, kube] = await Promise.all([Azurite.start(), new KubeStandIn().start()]);
    const [blob, kubernetes] = await Promise.all([new TcpGate(azurite.url).start(), new TcpGate(kube.url).start()]);
    const dir = mkdtempSync(join(tmpdir(), 'se-bridge-test-fleet-'));
    writeFileSync(join(dir, 'kubeconfig'), kubeconfigOf(kubernetes.url(kube.url)));
    return new FleetStores(azurite, kube, { blob, kubernetes }, dir);
  }

  /** config: the `fleet.store` section of a member, through the store's gate. */
  config(kind: StoreKind): Record<string, unknown> {
    return kind === 'blob'
      ? {
          type: 'blob',
          connectionString: this.azurite.connectionString(`${this.gates.blob.url(this.azurite.url)}/${DEV_ACCOUNT}`),
          container: 'fleet',
        }
      : { type: 'kubernetes', namespace: 'se-bridge', kubeconfig: join(this.#dir, 'kubeconfig') };
  }

  async stop(): Promise<void> {
    await Promise.all([this.gates.blob.stop(), this.gates.kubernetes.stop()]);
    await Promise.all([this.azurite.stop(), this.kube.close()]);
    rmSync(this.#dir, { recursive: true, force: true });
  }
}

/** fleetStoresPerFile: the two stores, started before the file's tests and stopped after them; call the function it returns inside a test. */
export function fleetStoresPerFile(): () => FleetStores {
  let stores: FleetStores | undefined;
  beforeAll(async () => {
    stores = await FleetStores.start();
  }, 60_000);
  afterAll(async () => {
    await stores?.stop();
  });
  return () => {
    if (stores === undefined) throw new Error('the fleet stores are not started: called outside a test');
    return stores;
  };
}

/**
 * LeaseStore: the Lease store alone (the Kubernetes API stand-in, in this process): a test of the
 * budget's rules that any store serves starts in milliseconds, with no emulator to spawn.
 */
export class LeaseStore {
  readonly kube: KubeStandIn;
  readonly #dir: string;

  private constructor(kube: KubeStandIn, dir: string) {
    this.kube = kube;
    this.#dir = dir;
  }

  static async start(): Promise<LeaseStore> {
    const kube = await new KubeStandIn().start();
    const dir = mkdtempSync(join(tmpdir(), 'se-bridge-test-leases-'));
    writeFileSync(join(dir, 'kubeconfig'), kubeconfigOf(kube.url));
    return new LeaseStore(kube, dir);
  }

  /** config: the `fleet.store` section of a member (kubernetes is the only kind it serves). */
  config(kind: StoreKind): Record<string, unknown> {
    if (kind !== 'kubernetes') throw new Error('the Lease store serves the kubernetes kind only');
    return { type: 'kubernetes', namespace: 'se-bridge', kubeconfig: join(this.#dir, 'kubeconfig') };
  }

  async stop(): Promise<void> {
    await this.kube.close();
    rmSync(this.#dir, { recursive: true, force: true });
  }
}

/** leaseStorePerFile: the Lease store, started before the file's tests and stopped after them. */
export function leaseStorePerFile(): () => LeaseStore {
  let store: LeaseStore | undefined;
  beforeAll(async () => {
    store = await LeaseStore.start();
  }, 60_000);
  afterAll(async () => {
    await store?.stop();
  });
  return () => {
    if (store === undefined) throw new Error('the Lease store is not started: called outside a test');
    return store;
  };
}
