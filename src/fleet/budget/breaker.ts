/**
 * The group's circuit breaker (`fleet.breaker: {failures, withinSeconds}`): a member approved
 * early that is not back within its bound counts as a failure, and at `failures` of them within
 * `withinSeconds` the group pauses itself (pause.ts, `by: breaker`, the members named) until a
 * person resumes it. A budget that keeps approving while members fail to come back is how one bad
 * maintenance becomes an outage.
 *
 * Not back within its bound: its slot (early or forced) passed its recorded end still in its name.
 * A member that is back gives its slot back once its maintenance is over and it is whole again
 * (healthy by its checks for settleSeconds, with `fleet.health`), and renews it at every read
 * while its events are listed; one that never comes back, or stays unhealthy, renews nothing and
 * its slot lapses. Its failure is dated by that recorded end, the same for every reader.
 *
 * Failures are kept in one record, `slot-breaker`, read in the listing of the slots every member
 * makes anyway. Whichever member first lists a lapsed slot not recorded yet writes it there, on the
 * version it read (a conditional write): two that see it at once both try, one wins, and the other
 * finds it recorded at its next listing. The member whose write makes `failures` pauses the group.
 */
import type { Logger } from 'pino';
import { z } from 'zod';
import { asSlot, live, SLOT_PREFIX } from './records.ts';
import { errorFields } from '../../lib/errors.ts';
import { text, time } from './schemas.ts';
import type { FleetStore, Versioned } from './stores/port.ts';
import { inForce, MAX_NAMED, pauseRecordOf, PAUSE_NAME, type Pause } from './pause.ts';

/** The breaker record's name: among the slots, with no holder (pause.ts says why). */
export const BREAKER_NAME = 'slot-breaker';

export interface BreakerConfig {
  readonly failures: number;
  readonly withinSeconds: number;
}

const FailureSchema = z.object({ vm: text, member: text, eventIds: z.array(text).max(8), since: time, at: time });
/** A member approved early that was not back within its bound: who, for which events, held since when, and its bound (`at`). */
export type Failure = z.infer<typeof FailureSchema>;

/** BreakerSchema: the failures recorded, and when a person last resumed the group (a lapse before then is not counted again). */
export const BreakerSchema = z.object({
  member: z.null(),
  failures: z.array(FailureSchema).max(MAX_NAMED),
  clearedAt: time.optional(),
});
export type BreakerRecord = z.infer<typeof BreakerSchema>;

/** breakerRecordOf: the breaker record of a listing of the slots (null when none reads), and the record's version (null: none). */
export function breakerRecordOf(records: readonly Versioned[]): { readonly record: BreakerRecord | null; readonly version: string | null } {
  const r = records.find((x) => x.name === BREAKER_NAME);
  const p = BreakerSchema.safeParse(r?.value);
  return { record: p.success ? p.data : null, version: r?.version ?? null };
}

/**
 * lapsedIn: the members approved early (or forced) whose slot passed its recorded end within the
 * last `withinMs`, still in their name, after `clearedAt`: not back within their bound.
 */
export function lapsedIn(records: readonly Versioned[], now: number, withinMs: number, clearedAt = Number.NEGATIVE_INFINITY): Failure[] {
  return records.flatMap((r) => {
    const s = asSlot(r.value);
    if (s.member === null || s.unread !== undefined || s.until === undefined || s.since === undefined || live(s, now)) return [];
    if (s.mode !== 'early' && s.mode !== 'forced') return [];
    const at = Date.parse(s.until);
    if (!(at > now - withinMs && at > clearedAt)) return [];
    return [{ vm: s.vm ?? s.member, member: s.member, eventIds: [...(s.eventIds ?? [])].slice(0, 8), since: s.since, at: s.until }];
  });
}

/** breakerPause: the pause the breaker writes when `failures` open it. */
export function breakerPause(failures: readonly Failure[], withinSeconds: number, now: number): Pause {
  const vms = [...new Set(failures.map((f) => f.vm))];
  return {
    member: null,
    by: 'breaker',
    who: 'breaker',
    why: `${failures.length} member${failures.length === 1 ? '' : 's'} approved early did not come back within their bound in ${withinSeconds} s (${vms.join(', ')}); a person resumes the group (se-bridge fleet resume)`,
    since: new Date(now).toISOString(),
    members: vms.slice(0, MAX_NAMED),
  };
}

