/**
 * toCloudEvent maps a transition to a CloudEvents 1.0 event. It is pure and deterministic:
 * the `id` depends only on the EventId, the transition and (for `updated`) the values that
 * changed, so every VM that sees the same change emits the same id and a fleet can be
 * deduplicated downstream (Service Bus duplicate detection, idempotent consumers).
 *
 * Events are plain frozen objects in the JSON event format's attribute order; the tests check
 * them against the CloudEvents SDK, which the bridge itself does not load.
 *
 * @see https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/spec.md
 */
import type { CalendarConflict } from '../calendar/conflict.ts';
import type { CollisionInfo, PauseInfo, UnwatchedInfo } from './info.ts';
import { BridgeError } from '../lib/errors.ts';
import { createHash } from 'node:crypto';
import { isDrill } from '../imds/drill-id.ts';
import type { ScheduledEvent } from '../imds/wire.ts';
import { affects, type VmIdentity } from '../imds/identity.ts';
import type { CompletionEvidence, Transition, TransitionKind } from './diff.ts';

const TYPE_PREFIX = 'azure.scheduledevent.';
const MAX_ID_LENGTH = 128;

export interface ApprovalInfo {
  readonly by: string;
  readonly via: string;
  readonly at: string;
  /** Approved past the fleet budget (present only then), with the reason given. */
  readonly forced?: true;
  readonly reason?: string;
}

export interface EventData {
  eventId: string;
  eventType: string;
  eventStatus: string;
  eventSource: string;
  resourceType: string;
  resources: string[];
  notBefore: string | null;
  durationInSeconds: number;
  description: string;
  documentIncarnation: number;
  affectsThisVm: boolean;
  vm: {
    name: string;
    resourceId: string | null;
    vmScaleSetName: string | null;
    subscriptionId: string | null;
    resourceGroupName: string | null;
    location: string | null;
    zone: string | null;
  };
  previous?: Omit<EventData, 'previous' | 'raw' | 'vm' | 'affectsThisVm' | 'documentIncarnation' | 'approval'>;
  approval?: ApprovalInfo;
  /** For `fleet.collision`: more members of a fleet group due for maintenance at once than it allows. */
  collision?: CollisionInfo;
  /** For `fleet.paused`: the fleet group is paused (no early approval but a forced one), or resumed. */
  pause?: PauseInfo;
  /** For `calendar.conflict`: the maintenance falls in a blackout, or outside every window with none before it. */
  calendar?: CalendarConflict;
  /** For `unwatched` (the relay's): why no bridge watches this event of a VM Azure's feed lists. */
  unwatched?: UnwatchedInfo;
  /**
   * For `completed`: whether a read showed the event Started. When none did (the VM was paused,
   * or shut down, while it was), `completedBecause` says what shows it happened.
   */
  startedObserved?: boolean;
  completedBecause?: CompletionEvidence;
  raw: Record<string, unknown>;
}

/** BridgeEvent: one CloudEvent 1.0 of the bridge, with its `incarnation` extension. */
export interface BridgeEvent {
  readonly id: string;
  readonly time: string;
  readonly type: string;
  readonly source: string;
  readonly specversion: '1.0';
  readonly datacontenttype: 'application/json';
  readonly subject: string;
  readonly data: EventData;
  /** Extension: the IMDS DocumentIncarnation the change was seen in. */
  readonly incarnation: number;
  /** Extension: present (true) on the CloudEvents of a drill (`se-bridge drill`), never on a real event's. */
  readonly drill?: true;
}

/**
 * sourceFor is the CloudEvent `source`: the VM's ARM resource id, or a URN of its name.
 * `source` must be a URI-reference, and Azure allows Unicode and spaces in resource group
 * names (`rg-café`): see encodeSource.
 */
export function sourceFor(vm: VmIdentity): string {
  return vm.resourceId !== null ? encodeSource(vm.resourceId) : `urn:se-bridge:vm:${encodeURIComponent(vm.name)}`;
}

/**
 * encodeSource makes a resource id a valid URI-reference (RFC 3986): every character other
 * than the unreserved ones (letters, digits, `-._~`), the sub-delimiters (`!$&'()*+,;=`), `:`,
 * `@` and `/` is percent-encoded as UTF-8 bytes, `%` itself included. A plain ASCII ARM id is
 * unchanged; `/resourceGroups/rg-café/…/vm 1` becomes `/resourceGroups/rg-caf%C3%A9/…/vm%201`,
 * which decodeURIComponent turns back into the id. A `:` before the first `/` is encoded too,
 * unless it ends a scheme, so the text never reads as something it is not.
 */
