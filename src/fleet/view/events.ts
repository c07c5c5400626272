/**
 * The fleet's pending events: every event a member lists (Scheduled or Started), and every event
 * Azure's feed lists that no member does, each with what the fleet knows of it (its group, its
 * approval, the budget holding it, its preparations, Azure's own record) and, when no bridge
 * watches it, why. Ordered by NotBefore (none last), then VM and EventId, and paged by a cursor
 * of that key, so several relay replicas page alike.
 */
import { EVENT_TYPES } from '../../pipeline/filter.ts';
import { staleAt } from '../budget/records.ts';
import type { GroupStatus } from '../budget/group.ts';
import { ended, scaleSetInstances, type AzureRecord, type Unwatched } from './azure.ts';
import type { FleetSnapshot } from './snapshot.ts';

type Member = GroupStatus['members'][number];
type MemberEventView = Member['events'][number];

export interface FleetEvent {
  readonly group: string | null;
  readonly vm: string;
  readonly resourceId: string | null;
  readonly eventId: string;
  readonly eventType: string;
  readonly status: string;
  readonly notBefore: string | null;
  readonly durationInSeconds: number;
  /** The member's record: fresh, stale (its heartbeat stopped), or none (only Azure lists the event). */
  readonly member: 'fresh' | 'stale' | 'none';
  readonly heartbeatAt: string | null;
  readonly approval?: MemberEventView['approval'];
  /** When its member first saw it listed, and Started. */
  readonly seen?: MemberEventView['seen'];
  readonly held?: MemberEventView['held'];
  readonly preparations?: MemberEventView['preparations'];
  /** Azure's own record of it, when the relay has one. */
  readonly azure?: {
    readonly status: string;
    readonly source: string;
    readonly updatedAt: string;
    readonly acknowledged?: AzureRecord['acknowledged'];
  };
  /** No bridge watches it: why, since when the relay said so. */
  readonly unwatched?: { readonly why: Unwatched['why']; readonly since: string | null };
  /** Its member's calendar is in a blackout now (its name, and until when): no early approval but a forced one. */
  readonly blackout?: { readonly name: string; readonly until: string | null };
}

/** A VM an Azure record names, and the member records that are that VM. */
interface Target {
  readonly vm: string;
  readonly members: readonly { readonly group: string; readonly member: Member }[];
}

/** lower: a name or resource id as compared (Azure's are case-insensitive). */
export const lower = (s: string | null | undefined): string => (s ?? '').toLowerCase();

/**
 * targetsOf: the VMs an Azure record takes down, each with its member records: a VM's own record
 * by resource id; a scale set's by the instances `Resources` names, each the member whose
 * resource id is under the set's and whose name is the instance's.
 */
export function targetsOf(r: AzureRecord, groups: readonly GroupStatus[]): Target[] {
  const all = groups.flatMap((g) => g.members.map((member) => ({ group: g.group, member })));
  const instances = scaleSetInstances(r);
  if (instances === null) {
    // the VM's name as Azure spells it in Resources (the resource id is kept in lower case)
    const last = r.resourceId.slice(r.resourceId.lastIndexOf('/') + 1);
    const vm = r.resources.find((n) => lower(n) === last) ?? last;
    return [{ vm, members: all.filter((m) => lower(m.member.resourceId) === r.resourceId) }];
  }
  return instances.map((name) => ({
    vm: name,
    members: all.filter((m) => lower(m.member.resourceId).startsWith(`${r.resourceId}/`) && lower(m.member.vm) === lower(name)),
  }));
}

/** The grace before a listed-but-not-watched event is unwatched: unwatchedAfterSeconds, else two of the member's heartbeats. */
export interface UnwatchedRules {
  readonly afterSeconds?: number | undefined;
}

/** A VM of an Azure record no bridge watches, and why: none is a member, its member is stale, or its member does not list the event. */
export interface UnwatchedFinding {
  readonly record: AzureRecord;
  readonly vm: string;
  readonly why: Unwatched['why'];
  readonly group: string | null;
  readonly resourceId: string;
  /** Its member's last heartbeat, when it has a record. */
  readonly heartbeatAt: string | null;
}