export interface BreakerOptions {
  readonly config: BreakerConfig;
  readonly group: string;
  readonly store: FleetStore;
  readonly logger: Logger;
  readonly now: () => number;
  /** The group was paused by this member's breaker write (said once: only one write opens it). */
  readonly opened?: (pause: Pause) => void;
}

export class Breaker {
  readonly #o: BreakerOptions;

  constructor(o: BreakerOptions) {
    this.#o = o;
  }

  /**
   * notWhole records this member's own failure: back from its maintenance (held in `slot`), but
   * still not healthy by its checks timeoutSeconds after it (FLEET_HEALTH_TIMEOUT), so it gives its
   * slot back before the slot would lapse. Recorded as that lapse would be, now: one listing of the
   * slots and one write. Never throws (a failure it cannot record is said in the log).
   */
  async notWhole(slot: Versioned | null | undefined): Promise<void> {
    const s = slot == null ? null : asSlot(slot.value);
    if (slot == null || s === null || s.member === null || (s.mode !== 'early' && s.mode !== 'forced')) return;
    try {
      for (let round = 0; round < 3; round++) {
        const lapsed = { name: slot.name, value: { ...s, until: new Date(this.#o.now() - 1).toISOString() }, version: slot.version };
        const listing = [...(await this.#o.store.list(SLOT_PREFIX)).filter((r) => r.name !== slot.name), lapsed];
        if (await this.look(listing)) return;
        // nothing written: recorded already, or another member wrote the record first (read again)
        if (breakerRecordOf(listing).record?.failures.some((f) => f.member === s.member && f.since === s.since)) return;
      }
    } catch (err) {
      this.#o.logger.warn(
        { group: this.#o.group, ...errorFields(err) },
        'fleet budget: could not record this member not whole with the circuit breaker',
      );
    }
  }

  /**
   * look records the failures a listing of the slots shows and its breaker record does not, and
   * pauses the group when they come to `failures`: true when it wrote (the slots are to be read
   * again). A listing with nothing new costs no request.
   */
  async look(records: readonly Versioned[]): Promise<boolean> {
    const { config, store, group, logger } = this.#o;
    const now = this.#o.now();
    const withinMs = config.withinSeconds * 1000;
    const { record, version } = breakerRecordOf(records);
    const clearedAt = record?.clearedAt === undefined ? Number.NEGATIVE_INFINITY : Date.parse(record.clearedAt);
    const known = (record?.failures ?? []).filter((f) => Date.parse(f.at) > now - withinMs);
    const seen = lapsedIn(records, now, withinMs, clearedAt).filter(
      (f) => !known.some((k) => k.member === f.member && k.since === f.since),
    );
    if (seen.length === 0) return false;
    const failures = [...known, ...seen].slice(-MAX_NAMED);
    const next: BreakerRecord = { member: null, failures, ...(record?.clearedAt === undefined ? {} : { clearedAt: record.clearedAt }) };
    // another member recorded first: its word is read at the next listing
    if ((await store.put(BREAKER_NAME, next, version)) === null) return false;
    for (const f of seen)
      logger.warn(
        {
          code: 'FLEET_MEMBER_NOT_BACK',
          group,
          vm: f.vm,
          eventIds: f.eventIds,
          until: f.at,
          failures: failures.length,
          of: config.failures,
        },
        `fleet budget: ${f.vm}, approved early, was not back within its bound (${f.at}); ${failures.length} of ${config.failures} within ${config.withinSeconds} s`,
      );
    if (failures.length < config.failures) return true;
    const current = pauseRecordOf(records);
    if (current?.pause.by === 'breaker' && inForce(current.pause, now)) return true;
    const pause = breakerPause(failures, config.withinSeconds, now);
    const at = records.find((r) => r.name === PAUSE_NAME)?.version ?? null;
    if ((await store.put(PAUSE_NAME, pause, at)) === null) return true;
    logger.error(
      { code: 'FLEET_BREAKER_OPEN', group, members: pause.members, why: pause.why },
      `fleet budget: group ${group} paused: ${pause.why}`,
    );
    this.#o.opened?.(pause);
    return true;
  }
}
