/**
 * Outcome classification shared by the HTTP-based sinks: one table, so every sink retries the
 * same things (conservative, explicit retry). 2xx delivered; 408, 429 and 5xx
 * retried (with Retry-After); 410 rejected (the endpoint is gone); any other status rejected.
 * Network and TLS failures are retried: the peer may come back, and the dispatcher's
 * maxAttempts and maxAgeMs bound how long.
 */
import { printable } from '../lib/printable.ts';
import { parseRetryAfter } from '../lib/time.ts';
import { delivered, reject, retry, type Outcome } from './contract.ts';

export function classifyHttpStatus(status: number, retryAfter?: string | string[], detail = ''): Outcome {
  const suffix = detail === '' ? '' : `: ${detail}`;
  if (status >= 200 && status < 300) return delivered;
  if (status === 408 || status === 429 || (status >= 500 && status < 600)) {
    return retry(`HTTP ${status}${suffix}`, parseRetryAfter(retryAfter));
  }
  if (status === 410) return reject(`HTTP 410 Gone: the endpoint no longer exists${suffix}`);
  if (status >= 300 && status < 400) return reject(`HTTP ${status}: redirects are not followed${suffix}`);
  return reject(`HTTP ${status}${suffix}`);
}

const TLS_CODES = new Set([
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_SSL_WRONG_VERSION_NUMBER',
]);

/**
 * undici's codes for a request it refuses to send (a header value with CR, LF or NUL, a header
 * name that is no token, a scheme it does not speak): retrying cannot help.
 */
const INVALID_REQUEST = new Set(['UND_ERR_INVALID_ARG', 'UND_ERR_NOT_SUPPORTED']);

/** classifyNetworkError turns a failed request (no HTTP answer) into a retry with its code. */
export function classifyNetworkError(err: unknown): Outcome {
  const e = err as { code?: string; cause?: { code?: string }; name?: string; message?: string };
  const code = e?.code ?? e?.cause?.code ?? e?.name ?? 'ERROR';
  // the request itself is malformed (a header value HTTP does not allow, a bad method): it never reaches the wire, and never will
  if (INVALID_REQUEST.has(code)) return reject(`invalid request ${code}${e?.message ? `: ${e.message}` : ''}`);
  const kind = TLS_CODES.has(code) || TLS_CODES.has(e?.cause?.code ?? '') ? 'TLS' : 'network';
  return retry(`${kind} error ${code}${e?.message ? `: ${e.message}` : ''}`);
}

/**
 * Azure messaging errors (@azure/event-hubs MessagingError codes and @azure/service-bus
 * ServiceBusError codes) in one table. Authentication failures are retried on purpose: a
 * managed identity token can be briefly unavailable and a new role assignment takes minutes
 * to apply; a wrong key stays wrong, and maxAttempts / maxAgeMs then dead-letter the event
 * with the reason.
 */
const AZURE_RETRY = new Set([
  // Event Hubs / core-amqp names
  'ServerBusyError',
  'ServiceUnavailableError',
  'OperationTimeoutError',
  'InternalServerError',
  'ServiceCommunicationError',
  'ConnectionForcedError',
  'ConnectionRedirectError',
  'DetachForcedError',
  'SenderBusyError',
  'SenderNotReadyError',
  'OperationCancelledError',
  'QuotaExceededError',
  'UnauthorizedError',
  'InsufficientCreditError',
  // Service Bus names
  'ServiceBusy',
  'ServiceTimeout',
  'ServiceCommunicationProblem',
  'QuotaExceeded',
  'UnauthorizedAccess',
  // @azure/identity: the token endpoint could not give a token (IMDS down, an identity not
  // yet assigned to the VM, a role assignment still propagating)
  'CredentialUnavailableError',
  'AuthenticationError',
  'AuthenticationRequiredError',
  // transport
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'AbortError',
]);
const AZURE_REJECT = new Set([
  'MessageTooLargeError',
  'MessageSizeExceeded',
  'MessagingEntityNotFoundError',
  'MessagingEntityNotFound',
  'MessagingEntityDisabledError',
  'MessagingEntityDisabled',
  'ArgumentError',
  'ArgumentOutOfRangeError',
  'InvalidOperationError',
  'NotImplementedError',
  'PartitionNotOwnedError',
]);

export function classifyAzureError(err: unknown): Outcome {
  const e = err as { code?: unknown; name?: unknown; message?: unknown; retryable?: unknown };
  const code = typeof e?.code === 'string' ? e.code : typeof e?.name === 'string' ? e.name : 'Error';
  const reason = `${code}: ${printable(typeof e?.message === 'string' ? e.message : String(err))}`;
  if (AZURE_REJECT.has(code)) return reject(reason);
  if (AZURE_RETRY.has(code)) return retry(reason);
  // Anything else: trust the SDK's own judgement when it gives one, else it is permanent.
  return e?.retryable === true ? retry(reason) : reject(reason);
}