/** unwatchedIn: every VM of a pending Azure event that no member watches, once its grace has passed. */
export function unwatchedIn(snapshot: FleetSnapshot, rules: UnwatchedRules, now: number): UnwatchedFinding[] {
  return snapshot.azure.flatMap(({ record }) => {
    if (ended(record.status)) return [];
    const age = now - Date.parse(record.firstSeenAt);
    return targetsOf(record, snapshot.groups).flatMap((t): UnwatchedFinding[] => {
      const base = { record, vm: t.vm, resourceId: record.resourceId };
      if (t.members.length === 0) return [{ ...base, why: 'no-member', group: null, heartbeatAt: null }];
      // the freshest record of the VM speaks for it
      const { group, member } = [...t.members].sort((a, b) => Date.parse(b.member.heartbeatAt) - Date.parse(a.member.heartbeatAt))[0]!;
      const grace = (rules.afterSeconds ?? 2 * member.heartbeatSeconds) * 1000;
      if (age < grace) return [];
      const known = { ...base, group, heartbeatAt: member.heartbeatAt };
      if (staleAt(member, now)) return [{ ...known, why: 'stale-member' }];
      if (!member.events.some((e) => e.eventId === record.eventId)) return [{ ...known, why: 'not-listed' }];
      return [];
    });
  });
}

/** The statuses `status=` takes: an event's own, or what the fleet knows of it. */
export const FILTER_STATUSES = ['Scheduled', 'Started', 'held', 'unwatched'] as const;

/** filterProblem: why a filter value is not one the read API knows (compared without case), or null. */
export function filterProblem(f: EventFilter): string | null {
  const known = (v: string | undefined, values: readonly string[]) => v === undefined || values.some((x) => lower(x) === lower(v));
  if (!known(f.status, FILTER_STATUSES)) return `status must be one of ${FILTER_STATUSES.join(', ')}`;
  if (!known(f.type, EVENT_TYPES)) return `type must be one of ${EVENT_TYPES.join(', ')}`;
  return null;
}

export interface EventFilter {
  readonly group?: string | undefined;
  readonly type?: string | undefined;
  /** An event status (Scheduled, Started), or `held` (the budget holds its approval) or `unwatched`. */
  readonly status?: string | undefined;
}

/** fleetEvents: the fleet's pending events, in order, filtered. */
export function fleetEvents(snapshot: FleetSnapshot, rules: UnwatchedRules, now: number, filter: EventFilter = {}): FleetEvent[] {
  const azureOf = new Map(snapshot.azure.map(({ record }) => [`${record.eventId}\n${record.resourceId}`, record]));
  const azureFor = (eventId: string, resourceId: string | null): AzureRecord | undefined => {
    const id = lower(resourceId);
    return azureOf.get(`${eventId}\n${id}`) ?? azureOf.get(`${eventId}\n${id.replace(/\/virtualmachines\/[^/]+$/, '')}`);
  };
  const unwatched = unwatchedIn(snapshot, rules, now);
  const out: FleetEvent[] = [];
  const seen = new Set<string>();
  for (const g of snapshot.groups)
    for (const m of g.members) {
      const stale = staleAt(m, now);
      for (const e of m.events) {
        const azure = azureFor(e.eventId, m.resourceId);
        // Azure's Completed or Canceled ends an event its silent member still lists
        if (!/^(scheduled|started)$/i.test(e.status) || (azure !== undefined && ended(azure.status))) continue;
        seen.add(`${e.eventId}\n${lower(m.vm)}`);
        const u = unwatched.find((x) => x.record.eventId === e.eventId && lower(x.vm) === lower(m.vm));
        out.push({
          ...{ group: g.group, vm: m.vm, resourceId: m.resourceId, eventId: e.eventId, eventType: e.eventType, status: e.status },
          ...{
            notBefore: e.notBefore,
            durationInSeconds: e.durationInSeconds,
            member: stale ? 'stale' : 'fresh',
            heartbeatAt: m.heartbeatAt,
          },
          ...(e.approval ? { approval: e.approval } : {}),
          ...(e.seen ? { seen: e.seen } : {}),
          ...(e.held ? { held: e.held } : {}),
          ...(e.preparations ? { preparations: e.preparations } : {}),
          ...(m.calendar && !m.calendar.open ? { blackout: { name: m.calendar.blackout ?? 'a blackout', until: m.calendar.until } } : {}),
          ...(azure ? { azure: azureView(azure) } : {}),
          ...(u ? { unwatched: { why: u.why, since: sinceOf(u) } } : {}),
        });
      }
    }
  // the events only Azure lists: unwatched, or within their grace
  for (const { record } of snapshot.azure) {
    if (ended(record.status)) continue;
    for (const t of targetsOf(record, snapshot.groups)) {
      if (seen.has(`${record.eventId}\n${lower(t.vm)}`)) continue;
      const u = unwatched.find((x) => x.record === record && x.vm === t.vm);
      const m = t.members[0];
      out.push({
        ...{ group: m?.group ?? null, vm: t.vm, resourceId: m?.member.resourceId ?? record.resourceId, eventId: record.eventId },
        ...{ eventType: record.eventType, status: record.status, notBefore: record.notBefore, durationInSeconds: record.durationInSeconds },
        ...{ member: m === undefined ? 'none' : staleAt(m.member, now) ? 'stale' : 'fresh', heartbeatAt: m?.member.heartbeatAt ?? null },
        azure: azureView(record),
        ...(u ? { unwatched: { why: u.why, since: sinceOf(u) } } : {}),
      });
    }
  }
  return out.filter((e) => matches(e, filter)).sort(byKey);
}

