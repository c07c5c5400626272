/**
 * A group's pause: while it holds, no early approval in the group (policy, hooks, a person's plain
 * approval), only a forced one, on the record. One record per group, `slot-pause`, written by a
 * person (`se-bridge fleet pause`, the relay) or by the group's circuit breaker (breaker.ts). It
 * is named among the slots so every member reads it in the listing of the slots it already makes,
 * at no request of its own; it has no holder (`member: null`), so a version that knows no pause
 * reads it as a free slot of no number and counts nothing by it. A pause with an `until` ends by
 * itself then, with no write: past it the record holds nothing.
 *
 * This file decides the hold; HOLD_PAUSE and HOLD_BREAKER name its reasons for machines.
 */
import { z } from 'zod';
import { ApprovalError } from '../../approval/service.ts';
import { text, time } from './schemas.ts';
import type { Versioned } from './stores/port.ts';

/** The hold reason of an approval a person's pause holds. */
export const HOLD_PAUSE = 'pause';
/** The hold reason of an approval the group's circuit breaker holds (it paused the group). */
export const HOLD_BREAKER = 'breaker';
export type BrakeReason = typeof HOLD_PAUSE | typeof HOLD_BREAKER;

/** The pause record's name: among the slots (`slot-`), so it comes with their listing; no slot or overflow record is named so. */
export const PAUSE_NAME = 'slot-pause';

/** The most members a breaker's pause names. */
export const MAX_NAMED = 100;

/**
 * PauseSchema: a pause as its record says it: who paused the group (a person, or the breaker),
 * why, since when, until when (none: until a person resumes it), and for a breaker the members
 * that did not come back. Untrusted, as every record: one that does not read is no pause.
 */
export const PauseSchema = z.object({
  member: z.null(),
  by: z.enum(['person', 'breaker']),
  who: text.min(1),
  why: text.min(1),
  since: time,
  until: time.optional(),
  members: z.array(text).max(MAX_NAMED).optional(),
});
export type Pause = z.infer<typeof PauseSchema>;

/** pauseRecordOf: the pause record among a listing of the slots (its version with it), or null when there is none that reads. */
export function pauseRecordOf(records: readonly Versioned[]): { readonly pause: Pause; readonly version: string } | null {
  const r = records.find((x) => x.name === PAUSE_NAME);
  if (r === undefined) return null;
  const p = PauseSchema.safeParse(r.value);
  return p.success ? { pause: p.data, version: r.version } : null;
}

/** inForce: the pause holds at `now` (it has no end, or its end has not come). */
export const inForce = (p: Pause, now: number): boolean => p.until === undefined || Date.parse(p.until) > now;

/** pauseOf: the pause that holds the group at `now`, as a listing of its slots says it; null when none does. */
export function pauseOf(records: readonly Versioned[], now: number): Pause | null {
  const r = pauseRecordOf(records);
  return r !== null && inForce(r.pause, now) ? r.pause : null;
}

/** A pause as status, /readyz and the read API say it: its record without the empty holder that keeps other versions off it. */
export type PauseState = Omit<Pause, 'member'>;

/** pauseState: a pause as status says it (null: none holds). */
export const pauseState = (p: Pause | null): PauseState | null => {
  if (p === null) return null;
  const { member: _, ...rest } = p;
  return rest;
};

/** reasonOf: the machine-readable reason of a pause's hold. */
export const reasonOf = (p: Pause): BrakeReason => (p.by === 'breaker' ? HOLD_BREAKER : HOLD_PAUSE);

/** pauseText: a pause in words: by whom, why, since and until when. */
export function pauseText(group: string, p: PauseState): string {
  const who = p.by === 'breaker' ? "the group's circuit breaker" : p.who;
  const until = p.until === undefined ? 'until it is resumed' : `until ${p.until}`;
  return `group ${group} is paused by ${who} since ${p.since} (${until}): ${p.why}`;
}

/** PausedError: an early approval a pause holds (HELD, 409), with its reason for machines and the pause itself. */
export class PausedError extends ApprovalError {
  readonly pause: Pause;
  constructor(message: string, pause: Pause) {
    super('HELD', message, undefined, [], [], 0, reasonOf(pause));
    this.pause = pause;
  }

  /** body: the approval API's held answer, with the pause beside it. */
  override body(eventId: string): Record<string, unknown> {
    const { by, who, why, since, until, members } = this.pause;
    return { ...super.body(eventId), pause: { by, who, why, since, until: until ?? null, ...(members ? { members } : {}) } };
  }

  /** with: the same hold, said with `message`. */
  with(message: string): PausedError {
    return new PausedError(message, this.pause);
  }
}

/** pausedError: the answer to an early approval while `pause` holds the group; only a forced approval goes past it. */
export const pausedError = (group: string, pause: Pause): PausedError =>
  new PausedError(`${pauseText(group, pause)}; only a forced approval, with a reason, goes past a pause`, pause);

/** brakeOf: the reason a pause or the breaker holds an approval with, or null when neither holds it. */
export const brakeOf = (err: unknown): BrakeReason | null => (err instanceof PausedError ? reasonOf(err.pause) : null);
