/**
 * The chat message model shared by the Slack and Teams sinks: what an on-call engineer must
 * read at a glance — which VM, what will happen to it in plain words, when, for how long,
 * who asked for it — and the one action that matters (Approve, when a human decides).
 */
import { transitionOf, type BridgeEvent } from '../pipeline/cloudevent.ts';
import { humanDuration } from './text-line.ts';

export type Severity = 'critical' | 'high' | 'warning' | 'resolved' | 'info';

export interface ChatVm {
  readonly name: string;
  readonly isThisVm: boolean;
}

export interface ChatMessage {
  readonly title: string;
  readonly severity: Severity;
  /** Orders messages: higher is more urgent (Preempt/Terminate/Redeploy/Reboot above Freeze; Started above Scheduled). */
  readonly rank: number;
  readonly transition: string;
  readonly eventType: string;
  readonly eventStatus: string;
  /** The event type in plain words, e.g. "will be paused for about 5 s". */
  readonly plainWords: string;
  readonly vms: readonly ChatVm[];
  readonly affectsThisVm: boolean;
  readonly thisVm: string;
  readonly source: string;
  /** NotBefore as RFC 3339 UTC, its epoch seconds, and the time left when the change was observed. */
  readonly notBefore: { readonly iso: string; readonly epoch: number; readonly timeLeft: string } | null;
  /** "about 5 s", "no interruption" or "unknown". */
  readonly duration: string;
  readonly description: string;
  readonly eventId: string;
  readonly observedAt: string;
  readonly incarnation: number;
  /** The signed approval link, for a Scheduled event the policy leaves to a human. */
  readonly approveUrl: string | null;
  /** What was done to prepare the VM, and when it was approved ("out of the load balancer · node drained: 14 pods evicted · approved at 10:02, 13 min before NotBefore"), or null. */
  readonly prepared: string | null;
}

/** What a preparation reported for the event: its state and what it said. */
export interface PreparedStep {
  readonly state: 'pending' | 'done' | 'failed' | 'undone';
  readonly detail: string | null;
}

/** How a completion whose Started no read showed is known, in words. */
const UNSEEN = {
  approved: 'Azure accepted its approval',
  notBefore: 'its NotBefore had passed',
  boot: 'the VM restarted meanwhile',
} as const;

/** isAdvisory: a status that announces a risk, not a maintenance (SpotRebalanceRecommendation is Advisory). */
export function isAdvisory(status: string): boolean {
  return status === 'Advisory';
}

function advisoryWords(type: string): string {
  return type === 'SpotRebalanceRecommendation'
    ? 'is at elevated risk of Spot eviction (Azure recommends rebalancing; nothing is scheduled)'
    : `has an advisory (${type}; nothing is scheduled)`;
}

const TYPE_RANK: Record<string, number> = { Preempt: 5, Terminate: 5, Redeploy: 4, Reboot: 3, Freeze: 1 };

function willHappen(type: string, duration: number): string {
  switch (type) {
    case 'Freeze':
      return duration > 0 ? `will be paused for about ${humanDuration(duration * 1000)}` : 'will be paused briefly';
    case 'Reboot':
      return 'will be rebooted';
    case 'Redeploy':
      return 'will be moved to another host (temporary disk lost)';
    case 'Preempt':
      return 'will be evicted (Spot)';
    case 'Terminate':
      return 'will be deleted';
    default:
      return `will undergo maintenance (${type})`;
  }
}

function isHappening(type: string, duration: number): string {
  switch (type) {
    case 'Freeze':
      return duration > 0 ? `is being paused (about ${humanDuration(duration * 1000)})` : 'is being paused';
    case 'Reboot':
      return 'is rebooting';
    case 'Redeploy':
      return 'is being moved to another host';
    case 'Preempt':
      return 'is being evicted';
    case 'Terminate':
      return 'is being deleted';
    default:
      return `is undergoing maintenance (${type})`;
  }
}

