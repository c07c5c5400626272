/**
 * VmIdentity is who this VM is: the name IMDS lists in `Resources`, and the ARM facts that go
 * into every CloudEvent. It comes from `/metadata/instance/compute`, may be overridden in the
 * configuration, and falls back to the host name when IMDS cannot say.
 */
import { hostname } from 'node:os';
import type { WireInstanceCompute } from './wire.ts';

export interface VmIdentity {
  readonly name: string;
  readonly resourceId: string | null;
  readonly vmScaleSetName: string | null;
  readonly subscriptionId: string | null;
  readonly resourceGroupName: string | null;
  readonly location: string | null;
  readonly zone: string | null;
  /** Where the facts came from: `imds`, `config`, or `fallback` (host name only). */
  readonly origin: 'imds' | 'config' | 'fallback';
  /**
   * The name is this VM's own (from IMDS or the configuration), not the host name taken while
   * IMDS cannot say: on a scale set (`vmss00000A` vs `vmss_10`) the two differ.
   */
  readonly nameKnown: boolean;
}

export type IdentityOverride = Partial<Omit<VmIdentity, 'origin' | 'nameKnown'>>;

const empty = (v: string | undefined | null): string | null => (v === undefined || v === null || v === '' ? null : v);

/** identityFrom merges what IMDS said (if anything) with the configured overrides. */
export function identityFrom(compute: WireInstanceCompute | null, override: IdentityOverride = {}): VmIdentity {
  const name = empty(override.name) ?? empty(compute?.name) ?? hostname();
  const hasOverride = Object.values(override).some((v) => v !== undefined && v !== null);
  return Object.freeze({
    name,
    resourceId: empty(override.resourceId) ?? empty(compute?.resourceId),
    vmScaleSetName: empty(override.vmScaleSetName) ?? empty(compute?.vmScaleSetName),
    subscriptionId: empty(override.subscriptionId) ?? empty(compute?.subscriptionId),
    resourceGroupName: empty(override.resourceGroupName) ?? empty(compute?.resourceGroupName),
    location: empty(override.location) ?? empty(compute?.location),
    zone: empty(override.zone) ?? empty(compute?.zone),
    origin: compute !== null ? 'imds' : hasOverride ? 'config' : 'fallback',
    nameKnown: empty(override.name) !== null || empty(compute?.name) !== null,
  });
}

/**
 * routingName is the name to decide by which events are this VM's, or null while the VM does
 * not know its name: then every event is treated as possibly its own (fail closed).
 */
export function routingName(vm: VmIdentity): string | null {
  return vm.nameKnown ? vm.name : null;
}

/** affects tells whether `resources` names this VM. Azure resource names are case-insensitive. */
export function affects(resources: readonly string[], vmName: string): boolean {
  const me = vmName.toLowerCase();
  return resources.some((r) => r.toLowerCase() === me);
}

/** isLeader tells whether this VM is the first name in `resources`: the VM that speaks for the group. */
export function isLeader(resources: readonly string[], vmName: string): boolean {
  return resources.length > 0 && resources[0]!.toLowerCase() === vmName.toLowerCase();
}
