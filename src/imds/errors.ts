/**
 * ImdsError is every way a read or write at IMDS can fail, with a stable `code`.
 * A failed read is never an empty document: callers produce no transitions from it.
 */
import { BridgeError, type Code } from '../lib/errors.ts';

export type ImdsErrorCode = Extract<
  Code,
  | 'IMDS_BAD_REQUEST' // 400: missing Metadata header, bad api-version, malformed body
  | 'IMDS_NOT_FOUND' // 404
  | 'IMDS_METHOD_NOT_ALLOWED' // 405
  | 'IMDS_GONE' // 410: retry after some time, for at most 70 s
  | 'IMDS_RATE_LIMITED' // 429
  | 'IMDS_SERVER_ERROR' // 5xx
  | 'IMDS_HTTP_STATUS' // any other unexpected status
  | 'IMDS_NETWORK' // connection refused, reset, DNS, ...
  | 'IMDS_TIMEOUT'
  | 'IMDS_UNPARSABLE' // not JSON, truncated, too large
  | 'IMDS_SCHEMA_INVALID' // JSON, but not a Scheduled Events document
  | 'IMDS_ABORTED' // the caller's signal aborted (shutdown)
>;

const RETRYABLE: ReadonlySet<ImdsErrorCode> = new Set([
  'IMDS_GONE',
  'IMDS_RATE_LIMITED',
  'IMDS_SERVER_ERROR',
  'IMDS_NETWORK',
  'IMDS_TIMEOUT',
  'IMDS_UNPARSABLE',
]);

export class ImdsError extends BridgeError<ImdsErrorCode> {
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;
  constructor(code: ImdsErrorCode, message: string, options: { status?: number; retryAfterMs?: number; cause?: unknown } = {}) {
    super(code, message, options);
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }
  /** retryable: a later identical request may succeed. */
  get retryable(): boolean {
    return RETRYABLE.has(this.code);
  }
}

/**
 * unanswered: a request whose answer never came here (timed out, cut off, aborted at shutdown, a
 * 200 too large to read): IMDS may have taken it. Only an answer with a status is a refusal.
 */
export const unanswered = (err: unknown): boolean => !(err instanceof ImdsError) || err.status === undefined;

/** noted: `p`, with `asked.unanswered` set when it fails without IMDS's answer (kept once set, across retries). */
export const noted = <T>(asked: { unanswered: boolean }, p: Promise<T>): Promise<T> =>
  p.catch((err: unknown) => {
    asked.unanswered ||= unanswered(err);
    throw err;
  });

/** startFailed: what the log and the answer say of a StartRequests that failed: refused, or never answered (IMDS may have taken it). */
export const startFailed = (unanswered: boolean): readonly [log: string, answer: string] =>
  unanswered
    ? ['no answer to StartRequests', 'IMDS did not answer StartRequests (it may have taken it)']
    : ['IMDS refused StartRequests', 'IMDS did not accept StartRequests'];

export function codeForStatus(status: number): ImdsErrorCode {
  switch (status) {
    case 400:
      return 'IMDS_BAD_REQUEST';
    case 404:
      return 'IMDS_NOT_FOUND';
    case 405:
      return 'IMDS_METHOD_NOT_ALLOWED';
    case 410:
      return 'IMDS_GONE';
    case 429:
      return 'IMDS_RATE_LIMITED';
    default:
      return status >= 500 ? 'IMDS_SERVER_ERROR' : 'IMDS_HTTP_STATUS';
  }
}