export function encodeSource(id: string): string {
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.exec(id)?.[0] ?? '';
  const rest = id.slice(scheme.length);
  const firstSlash = rest.indexOf('/');
  let out = scheme;
  let i = 0;
  for (const ch of rest) {
    const keep = /^[A-Za-z0-9\-._~!$&'()*+,;=@/]$/.test(ch) || (ch === ':' && (scheme !== '' || (firstSlash !== -1 && i > firstSlash)));
    out += keep ? ch : [...Buffer.from(ch, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
    i += ch.length;
  }
  return out;
}

/** MappingError is a failure to turn a good IMDS document into CloudEvents: our fault, never IMDS's. */
export class MappingError extends BridgeError<'MAPPING_FAILED'> {
  constructor(message: string, cause: unknown) {
    super('MAPPING_FAILED', message, { cause });
  }
}

/**
 * cloudEventId builds the deterministic id: `<EventId>/<transition>`, plus for `updated` a
 * digest of the old and new values and for `approved` the approval record's id. A transition
 * that recurs (Scheduled again after a cancel, Started again, the same update again) is a new
 * change: its n-th occurrence gets `/<n>` appended (`<EventId>/scheduled/2`). The count comes
 * from the history the bridge observed, so every VM that observed the same history emits the
 * same ids. An id over 128 characters becomes `sha256/<hex of the long form>`.
 */
export function cloudEventId(kind: TransitionKind, eventId: string, discriminator?: string, occurrence = 1): string {
  let id = discriminator === undefined ? `${eventId}/${kind}` : `${eventId}/${kind}/${discriminator}`;
  if (occurrence > 1) id += `/${occurrence}`;
  return id.length <= MAX_ID_LENGTH ? id : `sha256/${createHash('sha256').update(id).digest('hex')}`;
}

/** occurrenceKey names a transition across its occurrences: the id of its first occurrence. */
export function occurrenceKey(t: Transition): string {
  return cloudEventId(t.kind, t.event.eventId, discriminatorOf(t));
}

function discriminatorOf(t: Transition): string | undefined {
  return t.kind === 'updated' && t.previous !== undefined ? digest([fieldsOf(t.previous), fieldsOf(t.event)]) : undefined;
}

function digest(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 16);
}

function fieldsOf(e: ScheduledEvent) {
  return {
    eventId: e.eventId,
    eventType: e.eventType,
    eventStatus: e.eventStatus,
    eventSource: e.eventSource,
    resourceType: e.resourceType,
    resources: [...e.resources],
    notBefore: e.notBefore,
    durationInSeconds: e.durationInSeconds,
    description: e.description,
  };
}

export interface MappingContext {
  readonly vm: VmIdentity;
  /** When the bridge observed the change (RFC 3339). */
  readonly observedAt: string;
  /** Which occurrence of this transition of this EventId it is (1 when it never happened before). */
  readonly occurrence?: number;
}

export function toCloudEvent(t: Transition, ctx: MappingContext): BridgeEvent {
  const data: EventData = {
    ...fieldsOf(t.event),
    documentIncarnation: t.incarnation,
    affectsThisVm: affects(t.event.resources, ctx.vm.name),
    vm: vmData(ctx.vm),
    ...(t.previous !== undefined ? { previous: fieldsOf(t.previous) } : {}),
    ...(t.kind === 'completed' ? { startedObserved: t.evidence === undefined } : {}),
    ...(t.evidence !== undefined ? { completedBecause: t.evidence } : {}),
    raw: structuredClone(t.event.raw),
  };
  return build(cloudEventId(t.kind, t.event.eventId, discriminatorOf(t), ctx.occurrence), t.kind, data, t.incarnation, ctx);
}

/** toApprovedCloudEvent is the `approved` event; `recordId` identifies the approval record. */
export function toApprovedCloudEvent(
  event: ScheduledEvent,
  incarnation: number,
  approval: ApprovalInfo,
  recordId: string,
  ctx: MappingContext,
): BridgeEvent {
  const data = dataWith(event, incarnation, ctx, { approval });
  return build(cloudEventId('approved', event.eventId, recordId), 'approved', data, incarnation, ctx);
}

/** dataWith: the data of a CloudEvent about `event` as it is now, with what the transition adds. */
export function dataWith(
  event: ScheduledEvent,
  incarnation: number,
  ctx: MappingContext,
  more: Pick<EventData, 'approval' | 'collision' | 'pause' | 'calendar' | 'unwatched'>,
): EventData {
  return {
    ...fieldsOf(event),
    documentIncarnation: incarnation,
    affectsThisVm: affects(event.resources, ctx.vm.name),
    vm: vmData(ctx.vm),
    ...more,
    raw: structuredClone(event.raw),
  };
}

function vmData(vm: VmIdentity): EventData['vm'] {
  return {
    name: vm.name,
    resourceId: vm.resourceId,
    vmScaleSetName: vm.vmScaleSetName,
    subscriptionId: vm.subscriptionId,
    resourceGroupName: vm.resourceGroupName,
    location: vm.location,
    zone: vm.zone,
  };
}

export function build(id: string, kind: TransitionKind, data: EventData, incarnation: number, ctx: MappingContext): BridgeEvent {
  return Object.freeze({
    id,
    time: ctx.observedAt,
    type: `${TYPE_PREFIX}${kind}`,
    source: sourceFor(ctx.vm),
    specversion: '1.0',
    datacontenttype: 'application/json',
    subject: data.eventId,
    data,
    incarnation,
    ...(isDrill(data.eventId) ? { drill: true as const } : {}),
  });
}

/** fromJson revives a CloudEvent stored as JSON (the store and the file sink use the JSON format). */
export function fromJson(json: string): BridgeEvent {
  return Object.freeze(JSON.parse(json) as BridgeEvent);
}

/** transitionOf reads the transition kind back from a CloudEvent type. */
export function transitionOf(event: { type: string }): TransitionKind {
  return event.type.slice(TYPE_PREFIX.length) as TransitionKind;
}

/** toScheduledEvent reads the event back from a CloudEvent's data (for decisions on delivered events). */
export function toScheduledEvent(e: BridgeEvent): ScheduledEvent {
  const d = e.data;
  return {
    eventId: d.eventId,
    eventType: d.eventType,
    eventStatus: d.eventStatus,
    resourceType: d.resourceType,
    resources: d.resources,
    notBefore: d.notBefore,
    description: d.description,
    eventSource: d.eventSource,
    durationInSeconds: d.durationInSeconds,
    raw: d.raw,
  };
}
