/**
 * The errors of the Kubernetes client, each with its code in the catalogue (lib/errors.ts): a
 * kubeconfig or an ExecCredential it cannot use, an exec plugin that failed, an answer over its
 * bound or not JSON, an answer outside 2xx.
 */
import { BridgeError } from '../lib/errors.ts';

/** A kubeconfig that cannot be used, or an ExecCredential that cannot be read: trying again cannot help. */
export class KubeConfigError extends BridgeError<'KUBE_CLIENT_CONFIG'> {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('KUBE_CLIENT_CONFIG', message, options);
  }
}

/** The exec credential plugin could not be run, failed or hung: a later run may succeed. */
export class KubeExecError extends BridgeError<'KUBE_CLIENT_EXEC'> {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('KUBE_CLIENT_EXEC', message, options);
  }
}

/** An answer larger than the client keeps for its kind of call; it was not decoded. */
export class KubeTooLargeError extends BridgeError<'KUBE_CLIENT_TOO_LARGE'> {
  constructor(what: string, maxBytes: number) {
    super('KUBE_CLIENT_TOO_LARGE', `${what}: the answer is larger than ${maxBytes / 2 ** 20} MiB, the most kept for this call`);
  }
}

/** A 2xx answer that is not JSON, or not the list asked for (something other than the API server answered?). */
export class KubeUnreadableError extends BridgeError<'KUBE_CLIENT_UNREADABLE'> {
  constructor(message: string) {
    super('KUBE_CLIENT_UNREADABLE', message);
  }
}

/** An API answer outside 2xx: `status` is the HTTP status, `body` the Status the server sent. */
export class KubeApiError extends BridgeError<'KUBE_CLIENT_STATUS'> {
  readonly status: number;
  readonly body: string;
  constructor(what: string, status: number, body: string) {
    super('KUBE_CLIENT_STATUS', `${what}: HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}