export function toChatMessage(
  event: BridgeEvent,
  options: { approveUrl?: string | null; preparations?: readonly PreparedStep[] } = {},
): ChatMessage {
  const d = event.data;
  const transition = transitionOf(event);
  const observedAt = event.time ?? new Date().toISOString();
  const vms = d.resources.map((name) => ({ name, isThisVm: name.toLowerCase() === d.vm.name.toLowerCase() }));
  const who = d.affectsThisVm
    ? d.vm.name
    : vms.length === 0
      ? 'A VM'
      : vms.length === 1
        ? vms[0]!.name
        : `${vms[0]!.name} and ${vms.length - 1} more`;
  const started = d.eventStatus === 'Started';
  let plainWords: string;
  let title: string;
  let severity: Severity;
  let rank = (TYPE_RANK[d.eventType] ?? 2) * 2 + (started ? 1 : 0);
  if (isAdvisory(d.eventStatus)) {
    // an advisory announces no maintenance: nothing will happen at NotBefore, and its end cancels nothing
    const over = transition === 'canceled' || transition === 'completed';
    plainWords = over ? `advisory withdrawn (${d.eventType})` : advisoryWords(d.eventType);
    title = over ? `${who}: ${plainWords}` : `${who} ${plainWords}`;
    severity = over ? 'resolved' : 'warning';
    rank = over ? 0 : 1;
  } else if (transition === 'completed') {
    const unseen = d.startedObserved === false ? `; its start was not seen: ${UNSEEN[d.completedBecause ?? 'notBefore']}` : '';
    plainWords = `maintenance finished (${d.eventType}${unseen})`;
    title = `${who}: maintenance finished (${d.eventType})`;
    severity = 'resolved';
    rank = 0;
  } else if (transition === 'canceled') {
    plainWords = `maintenance canceled (${d.eventType})`;
    title = `${who}: maintenance canceled (${d.eventType})`;
    severity = 'resolved';
    rank = 0;
  } else if (transition === 'fleet.collision' && d.collision !== undefined) {
    const c = d.collision;
    const between = `between ${utcText(c.from).slice(11)} and ${utcText(c.to).slice(11)}`;
    // a word of the wave's speaker says what it is; one without (an older member's) is read from its numbers
    const within = c.state === undefined ? c.due.length + (c.unhealthy?.length ?? 0) <= c.maxUnavailable : c.state === 'resolved';
    const of = `${c.due.length} of ${c.group}'s ${c.members} member${c.members === 1 ? '' : 's'}`;
    plainWords = within
      ? `${of} still due for maintenance ${between}: within the group's budget of ${c.maxUnavailable} now`
      : `${of} ${c.due.length === 1 ? 'is' : 'are'} due for maintenance ${between}; the group allows ${c.maxUnavailable}${c.unhealthy?.length ? ` and ${c.unhealthy.join(', ')} ${c.unhealthy.length === 1 ? 'is' : 'are'} not healthy` : ''}${c.atOnce > c.maxUnavailable ? `, and Azure takes ${c.atOnce} down at once if nothing changes` : ''}`;
    title = plainWords;
    severity = within ? 'resolved' : 'high';
    rank = within ? 0 : 9;
  } else if (transition === 'fleet.paused' && d.pause !== undefined) {
    const p = d.pause;
    const by = p.by === 'breaker' ? `its circuit breaker (${(p.members ?? []).join(', ')} did not come back)` : p.who;
    plainWords =
      p.state === 'resumed'
        ? `${p.group} resumed: early approvals go on in the group's queue order`
        : `${p.group} paused by ${by} since ${utcText(p.since)}${p.until === null ? ' until resumed' : ` until ${utcText(p.until)}`}: ${p.why}; no early approval but a forced one`;
    title = `${who}: ${p.state === 'resumed' ? `${p.group} resumed` : `${p.group} paused`}`;
    severity = p.state === 'resumed' ? 'resolved' : 'high';
    rank = p.state === 'resumed' ? 0 : 8;
  } else if (transition === 'calendar.conflict' && d.calendar !== undefined) {
    const c = d.calendar;
    const where = c.kind === 'blackout' ? `inside the blackout ${c.blackout}` : 'outside every maintenance window';
    plainWords = `maintenance (${d.eventType}) falls ${where}: Azure acts from ${utcText(c.from)} to ${utcText(c.to).slice(11)} if nothing changes (calendar in ${c.timeZone}); you can still ${c.advice.join(', or ')}`;
    title = `${who}: maintenance falls ${where}`;
    severity = 'high';
    rank = 8;
  } else if (transition === 'unwatched' && d.unwatched !== undefined) {
    const u = d.unwatched;
    const why = {
      'no-member': 'no bridge runs on it',
      'stale-member': `its bridge stopped${u.heartbeatAt === null ? '' : ` (last heard ${utcText(u.heartbeatAt)})`}`,
      'not-listed': 'its bridge does not list it',
    }[u.why];
    plainWords = `Azure lists maintenance (${d.eventType}, ${d.eventStatus}) that no bridge watches: ${why}`;
    title = `${d.vm.name}: maintenance no bridge watches`;
    severity = 'high';
    rank = 9;
  } else if (transition === 'approved') {
    plainWords = started ? isHappening(d.eventType, d.durationInSeconds) : `${willHappen(d.eventType, d.durationInSeconds)} now: approved`;
    title = `${who} ${plainWords}`;
    severity = severityOf(d.eventType);
  } else {
    plainWords = started ? isHappening(d.eventType, d.durationInSeconds) : willHappen(d.eventType, d.durationInSeconds);
    title = `${who} ${plainWords}`;
    severity = severityOf(d.eventType);
  }
  if (!d.affectsThisVm && severity !== 'resolved') severity = 'info';
  // a drill says so first, everywhere a person reads it
  if (event.drill === true) title = `DRILL: ${title}`;
  const nb = d.notBefore === null ? null : Date.parse(d.notBefore);
  const timeLeftMs = nb === null ? 0 : nb - Date.parse(observedAt);
  const notBefore =
    nb === null || !Number.isFinite(nb)
      ? null
      : {
          iso: d.notBefore!,
          epoch: Math.floor(nb / 1000),
          timeLeft: timeLeftMs >= 0 ? `in ${humanDuration(timeLeftMs)}` : `${humanDuration(-timeLeftMs)} ago`,
        };
  const showApprove = options.approveUrl && d.eventStatus === 'Scheduled' && (transition === 'scheduled' || transition === 'updated');
  return {
    title,
    severity,
    rank,
    transition,
    eventType: d.eventType,
    eventStatus: d.eventStatus,
    plainWords,
    vms,
    affectsThisVm: d.affectsThisVm,
    thisVm: d.vm.name,
    source: d.eventSource,
    notBefore,
    duration:
      d.durationInSeconds < 0
        ? 'unknown'
        : d.durationInSeconds === 0
          ? 'no interruption'
          : `about ${humanDuration(d.durationInSeconds * 1000)}`,
    description: d.description,
    eventId: d.eventId,
    observedAt,
    incarnation: d.documentIncarnation,
    approveUrl: showApprove ? options.approveUrl! : null,
    prepared: preparedLine(options.preparations ?? [], d.approval, nb),
  };
}

