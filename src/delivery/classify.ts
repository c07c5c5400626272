/**
 * Outcome classification shared by the HTTP-based sinks: one table, so every sink retries the
 * same things (STYLE.md: conservative, explicit retry). 2xx delivered; 408, 429 and 5xx
 * retried (with Retry-After); 410 rejected (the endpoint is gone); any other status rejected.
 * Network and TLS failures are retried: the peer may come back, and the dispatcher's
 * maxAttempts and maxAgeMs bound how long.
 */
import { parseRetryAfter } from '../core/backoff.ts';
import { delivered, reject, retry, type Outcome } from '../../sinks/types.ts';

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

/** classifyNetworkError turns a failed request (no HTTP answer) into a retry with its code. */
export function classifyNetworkError(err: unknown): Outcome {
  const e = err as { code?: string; cause?: { code?: string }; name?: string; message?: string };
  const code = e?.code ?? e?.cause?.code ?? e?.name ?? 'ERROR';
  const kind = TLS_CODES.has(code) || TLS_CODES.has(e?.cause?.code ?? '') ? 'TLS' : 'network';
  return retry(`${kind} error ${code}${e?.message ? `: ${e.message}` : ''}`);
}

/** printable makes a peer's response text safe to log: no control characters, bounded length. */
export function printable(text: string, max = 300): string {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f\ufffd]+/g, ' ').trim();
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}
