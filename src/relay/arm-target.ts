/**
 * What an approval `via: arm` would act on, found in the fleet's records and checked before
 * anything is sent: the VM (a parsed resource id, never a record's text), the resource whose
 * event Resource Manager acknowledges (the VM, or an instance's scale set), the event, and the one
 * group whose records name the VM. Every member can write every record of the store, so a
 * member's word is a hint: where Azure's feed is configured, only an event Azure's own record
 * lists as Scheduled for that resource is acknowledged, at the resource Azure names.
 */
import {
  eventResourceFrom,
  eventResourceOf,
  eventResourceText,
  parseVmResourceId,
  resourceIdText,
  type EventResource,
  type VmResourceId,
} from '../azure/resource-id.ts';
import { HttpError } from '../approval/requests.ts';
import type { ScheduledEvent } from '../imds/wire.ts';
import type { GroupStatus } from '../fleet/budget/group.ts';
import { ended, eventOf } from '../fleet/view/azure.ts';
import { lower, targetsOf } from '../fleet/view/events.ts';
import type { FleetSnapshot, KeptAzureRecord } from '../fleet/view/snapshot.ts';

type Member = GroupStatus['members'][number];

export interface ArmTarget {
  /** The VM's name, as its record or Azure's says it (or the id's last segment). */
  readonly name: string;
  /** The VM's resource id, when a record or the request gives one. */
  readonly vm: VmResourceId | null;
  /** Where the event is acknowledged. */
  readonly resource: EventResource;
  /** The event as the authority says it: Azure's record where the feed is configured, else the member's. */
  readonly event: ScheduledEvent;
  /** Azure's record of the event, when the relay keeps one. */
  readonly azure: KeptAzureRecord | null;
  /** The one group whose records name the VM (null: none does), and the VM's record in it. */
  readonly group: { readonly group: string; readonly member: Member } | null;
}

/** The shape of a name a request may give instead of a resource id. */
const VM_NAME = /^[^/\s]{1,80}$/;

/** sameVm: two parsed ids of one VM (Azure's ids compare without case). */
const sameVm = (a: VmResourceId, b: VmResourceId): boolean => lower(resourceIdText(a)) === lower(resourceIdText(b));

const sameResource = (a: EventResource, b: EventResource): boolean => eventResourceText(a) === eventResourceText(b);

/**
 * armTarget: the target of an approval of `eventId` on `vm` (a resource id, or a name), or the
 * refusal, as an HttpError with its code, before anything is sent.
 */
export function armTarget(s: FleetSnapshot, vm: string, eventId: string, feed: boolean): ArmTarget {
  const asked = vm.startsWith('/') ? parseVmResourceId(vm) : null;
  if (vm.startsWith('/') ? asked === null : !VM_NAME.test(vm))
    throw new HttpError(
      400,
      'NOT_A_VM',
      "vm must be a VM's resource id (/subscriptions/<guid>/resourceGroups/<group>/providers/Microsoft.Compute/virtualMachines/<name>, or a scale-set instance's …/virtualMachineScaleSets/<name>/virtualMachines/<id>), or its name",
    );
  const all = s.groups.flatMap((g) => g.members.map((member) => ({ group: g.group, member, id: parseVmResourceId(member.resourceId) })));
  const matches = all.filter((m) => (asked !== null ? m.id !== null && sameVm(m.id, asked) : lower(m.member.vm) === lower(vm)));
  const ids = [...new Map(matches.flatMap((m) => (m.id === null ? [] : [[lower(resourceIdText(m.id)), m.id] as const]))).values()];
  if (asked === null && ids.length > 1)
    throw new HttpError(
      409,
      'VM_AMBIGUOUS',
      `${ids.length} VMs are named ${vm} (${ids.map(resourceIdText).join(', ')}): name it by its resource id`,
    );
  const groups = [...new Set(matches.map((m) => m.group))];
  if (groups.length > 1)
    throw new HttpError(
      409,
      'VM_AMBIGUOUS',
      `the records of ${groups.length} groups (${groups.join(', ')}) name ${vm}: a VM belongs to one group`,
    );
  const id = asked ?? ids[0] ?? null;
  const own = matches.find((m) => m.member.events.some((e) => lower(e.eventId) === lower(eventId))) ?? matches[0];
  const group = own === undefined ? null : { group: own.group, member: own.member };
  const azure = azureFor(s, id, vm, eventId);
  const name = own?.member.vm ?? (azure === null ? null : targetName(azure, s, vm)) ?? id?.name ?? vm;
  if (feed) return fromAzure({ name, vm: id, group, azure, vmText: vm, eventId });
  const e = own?.member.events.find((x) => lower(x.eventId) === lower(eventId));
  if (e === undefined) throw new HttpError(404, 'UNKNOWN_EVENT', `no member's record lists event ${eventId} for ${vm}`);
  if (id === null) throw new HttpError(400, 'NOT_A_VM', `the record of ${name} gives no VM's resource id: name the VM by its resource id`);
  if (e.status !== 'Scheduled') throw new HttpError(409, 'NOT_APPROVABLE', `event ${eventId} of ${name} is ${e.status}, not Scheduled`);
  return { name, vm: id, resource: eventResourceOf(id), event: eventOf({ ...e, resources: [name] }), azure, group };
}

