/**
 * StoreHealth: whether the budget's store answers, as /readyz, `status` and the logs say it. The
 * change is logged once each way (`FLEET_STORE_UNAVAILABLE` when it stops answering, a line when
 * it answers again) and every failure counted; while it does not answer, early approvals fail
 * closed (`unavailable`).
 */
import type { Logger } from 'pino';
import { ApprovalError } from '../../approval/service.ts';
import { errorFields, messageOf } from '../../lib/errors.ts';
import { FleetStoreError } from './stores/port.ts';

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
