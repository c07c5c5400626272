/**
 * The contract of a fleet budget's store: named JSON records, each with a version the store
 * itself assigns (a blob's ETag, a Lease's resourceVersion), written only when the version the
 * writer read is still current. That one conditional write is what keeps two members racing for
 * the last slot from both winning, across processes and machines. The store is loaded only when
 * `fleet` is configured, so a bridge without a fleet pays nothing for its client library.
 */
import { BridgeError } from '../../../lib/errors.ts';

export interface Versioned {
  readonly name: string;
  readonly value: unknown;
  readonly version: string;
}

export interface FleetStore {
  /** What the store is, for logs and status (`blob se-bridge-fleet/kafka-prod`, `kubernetes lease se-bridge/…`). */
  readonly where: string;
  /** get: the record, or null when there is none. */
  get(name: string, signal?: AbortSignal): Promise<Versioned | null>;
  /**
   * put writes the record when its current version is still `version` (null: only when there is
   * none yet). It returns the new version, or null when another writer came first.
   */
  put(name: string, value: unknown, version: string | null, signal?: AbortSignal): Promise<string | null>;
  /** list: every record whose name starts with `prefix`. */
  list(prefix: string, signal?: AbortSignal): Promise<Versioned[]>;
  close(): Promise<void>;
}

/** FleetStoreError: the store could not be read or written (unreachable, refused, not authorized). */
export class FleetStoreError extends BridgeError<'FLEET_STORE_UNAVAILABLE'> {
  readonly operation: string;
  constructor(operation: string, message: string, cause?: unknown) {
    super('FLEET_STORE_UNAVAILABLE', `${operation}: ${message}`, { cause });
    this.operation = operation;
  }
}