/** fromAzure: the target as Azure's own record says it: the only authority where the feed is configured. */
function fromAzure(t: {
  name: string;
  vm: VmResourceId | null;
  group: ArmTarget['group'];
  azure: KeptAzureRecord | null;
  vmText: string;
  eventId: string;
}): ArmTarget {
  const r = t.azure?.record;
  const resource = r === undefined ? null : eventResourceFrom(r.resourceId);
  if (r === undefined || resource === null)
    throw new HttpError(
      404,
      'NOT_LISTED_BY_AZURE',
      `Azure's feed does not list event ${t.eventId} for ${t.vmText}: only an event Azure lists is approved through Resource Manager (a member's record alone is not enough); ask again once Azure's feed has it`,
    );
  if (ended(r.status) || !/^scheduled$/i.test(r.status))
    throw new HttpError(409, 'NOT_APPROVABLE', `Azure's record says event ${t.eventId} of ${t.name} is ${r.status}, not Scheduled`);
  return { name: t.name, vm: t.vm, resource, event: eventOf(r), azure: t.azure, group: t.group };
}

/**
 * azureFor: Azure's record of the event for this VM: on its own resource or its scale set's when
 * its id is known, else on a resource whose VMs include one of that name.
 */
function azureFor(s: FleetSnapshot, id: VmResourceId | null, vm: string, eventId: string): KeptAzureRecord | null {
  const want = id === null ? null : eventResourceOf(id);
  const found = s.azure.filter((a) => {
    if (lower(a.record.eventId) !== lower(eventId)) return false;
    const at = eventResourceFrom(a.record.resourceId);
    if (at === null) return false;
    const named = targetsOf(a.record, s.groups).some((t) => lower(t.vm) === lower(vm));
    if (want === null) return named;
    // a scale set's event is this instance's only when Azure's Resources name it
    return (
      sameResource(at, want) &&
      (at.type === 'virtualMachines' || named || a.record.resources.some((n) => lower(n) === lower(instanceName(id!))))
    );
  });
  if (found.length > 1)
    throw new HttpError(
      409,
      'VM_AMBIGUOUS',
      `Azure lists event ${eventId} for ${found.length} resources named ${vm}: name the VM by its resource id`,
    );
  return found[0] ?? null;
}

/** instanceName: a scale-set instance's name as IMDS and Azure's Resources spell it (`<set>_<instance id>`), or a VM's own. */
const instanceName = (id: VmResourceId): string => (id.scaleSet === null ? id.name : `${id.scaleSet}_${id.name}`);

/** targetName: the VM's name as Azure's record spells it (in its Resources), else the name asked. */
function targetName(a: KeptAzureRecord, s: FleetSnapshot, vm: string): string | null {
  return targetsOf(a.record, s.groups).find((t) => lower(t.vm) === lower(vm))?.vm ?? null;
}
