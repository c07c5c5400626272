/**
 * KubeFailure and the reading of what the Kubernetes client threw: a status the API answered,
 * a refusal of the client's own configuration, or a server that could not be reached; each says
 * whether a later attempt may succeed.
 */
import { BridgeError, type Outcome, reject, retry, type SinkContext } from '../../src/api.ts';
import type { KubeCode } from './codes.ts';

/** KubeFailure: a failed API call, with whether a later attempt may succeed. */
export class KubeFailure extends BridgeError<KubeCode> {
  readonly retry: boolean;
  readonly status: number | null;
  /** What the API server said (its Status message and causes), when it answered. */
  readonly said: string | null;
  constructor(code: KubeCode, message: string, retry: boolean, status: number | null = null, said: string | null = null) {
    super(code, message);
    this.retry = retry;
    this.status = status;
    this.said = said;
  }
}

/** toFailure turns what the client threw into a KubeFailure that names the call and what the API said. */
export function toFailure(what: string, err: unknown): KubeFailure {
  if (err instanceof KubeFailure) return err;
  const e = err as { status?: unknown; body?: unknown; message?: string; cause?: { code?: string; message?: string } };
  if (err instanceof Error && err.name === 'KubeApiError' && typeof e.status === 'number') {
    const status = e.status;
    const message = apiMessage(e.body);
    const said = message ?? `HTTP ${status}`;
    if (status === 403) return new KubeFailure('KUBE_FORBIDDEN', `${what}: forbidden by RBAC (403): ${said}`, false, status, message);
    if (status === 401)
      return new KubeFailure('KUBE_UNAUTHORIZED', `${what}: the API server refused the credentials (401)`, true, status, message);
    if (status === 404) return new KubeFailure('KUBE_NOT_FOUND', `${what}: not found (404): ${said}`, false, status, message);
    const transient = status === 409 || status === 429 || status >= 500;
    return new KubeFailure('KUBE_API_STATUS', `${what}: HTTP ${status}: ${said}`, transient, status, message);
  }
  // a kubeconfig the client refuses before any request: trying again cannot help
  if (/HTTP protocol is not allowed when skipTLSVerify/.test(e.message ?? ''))
    return new KubeFailure(
      'KUBE_CONFIG_INVALID',
      `${what}: the kubeconfig's server is http:// without insecure-skip-tls-verify; use the API server's https:// address (or set insecure-skip-tls-verify: true on a test cluster)`,
      false,
    );
  if (err instanceof Error && err.name === 'KubeConfigError')
    return new KubeFailure('KUBE_CONFIG_INVALID', `${what}: ${err.message}`, false);
  // the plugin may answer next time (a token endpoint back, a hung run killed)
  if (err instanceof Error && err.name === 'KubeExecError') return new KubeFailure('KUBE_EXEC_FAILED', `${what}: ${err.message}`, true);
  if (err instanceof Error && (err.name === 'KubeTooLargeError' || err.name === 'KubeUnreadableError'))
    return new KubeFailure('KUBE_API_UNREADABLE', err.message, true);
  const cause = e.cause?.code ?? e.cause?.message ?? e.message ?? String(err);
  return new KubeFailure('KUBE_API_UNREACHABLE', `${what}: cannot reach the Kubernetes API server (${cause})`, true);
}

/** apiMessage: a Status body's message, with its causes' (a disruption budget's names the budget), or null. */
function apiMessage(body: unknown): string | null {
  if (typeof body === 'string') {
    try {
      return apiMessage(JSON.parse(body));
    } catch {
      return body.slice(0, 200) || null;
    }
  }
  const s = body as { message?: unknown; details?: { causes?: { message?: unknown }[] } } | null;
  if (s === null || typeof s !== 'object' || typeof s.message !== 'string') return null;
  const causes = (s.details?.causes ?? []).map((c) => c.message).filter((m): m is string => typeof m === 'string' && m !== '');
  return causes.length === 0 ? s.message : `${s.message} (${causes.join('; ')})`;
}

/** describeFailure: the code, the words and whether to try again, for any error of a preparation. */
export function describeFailure(err: unknown): { code: string; reason: string; retry: boolean } {
  if (err instanceof KubeFailure) return { code: err.code, reason: err.message, retry: err.retry };
  const f = toFailure('kubernetes', err);
  return { code: f.code, reason: f.message, retry: f.retry };
}

/** outcomeOf: the outcome of a preparation that threw, logged: tried again when it may help, else rejected. */
export function outcomeOf(err: unknown, ctx: SinkContext): Outcome {
  const f = describeFailure(err);
  ctx.logger.warn({ code: f.code, reason: f.reason }, 'kubernetes preparation failed');
  return f.retry ? retry(`${f.code}: ${f.reason}`) : reject(`${f.code}: ${f.reason}`);
}
