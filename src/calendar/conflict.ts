/**
 * conflictOf: whether a maintenance falls where the calendar says it hurts, told as soon as the
 * event is seen. Its time is NotBefore to NotBefore + DurationInSeconds (15 minutes when Azure
 * does not say). A conflict is a blackout that this time meets, or, for an event a rule with
 * `within: windows` would approve early, no window before NotBefore (so Azure acts at NotBefore)
 * and a maintenance time not wholly inside the windows. It says what a person can still do.
 */
import type { Calendar, Within } from './calendar.ts';

/** Taken as the duration of an event whose DurationInSeconds is unknown (-1). */
export const UNKNOWN_DURATION_MS = 15 * 60_000;

export interface CalendarConflict {
  /** blackout: the maintenance meets a blackout; closed: outside every window, with none before NotBefore. */
  readonly kind: 'blackout' | 'closed';
  /** The blackout it meets. */
  readonly blackout?: string;
  readonly timeZone: string;
  /** When Azure acts if nothing changes: NotBefore to its end (ISO). */
  readonly from: string;
  readonly to: string;
  /** When early approval (for the rule that takes the event, else any time but a blackout) is next allowed before NotBefore, or null. */
  readonly allowedFrom: string | null;
  /** What a person can still do. */
  readonly advice: readonly string[];
}

export interface ConflictInput {
  readonly eventId: string;
  readonly notBefore: number;
  readonly durationSeconds: number;
  /** How the rule that would approve it early is bound, or null when no rule approves it early. */
  readonly within: Within | null;
}

export function conflictOf(cal: Calendar, e: ConflictInput, now: number): CalendarConflict | null {
  const from = e.notBefore;
  const to = from + (e.durationSeconds > 0 ? e.durationSeconds * 1000 : UNKNOWN_DURATION_MS);
  const stretches = cal.stretches(from, to);
  const blackout = stretches.find((s) => s.state.blackout !== null)?.state.blackout ?? null;
  const within: Within = e.within === 'windows' ? 'windows' : 'any';
  const allowed = now < from ? cal.nextAllowed(now, within, from) : null;
  const closed =
    blackout === null &&
    e.within === 'windows' &&
    cal.config.windows.length > 0 &&
    allowed === null &&
    stretches.some((s) => !s.state.inWindow);
  if (blackout === null && !closed) return null;
  const when = (t: number) => new Date(t).toISOString();
  const advice: string[] = [];
  if (allowed !== null && allowed <= now)
    advice.push(`approve it now (se-bridge approve ${e.eventId}, the API, a link or Slack): early approval is allowed now`);
  else if (allowed !== null) advice.push(`approve it early from ${when(allowed)}, before NotBefore, when the calendar allows it`);
  advice.push('redeploy the VM by hand at a time of your choosing before NotBefore (az vm redeploy): it moves to another host');
  return {
    kind: blackout !== null ? 'blackout' : 'closed',
    ...(blackout !== null ? { blackout } : {}),
    timeZone: cal.config.timeZone,
    from: when(from),
    to: when(to),
    allowedFrom: allowed === null ? null : when(allowed),
    advice,
  };
}

/** conflictText: the conflict in one sentence. */
export function conflictText(c: CalendarConflict): string {
  const where =
    c.kind === 'blackout' ? `inside the blackout ${c.blackout}` : 'outside every maintenance window, and no window opens before it';
  return `Azure acts from ${c.from} to ${c.to} ${where} (${c.timeZone})`;
}
