/**
 * Pausing and resuming a group by hand (`se-bridge fleet pause`, `fleet resume`, the relay's
 * `POST /v1/fleet/groups/{group}/pause` and `…/resume`). Each write is conditional on the version
 * read, like every record of the group's: a pause and a resume that meet are applied one after the
 * other, never half. A person's pause replaces the one in force, the breaker's included; a resume
 * removes the pause and clears the breaker's failures, so the lapses that opened it are not
 * counted again.
 */
import { BREAKER_NAME, BreakerSchema, type BreakerRecord } from './breaker.ts';
import { inForce, PAUSE_NAME, PauseSchema, type Pause } from './pause.ts';
import type { FleetStore } from './stores/port.ts';

/** How often a write lost to another writer is tried again from a fresh read. */
const MAX_ROUNDS = 5;

/** What a person asks: who, why, and until when (none: until resumed). */
export interface PauseRequest {
  readonly who: string;
  readonly why: string;
  readonly until?: string | undefined;
}

/** The longest a person's reason or name is kept (the schema's bound on a record's text). */
export const MAX_PAUSE_TEXT = 1024;

/**
 * pauseProblem: why a request to pause is refused (null: it is good): a reason is needed, and an
 * `until` must read as a time in the future.
 */
export function pauseProblem(r: { readonly who?: unknown; readonly why?: unknown; readonly until?: unknown }, now: number): string | null {
  if (typeof r.why !== 'string' || r.why.trim() === '') return 'a pause needs a reason';
  if (r.why.length > MAX_PAUSE_TEXT) return `the reason is longer than ${MAX_PAUSE_TEXT} characters`;
  if (typeof r.who !== 'string' || r.who.trim() === '' || r.who.length > MAX_PAUSE_TEXT) return 'a pause needs who asks for it';
  if (r.until === undefined) return null;
  const t = typeof r.until === 'string' ? Date.parse(r.until) : NaN;
  if (!Number.isFinite(t)) return `until (${String(r.until)}) is not a time (RFC 3339, as 2026-12-01T06:00:00Z)`;
  if (t <= now) return `until (${String(r.until)}) is not in the future`;
  return null;
}

/** pauseGroup writes a person's pause of the group, replacing the one in force (any of them), and returns it. */
export async function pauseGroup(store: FleetStore, request: PauseRequest, now: number): Promise<Pause> {
  const until = request.until === undefined ? {} : { until: new Date(Date.parse(request.until)).toISOString() };
  const pause = PauseSchema.parse({
    member: null,
    by: 'person',
    who: request.who.trim(),
    why: request.why.trim(),
    since: new Date(now).toISOString(),
    ...until,
  });
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const current = await store.get(PAUSE_NAME);
    if ((await store.put(PAUSE_NAME, pause, current?.version ?? null)) !== null) return pause;
  }
  throw new Error(`the pause record was written by another ${MAX_ROUNDS} times while this pause was being written; try again`);
}

/** What a resume did: the pause it removed (null: the group was not paused), and whether the breaker's failures were cleared. */
export interface Resumed {
  readonly resumed: Pause | null;
  readonly breakerCleared: boolean;
}

/** resumeGroup removes the group's pause and clears its breaker's failures: a lapse before `now` is never counted again. */
export async function resumeGroup(store: FleetStore, now: number): Promise<Resumed> {
  let resumed: Pause | null = null;
  for (let round = 0; ; round++) {
    if (round === MAX_ROUNDS) throw new Error(`the pause record changed ${MAX_ROUNDS} times while it was being removed; try again`);
    const current = await store.get(PAUSE_NAME);
    if (current === null) break;
    const p = PauseSchema.safeParse(current.value);
    if (await store.remove(PAUSE_NAME, current.version)) {
      resumed = p.success && inForce(p.data, now) ? p.data : null;
      break;
    }
  }
  let breakerCleared = false;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const current = await store.get(BREAKER_NAME);
    if (current === null) break;
    const b = BreakerSchema.safeParse(current.value);
    const cleared: BreakerRecord = { member: null, failures: [], clearedAt: new Date(now).toISOString() };
    if ((await store.put(BREAKER_NAME, cleared, current.version)) !== null) {
      breakerCleared = b.success ? b.data.failures.length > 0 : true;
      break;
    }
  }
  return { resumed, breakerCleared };
}
