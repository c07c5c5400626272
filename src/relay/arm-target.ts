/**
 * What an approval `via: arm` would act on, found and checked before anything is sent: the VM (a
 * parsed resource id, never a record's text), the resource whose event Resource Manager
 * acknowledges (the VM, or an instance's scale set), the event, and the one group whose records
 * name the VM. Every member can write every record of the store, so a member's word is a hint:
 * where Azure's feed is configured, only an event Azure itself lists now as Scheduled for that
 * resource (Resource Graph, asked at the approval: `azure`) is acknowledged, at the resource Azure
 * names, with the Resources Azure says. Without the feed, what a record cannot say for sure (an
 * event of several VMs, a scale set's event) needs a forced approval.
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
import { ended, eventOf, type AzureEvent } from '../fleet/view/azure.ts';
import { lower } from '../fleet/view/events.ts';
import type { FleetSnapshot } from '../fleet/view/snapshot.ts';

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
  /** The one group whose records name the VM (null: none does), and the VM's record in it. */
  readonly group: { readonly group: string; readonly member: Member } | null;
  /** Why only a forced approval may go on, when a record cannot say for sure what it would start. */
  readonly unsure: string | null;
  /** The resource id Azure's record of the event is kept under in the store (lower case). */
  readonly recordId: string;
}

/** The shape of a name a request may give instead of a resource id. */
const VM_NAME = /^[^/\s]{1,80}$/;

const idText = (id: VmResourceId): string => lower(resourceIdText(id));

/** instanceName: a scale-set instance's name as IMDS and Azure's Resources spell it (`<set>_<instance id>`), or a VM's own. */
const instanceName = (id: VmResourceId): string => (id.scaleSet === null ? id.name : `${id.scaleSet}_${id.name}`);

const ambiguous = (message: string) => new HttpError(409, 'VM_AMBIGUOUS', message);

/**
 * armTarget: the target of an approval of `eventId` on `vm` (a resource id, or a name), or the
 * refusal, as an HttpError with its code, before anything is sent. `azure`: Azure's records of the
 * event now (null: the relay reads no feed of Azure's).
 */
export function armTarget(s: FleetSnapshot, vm: string, eventId: string, azure: readonly AzureEvent[] | null): ArmTarget {
  const asked = vm.startsWith('/') ? parseVmResourceId(vm) : null;
  if (vm.startsWith('/') ? asked === null : !VM_NAME.test(vm))
    throw new HttpError(
      400,
      'NOT_A_VM',
      "vm must be a VM's resource id (/subscriptions/<guid>/resourceGroups/<group>/providers/Microsoft.Compute/virtualMachines/<name>, or a scale-set instance's …/virtualMachineScaleSets/<name>/virtualMachines/<id>), or its name",
    );
  const all = s.groups.flatMap((g) => g.members.map((member) => ({ group: g.group, member, id: parseVmResourceId(member.resourceId) })));
  // a name is a hint: it leads to a resource id, and every record of that id decides
  const named = asked === null ? all.filter((m) => lower(m.member.vm) === lower(vm)) : [];
  const ids = [...new Map(named.flatMap((m) => (m.id === null ? [] : [[idText(m.id), m.id] as const]))).values()];
  if (ids.length > 1)
    throw ambiguous(`${ids.length} VMs are named ${vm} (${ids.map(resourceIdText).join(', ')}): name it by its resource id`);
  const id = asked ?? ids[0] ?? null;
  const matches = id === null ? named : all.filter((m) => m.id !== null && idText(m.id) === idText(id));
  const groups = [...new Set(matches.map((m) => m.group))];
  if (groups.length > 1)
    throw ambiguous(
      `the records of ${groups.length} groups (${groups.join(', ')}) name ${id === null ? vm : resourceIdText(id)}: a VM belongs to one group`,
    );
  const own = matches.find((m) => m.member.events.some((e) => lower(e.eventId) === lower(eventId))) ?? matches[0];
  const group = own === undefined ? null : { group: own.group, member: own.member };
  const name = own?.member.vm ?? id?.name ?? vm;
  if (azure !== null) return fromAzure({ name, id, group, azure, vm, eventId });
  const e = own?.member.events.find((x) => lower(x.eventId) === lower(eventId));
  if (e === undefined) throw new HttpError(404, 'UNKNOWN_EVENT', `no member's record lists event ${eventId} for ${vm}`);
  if (id === null) throw new HttpError(400, 'NOT_A_VM', `the record of ${name} gives no VM's resource id: name the VM by its resource id`);
  if (e.status !== 'Scheduled') throw new HttpError(409, 'NOT_APPROVABLE', `event ${eventId} of ${name} is ${e.status}, not Scheduled`);
  // without Azure's word, the other VMs whose records list the event are the Resources it may take down
  const others = all.filter(
    (m) => m.member.events.some((x) => lower(x.eventId) === lower(eventId)) && (m.id === null || idText(m.id) !== idText(id)),
  );
  const resources = [name, ...new Set(others.map((m) => m.member.vm))];
  const unsure =
    id.scaleSet !== null
      ? `${name} is an instance of scale set ${id.scaleSet}: its event is acknowledged at the scale set, for every instance the event names, which only Azure's feed can tell`
      : null;
  // the record is kept where Azure keeps the event's: at the resource acknowledged (a scale set's names the instance in Resources)
  const resource = eventResourceOf(id);
  return { name, vm: id, resource, event: eventOf({ ...e, resources }), group, unsure, recordId: eventResourceText(resource) };
}

/** fromAzure: the target as Azure says it now: the only authority where the feed is configured. */
function fromAzure(t: {
  name: string;
  id: VmResourceId | null;
  group: ArmTarget['group'];
  azure: readonly AzureEvent[];
  vm: string;
  eventId: string;
}): ArmTarget {
  const want = t.id === null ? null : eventResourceOf(t.id);
  const found = t.azure.filter((a) => {
    const at = eventResourceFrom(a.resourceId);
    if (lower(a.eventId) !== lower(t.eventId) || at === null) return false;
    const names = a.resources.map(lower);
    if (want === null) return names.includes(lower(t.vm)) || lower(a.resourceId).endsWith(`/${lower(t.vm)}`);
    // a scale set's event is this instance's only when Azure's Resources name it
    return (
      eventResourceText(at) === eventResourceText(want) && (at.type === 'virtualMachines' || names.includes(lower(instanceName(t.id!))))
    );
  });
  if (found.length > 1)
    throw ambiguous(`Azure lists event ${t.eventId} for ${found.length} resources named ${t.vm}: name the VM by its resource id`);
  const r = found[0];
  const resource = r === undefined ? null : eventResourceFrom(r.resourceId);
  if (r === undefined || resource === null)
    throw new HttpError(
      404,
      'NOT_LISTED_BY_AZURE',
      `Azure does not list event ${t.eventId} for ${t.vm} now: only an event Azure lists is approved through Resource Manager (a record in the fleet's store is not enough); ask again once Azure lists it`,
    );
  if (ended(r.status) || !/^scheduled$/i.test(r.status))
    throw new HttpError(409, 'NOT_APPROVABLE', `Azure says event ${t.eventId} of ${t.name} is ${r.status}, not Scheduled`);
  return { name: t.name, vm: t.id, resource, event: eventOf(r), group: t.group, unsure: null, recordId: lower(r.resourceId) };
}
