/**
 * formatEventLine renders one CloudEvent of the bridge as a single human-readable line:
 * when, what transition, which event type, the EventId, the VMs (this one starred), when it
 * may start and how long it is expected to last. Every value that came from IMDS or from an
 * approver passes through `visible`, so no value can add a line, move the cursor or recolour
 * the terminal.
 */
import { transitionOf, type BridgeEvent } from '../pipeline/cloudevent.ts';

const KIND_WIDTH = 9;

export function formatEventLine(event: BridgeEvent): string {
  const d = event.data;
  const kind = transitionOf(event);
  if (d === undefined) return `${event.time ?? ''} ${kind} ${event.subject ?? event.id}`;
  const observed = event.time ?? new Date().toISOString();
  const vms = d.resources.map((r) => visible(r.toLowerCase() === d.vm.name.toLowerCase() ? `${r}*` : r)).join(',') || '-';
  const parts = [
    observed.replace(/\.\d+Z$/, 'Z'),
    ...(event.drill === true ? ['DRILL'] : []),
    kind.toUpperCase().padEnd(KIND_WIDTH),
    visible(d.eventType).padEnd(9),
    visible(d.eventId),
    `vms=${vms}`,
    `status=${visible(d.eventStatus)}`,
    `source=${visible(d.eventSource)}`,
  ];
  if (d.notBefore !== null) parts.push(`notBefore=${d.notBefore} (${timeLeft(d.notBefore, observed)})`);
  if (d.durationInSeconds >= 0) parts.push(`duration=${d.durationInSeconds}s`);
  if (d.approval !== undefined) parts.push(`approvedBy=${visible(d.approval.by)} via=${visible(d.approval.via)}`);
  if (d.collision !== undefined)
    parts.push(
      `collision=${visible(d.collision.group)}:${d.collision.due.length}/${d.collision.maxUnavailable} from=${d.collision.from} to=${d.collision.to} vms=${d.collision.due.map((x) => visible(x.vm)).join(',')} atOnce=${d.collision.atOnce} wave=${visible(d.collision.id)}`,
    );
  if (d.pause !== undefined)
    parts.push(
      `pause=${visible(d.pause.group)}:${d.pause.state} by=${visible(d.pause.who)} since=${d.pause.since} why="${visible(d.pause.why).replace(/"/g, '\\"')}"`,
    );
  if (d.description !== '') parts.push(`"${visible(d.description).replace(/"/g, '\\"')}"`);
  return parts.join('  ');
}

/**
 * visible shows text on one terminal line as it is: control characters (C0, DEL, C1 with
 * ESC among them), line and paragraph separators and the invisible bidirectional controls
 * become visible escapes (`\n`, `\u001b`), and a backslash is doubled, so nothing in the
 * text can forge a line or hide what follows it.
 */
export function visible(text: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what this refuses
  return text.replace(/[\\\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => {
    switch (c) {
      case '\\':
        return '\\\\';
      case '\n':
        return '\\n';
      case '\r':
        return '\\r';
      case '\t':
        return '\\t';
      default:
        return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
    }
  });
}

/** timeLeft says how far `target` lies after `from`, e.g. "in 14m 58s" or "3m 2s ago". */
export function timeLeft(target: string, from: string): string {
  const ms = Date.parse(target) - Date.parse(from);
  if (!Number.isFinite(ms)) return 'unknown';
  const text = humanDuration(Math.abs(ms));
  return ms >= 0 ? `in ${text}` : `${text} ago`;
}

export function humanDuration(ms: number): string {
  let s = Math.round(ms / 1000);
  const days = Math.floor(s / 86400);
  s -= days * 86400;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  if (days > 0) return `${days}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${s}s`;
  return `${s}s`;
}
