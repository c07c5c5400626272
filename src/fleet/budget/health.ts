/**
 * StoreHealth: whether the budget's store answers, as /readyz, `status` and the logs say it. The
 * change is logged once each way (`FLEET_STORE_UNAVAILABLE` when it stops answering, a line when
 * it answers again) and every failure counted; while it does not answer, early approvals fail
 * closed (`unavailable`), and a person's forced approval goes on past it (`forcedWithin`).
 */
import type { Logger } from 'pino';
import { ApprovalError, type Grant } from '../../approval/service.ts';
import { withDeadline } from '../../lib/time.ts';
import { errorFields, messageOf } from '../../lib/errors.ts';
import { FleetStoreError } from './stores/port.ts';
import { asSlot, slotState } from './records.ts';
import { pauseOf, pauseState } from './pause.ts';
import type { MemberSlots } from './slots.ts';
import type { QueuePlace } from './queue.ts';
import type { BudgetState } from './types.ts';

export class StoreHealth {
  readonly #logger: Logger;
  readonly #where: string;
  readonly #onError: ((operation: string) => void) | undefined;
  #ok = true;
  #lastError: string | null = null;

  constructor(logger: Logger, where: string, onError?: (operation: string) => void) {
    this.#logger = logger;
    this.#where = where;
    this.#onError = onError;
  }

  get reachable(): boolean {
    return this.#ok;
  }

  get lastError(): string | null {
    return this.#lastError;
  }

  /** answered: the store answered a call. */
  answered(): void {
    if (!this.#ok) this.#logger.info({ store: this.#where }, 'fleet budget: the store answers again');
    this.#ok = true;
    this.#lastError = null;
  }

  /** failed: an operation on the store failed (`what` names it when the error does not). */
  failed(what: string, err: unknown): void {
    const e = err instanceof FleetStoreError ? err : new FleetStoreError(what, messageOf(err), err);
    this.#onError?.(e.operation);
    if (this.#ok)
      this.#logger.error(
        { ...errorFields(e), store: this.#where },
        'fleet budget: the store cannot be read or written; no early approval until it answers (maintenance starts at NotBefore)',
      );
    this.#ok = false;
    this.#lastError = e.message;
  }
}

/** unavailable: the answer when the store cannot be read or written (fail closed: 503). */
export function unavailable(group: string, why: string): ApprovalError {
  return new ApprovalError(
    'FLEET_STORE_UNAVAILABLE',
    `the fleet store of group ${group} cannot be reached, so no early approval is given (maintenance starts at NotBefore): ${why}`,
  );
}

/**
 * forcedWithin: a person's forced approval waits for the store one call's deadline at most, even
 * behind a held-up heartbeat: past it, it goes on, on the record (the attempt still writes its
 * record when the store answers).
 */
export function forcedWithin(attempt: Promise<Grant>, ms: number): Promise<Grant> {
  return withDeadline(attempt, ms, () => new FleetStoreError('take a slot', `no answer within ${ms / 1000} s`)).catch((err: unknown) => {
    if (!(err instanceof FleetStoreError)) throw err;
    return { forced: true, slot: null, note: `the fleet budget did not answer within ${ms / 1000} s` };
  });
}

/** budgetStateOf: what /readyz and status say of a budget: its slot, the holders, the held approvals, the place, the pause. */
export function budgetStateOf(
  o: { readonly config: { readonly group: string }; readonly store: { readonly where: string } },
  k: number,
  health: StoreHealth,
  slots: MemberSlots,
  place: QueuePlace,
  now: number,
): BudgetState {
  const slot = slots.held;
  return {
    ...{ group: o.config.group, maxUnavailable: k, store: o.store.where, storeReachable: health.reachable, lastError: health.lastError },
    slot: slot ? slotState(slot.name, asSlot(slot.value)) : null,
    holders: slots.holders,
    held: [...place.approvals.keys()],
    place: place.position,
    pause: pauseState(pauseOf(slots.last, now)),
  };
}