/** preparedLine tells what the preparations did and when the event was approved, in one line. */
function preparedLine(
  steps: readonly PreparedStep[],
  approval: { by: string; via: string; at: string } | undefined,
  notBefore: number | null,
): string | null {
  const parts = steps
    .filter((s) => s.state === 'done' || s.state === 'failed')
    .map((s) => (s.state === 'failed' ? `preparation failed: ${s.detail ?? 'see the dead letters'}` : (s.detail ?? 'prepared')));
  const given = steps.filter((s) => s.state === 'undone').map((s) => s.detail ?? 'given back');
  parts.push(...given);
  if (approval !== undefined) {
    const at = Date.parse(approval.at);
    const early =
      notBefore !== null && Number.isFinite(notBefore) && Number.isFinite(at) && notBefore > at
        ? `, ${humanDuration(notBefore - at)} before NotBefore`
        : '';
    if (Number.isFinite(at)) parts.push(`approved at ${approval.at.slice(11, 16)} UTC${early}`);
  }
  return parts.length === 0 ? null : parts.join(' · ');
}

function severityOf(type: string): Severity {
  const r = TYPE_RANK[type] ?? 2;
  return r >= 5 ? 'critical' : r >= 3 ? 'high' : 'warning';
}

/** utcText renders an ISO time as "2026-11-22 05:04 UTC". */
export function utcText(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** vmList names the VMs, marking this one. */
export function vmList(msg: ChatMessage): string {
  return msg.vms.map((v) => (v.isThisVm ? `${v.name} (this VM)` : v.name)).join(', ') || '-';
}

/** truncate shortens text to `max` characters, marking the cut. */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
