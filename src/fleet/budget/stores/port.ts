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
  /** The record as JSON read it; undefined when it could not be read (`unreadable` says why). */
  readonly value: unknown;
  readonly version: string;
  /** Why the record is no JSON value: larger than MAX_RECORD_BYTES, or not JSON. */
  readonly unreadable?: string;
}

/**
 * The largest record either store reads: 256 KiB, what Kubernetes allows a Lease's annotations
 * in all. A member record with a few hundred events is a few tens of KiB; anything larger is no
 * record of ours, and is not downloaded.
 */
export const MAX_RECORD_BYTES = 256 * 1024;

/** recordOf parses a record's text, or says why it is unreadable (it is never thrown: one bad record stops nothing). */
export function recordOf(name: string, text: string, version: string): Versioned {
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_RECORD_BYTES) return tooLarge(name, bytes, version);
  try {
    return { name, value: JSON.parse(text) as unknown, version };
  } catch {
    return { name, value: undefined, version, unreadable: 'not JSON' };
  }
}

/** tooLarge: a record over MAX_RECORD_BYTES, left unread. */
export const tooLarge = (name: string, bytes: number, version: string): Versioned => ({
  name,
  value: undefined,
  version,
  unreadable: `${bytes} bytes, over the ${MAX_RECORD_BYTES}-byte limit of a record`,
});

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
  /** remove deletes the record when its current version is still `version`; false when another writer came first or it is gone. */
  remove(name: string, version: string, signal?: AbortSignal): Promise<boolean>;
  /** list: every record whose name starts with `prefix`. */
  list(prefix: string, signal?: AbortSignal): Promise<Versioned[]>;
  /**
   * head: the first `limit` records (or fewer) whose name starts with `prefix`, in the order of
   * their names: one page of the store's listing (Blob `maxresults`, Kubernetes `limit`), so the
   * reader of a long queue reads its head, never the whole of it.
   */
  head(prefix: string, limit: number, signal?: AbortSignal): Promise<Versioned[]>;
  /**
   * watch, in a store that tells its changes as they are made (Leases: a Kubernetes watch; Blob
   * Storage has none): every record whose name starts with `prefix`, given to `seen` once listed
   * and again at each change, until `signal` aborts (then it resolves). While the watch is down
   * (a failure; it is tried again, a list first) `seen` is given null and why: what it said is no
   * longer known to be current.
   */
  watch?(prefix: string, signal: AbortSignal, seen: (records: readonly Versioned[] | null, why?: FleetStoreError) => void): Promise<void>;
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
