/**
 * Answers the Kubernetes API stand-in (kube-apiserver.ts) gives when a test asks for them, as the
 * API server gives them (k8s.io/apimachinery/pkg/api/errors, the apiserver's filters;
 * https://kubernetes.io/docs/reference/using-api/api-concepts/): the next request to a path is
 * answered with a fault instead of the object. After authentication, as the API server's handler
 * chain runs (a 401 comes first).
 *
 * - `refusal(code)`: a Status body (`kind: Status`, `status: Failure`, `reason`, `message`,
 *   `details`, `code`) with the reason and words the API server gives for that code; a Status
 *   with `details.retryAfterSeconds` also carries a Retry-After header (429 TooManyRequests, 504
 *   Timeout, 503 from a server not ready), as the apiserver writes one.
 * - `throttled(seconds)`: what API Priority and Fairness (and max-in-flight) answers when a
 *   priority level's queues are full: 429 with Retry-After and a text/plain body, not a Status.
 * - `raw(code, contentType, body)`: any other answer (a proxy's page, a broken server); a code under 100,
 *   which no HTTP server library writes, is written on the connection itself, then closed.
 * - `hang`: the request is read and never answered (the connection stays open until the stand-in closes).
 * - `later(answer)`: the request is held until the test gives the fault to answer it with.
 */
import type { ServerResponse } from 'node:http';
import type { Json } from './kube-objects.ts';

export type KubeFault =
  | { readonly kind: 'status'; readonly code: number; readonly reason: string; readonly message: string; readonly details?: Json }
  | { readonly kind: 'throttled'; readonly retryAfterSeconds: number }
  | { readonly kind: 'raw'; readonly code: number; readonly contentType: string; readonly body: string }
  | { readonly kind: 'hang' }
  | { readonly kind: 'later'; readonly answer: Promise<KubeFault> };

/** The reason and words of the API server's Status for each code (StatusReason, apimachinery's errors.New* helpers). */
const REFUSALS: Record<number, { reason: string; message: string; details?: Json }> = {
  400: { reason: 'BadRequest', message: 'the server rejected our request for an unknown reason' },
  401: { reason: 'Unauthorized', message: 'Unauthorized' },
  403: {
    reason: 'Forbidden',
    message:
      'nodes "n0" is forbidden: User "system:serviceaccount:kube-system:se-bridge" cannot get resource "nodes" in API group "" at the cluster scope',
    details: { name: 'n0', kind: 'nodes' },
  },
  404: { reason: 'NotFound', message: 'the server could not find the requested resource' },
  405: { reason: 'MethodNotAllowed', message: 'the server does not allow this method on the requested resource' },
  409: {
    reason: 'Conflict',
    message:
      'Operation cannot be fulfilled on nodes "n0": the object has been modified; please apply your changes to the latest version and try again',
    details: { name: 'n0', kind: 'nodes' },
  },
  410: { reason: 'Expired', message: 'too old resource version: 100 (200)' },
  422: {
    reason: 'Invalid',
    message: 'Node "n0" is invalid: spec.taints[0].effect: Unsupported value: "Sometimes"',
    details: {
      name: 'n0',
      kind: 'Node',
      causes: [{ reason: 'FieldValueNotSupported', message: 'Unsupported value: "Sometimes"', field: 'spec.taints[0].effect' }],
    },
  },
  429: { reason: 'TooManyRequests', message: 'storage is (re)initializing', details: { retryAfterSeconds: 1 } },
  500: {
    reason: 'InternalError',
    message: 'Internal error occurred: etcdserver: request timed out',
    details: { causes: [{ message: 'etcdserver: request timed out' }] },
  },
  503: { reason: 'ServiceUnavailable', message: 'the server is currently unable to handle the request' },
  504: {
    reason: 'Timeout',
    message: 'Timeout: request did not complete within the allotted timeout',
    details: { retryAfterSeconds: 1 },
  },
};

/** refusal: the Status the API server answers with `code` (one of REFUSALS'). */
export function refusal(code: number): KubeFault {
  const r = REFUSALS[code];
  if (r === undefined) throw new Error(`no refusal written for ${code}`);
  return { kind: 'status', code, ...r };
}

export const throttled = (retryAfterSeconds: number): KubeFault => ({ kind: 'throttled', retryAfterSeconds });
export const raw = (code: number, contentType: string, body: string): KubeFault => ({ kind: 'raw', code, contentType, body });
export const hang: KubeFault = { kind: 'hang' };
export const later = (answer: Promise<KubeFault>): KubeFault => ({ kind: 'later', answer });

export class KubeFaults {
  readonly #queue: { path: string; fault: KubeFault }[] = [];

  /** next: the next request to `path` (its path without the query) gets `fault`; several wait in order. */
  next(path: string, ...faults: KubeFault[]): void {
    for (const fault of faults) this.#queue.push({ path, fault });
  }

  /** answer: the fault waiting for `path`, answered on `res`; false when none waits. */
  answer(path: string, res: ServerResponse): boolean {
    const at = this.#queue.findIndex((q) => q.path === path);
    if (at === -1) return false;
    write(this.#queue.splice(at, 1)[0]!.fault, res);
    return true;
  }
}

function write(fault: KubeFault, res: ServerResponse): void {
  if (fault.kind === 'hang') return;
  if (fault.kind === 'later') return void fault.answer.then((f) => write(f, res));
  if (fault.kind === 'raw' && fault.code < 100) {
    const head = `HTTP/1.1 ${String(fault.code).padStart(3, '0')} Odd\r\ncontent-type: ${fault.contentType}\r\n`;
    res.socket?.end(`${head}content-length: ${Buffer.byteLength(fault.body)}\r\nconnection: close\r\n\r\n${fault.body}`);
  } else if (fault.kind === 'raw') {
    res.writeHead(fault.code, { 'content-type': fault.contentType, 'content-length': Buffer.byteLength(fault.body) });
    res.end(fault.body);
  } else if (fault.kind === 'throttled') {
    // the apiserver's tooManyRequests: http.Error, so text/plain and a newline
    const text = 'Too many requests, please try again later.\n';
    res.writeHead(429, {
      'content-type': 'text/plain; charset=utf-8',
      'x-content-type-options': 'nosniff',
      'retry-after': String(fault.retryAfterSeconds),
      'content-length': Buffer.byteLength(text),
    });
    res.end(text);
  } else {
    const body = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: fault.message,
      reason: fault.reason,
      ...(fault.details ? { details: fault.details } : {}),
      code: fault.code,
    };
    const retry = (fault.details as { retryAfterSeconds?: number } | undefined)?.retryAfterSeconds;
    const text = JSON.stringify(body);
    res.writeHead(fault.code, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      ...(retry === undefined ? {} : { 'retry-after': String(retry) }),
    });
    res.end(text);
  }
}