const azureView = (r: AzureRecord): NonNullable<FleetEvent['azure']> => ({
  status: r.status,
  source: r.source,
  updatedAt: r.updatedAt,
  ...(r.acknowledged ? { acknowledged: r.acknowledged } : {}),
});

const sinceOf = (u: UnwatchedFinding): string | null => u.record.unwatched.find((x) => lower(x.vm) === lower(u.vm))?.at ?? null;

function matches(e: FleetEvent, f: EventFilter): boolean {
  if (f.group !== undefined && e.group !== f.group) return false;
  if (f.type !== undefined && lower(e.eventType) !== lower(f.type)) return false;
  if (f.status === undefined) return true;
  if (lower(f.status) === 'held') return e.held !== undefined;
  if (lower(f.status) === 'unwatched') return e.unwatched !== undefined;
  return lower(e.status) === lower(f.status);
}

/** The order key: NotBefore (none last; in one ISO 8601 form, whoever wrote it), VM, EventId. */
export const keyOf = (e: Pick<FleetEvent, 'notBefore' | 'vm' | 'eventId'>): [string, string, string] => {
  const at = e.notBefore === null ? NaN : Date.parse(e.notBefore);
  return [Number.isFinite(at) ? new Date(at).toISOString() : (e.notBefore ?? '~'), e.vm, e.eventId];
};

type Keyed = Pick<FleetEvent, 'notBefore' | 'vm' | 'eventId'>;

function byKey(a: Keyed, b: Keyed): number {
  const [x, y] = [keyOf(a), keyOf(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  return 0;
}

/** page: the events after `cursor` (a key this function gave), at most `limit`, and the cursor of the next page (null: none). */
export function page(events: readonly FleetEvent[], limit: number, cursor: string | null): { events: FleetEvent[]; next: string | null } {
  const after = cursor === null ? null : (JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string, string]);
  const rest = after === null ? [...events] : events.filter((e) => byKey(e, fromKey(after)) > 0);
  const shown = rest.slice(0, limit);
  const last = shown.at(-1);
  const next = rest.length > limit && last !== undefined ? Buffer.from(JSON.stringify(keyOf(last))).toString('base64url') : null;
  return { events: shown, next };
}

const fromKey = (k: [string, string, string]): Keyed => ({ notBefore: k[0] === '~' ? null : k[0], vm: k[1], eventId: k[2] });

/** cursorOk: a cursor this relay could have given (three strings), so a bad one is a 400, never a throw. */
export function cursorOk(cursor: string): boolean {
  try {
    const k = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    return Array.isArray(k) && k.length === 3 && k.every((x) => typeof x === 'string');
  } catch {
    return false;
  }
}
