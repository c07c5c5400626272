/**
 * VmResourceId: a VM's Azure resource id, parsed, never concatenated. Only two shapes are ids of
 * a VM: a virtual machine's (`/subscriptions/<guid>/resourceGroups/<name>/providers/
 * Microsoft.Compute/virtualMachines/<name>`) and a scale-set instance's (`…/virtualMachineScaleSets/
 * <name>/virtualMachines/<instance>`). Anything else (a URL, a query, a fragment, an encoded or
 * empty segment, a dot segment, another provider or type, more segments) is no VM's id. A URL is
 * then made from the typed value by a fixed template over an endpoint's origin, each segment
 * encoded, as Azure's own SDKs do (azcore's `arm.ParseResourceID`, and `url.PathEscape` into a
 * generated client's path).
 * https://learn.microsoft.com/azure/azure-resource-manager/management/resource-name-rules
 */

export interface VmResourceId {
  /** The subscription, a GUID in lower case. */
  readonly subscriptionId: string;
  readonly resourceGroup: string;
  /** The scale set of an instance; null for a virtual machine. */
  readonly scaleSet: string | null;
  /** The VM's name (a virtual machine), or the instance id (a scale-set instance). */
  readonly name: string;
}

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A resource group: letters and digits of any script, `_`, `-`, `.`, `(`, `)`; 1 to 90; never ending in a dot. */
const RESOURCE_GROUP = /^[\p{L}\p{N}_\-.()]{1,90}$/u;
/** A VM's or scale set's name: letters, digits, `_`, `-`, `.`; 1 to 80; never starting with `_`, never ending in `.` or `-`. */
const NAME = /^[\p{L}\p{N}][\p{L}\p{N}_\-.]{0,79}$/u;
const INSTANCE = /^\d{1,10}$/;

const group = (s: string): boolean => RESOURCE_GROUP.test(s) && !s.endsWith('.');
const name = (s: string): boolean => NAME.test(s) && !/[.-]$/.test(s);

/** under: the subscription and resource group of a Microsoft.Compute id, and the segments after the provider; null for anything else. */
function under(text: unknown): { base: { subscriptionId: string; resourceGroup: string }; rest: string[] } | null {
  if (typeof text !== 'string' || text.length > 512 || !text.startsWith('/')) return null;
  const p = text.slice(1).split('/');
  const is = (i: number, word: string) => p[i]?.toLowerCase() === word.toLowerCase();
  if (!(is(0, 'subscriptions') && is(2, 'resourceGroups') && is(4, 'providers') && is(5, 'Microsoft.Compute'))) return null;
  const [sub, rg] = [p[1]!, p[3]!];
  if (!GUID.test(sub) || !group(rg)) return null;
  return { base: { subscriptionId: sub.toLowerCase(), resourceGroup: rg }, rest: p.slice(6) };
}

const word = (s: string | undefined, w: string): boolean => s?.toLowerCase() === w.toLowerCase();

/**
 * parseVmResourceId: the typed id, or null when `text` is not a VM's or a scale-set instance's
 * resource id. The fixed words compare without case, as Azure's do; names keep the case given.
 */
export function parseVmResourceId(text: unknown): VmResourceId | null {
  const u = under(text);
  if (u === null) return null;
  const [t, a, t2, b] = u.rest;
  if (u.rest.length === 2 && word(t, 'virtualMachines') && name(a!)) return { ...u.base, scaleSet: null, name: a! };
  if (u.rest.length === 4 && word(t, 'virtualMachineScaleSets') && name(a!) && word(t2, 'virtualMachines') && INSTANCE.test(b!))
    return { ...u.base, scaleSet: a!, name: b! };
  return null;
}

/** resourceIdText: the id as Azure writes it. */
export function resourceIdText(r: VmResourceId): string {
  const root = `/subscriptions/${r.subscriptionId}/resourceGroups/${r.resourceGroup}/providers/Microsoft.Compute`;
  return r.scaleSet === null
    ? `${root}/virtualMachines/${r.name}`
    : `${root}/virtualMachineScaleSets/${r.scaleSet}/virtualMachines/${r.name}`;
}

/** The resource whose scheduled events Azure lists and acknowledges: a virtual machine, or a scale set. */
export interface EventResource {
  readonly subscriptionId: string;
  readonly resourceGroup: string;
  readonly type: 'virtualMachines' | 'virtualMachineScaleSets';
  readonly name: string;
}

/** eventResourceOf: where a VM's scheduled events live: the VM itself, or an instance's scale set. */
export const eventResourceOf = (r: VmResourceId): EventResource =>
  r.scaleSet === null
    ? { subscriptionId: r.subscriptionId, resourceGroup: r.resourceGroup, type: 'virtualMachines', name: r.name }
    : { subscriptionId: r.subscriptionId, resourceGroup: r.resourceGroup, type: 'virtualMachineScaleSets', name: r.scaleSet };

/**
 * parseEventResource: a VM's or a scale set's resource id (Azure's feed keeps its records on
 * either), or null. A scale-set instance's id is no event resource: its events live on its set.
 */
export function parseEventResource(text: unknown): EventResource | null {
  const u = under(text);
  if (u === null || u.rest.length !== 2 || !name(u.rest[1]!)) return null;
  const type = word(u.rest[0], 'virtualMachines')
    ? 'virtualMachines'
    : word(u.rest[0], 'virtualMachineScaleSets')
      ? 'virtualMachineScaleSets'
      : null;
  return type === null ? null : { ...u.base, type, name: u.rest[1]! };
}

/** eventResourceFrom: where the events of a resource Azure's feed names live: a VM, a scale set, or an instance's set. */
export function eventResourceFrom(text: unknown): EventResource | null {
  const vm = parseVmResourceId(text);
  return vm === null ? parseEventResource(text) : eventResourceOf(vm);
}

/** eventResourceText: the resource's id as Azure writes it, in lower case (the feed's records key on it so). */
export const eventResourceText = (r: EventResource): string =>
  `/subscriptions/${r.subscriptionId}/resourceGroups/${r.resourceGroup}/providers/Microsoft.Compute/${r.type}/${r.name}`.toLowerCase();

/**
 * scheduledEventsPath: Resource Manager's path of a resource's scheduled events (the list form of
 * the acknowledgement posts here), each segment encoded into a fixed template.
 */
export function scheduledEventsPath(r: EventResource): string {
  const e = encodeURIComponent;
  return `/subscriptions/${e(r.subscriptionId)}/resourceGroups/${e(r.resourceGroup)}/providers/Microsoft.Compute/${r.type}/${e(r.name)}/providers/Microsoft.Maintenance/scheduledevents`;
}

/** isEventId: a scheduled event's id as Resource Manager takes it (a GUID). */
export const isEventId = (s: unknown): s is string => typeof s === 'string' && GUID.test(s);
