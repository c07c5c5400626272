/**
 * deadline makes a per-operation AbortSignal that aborts when `parent` aborts or `ms` pass,
 * and detaches from `parent` on `release()`: long-lived parents (the process's shutdown
 * signal) must not collect one listener per request.
 */
export interface Deadline {
  readonly signal: AbortSignal;
  /** True when the time ran out (as opposed to the parent aborting). */
  readonly timedOut: boolean;
  /** Resolves when the signal aborts, for racing against work that ignores signals. */
  readonly aborted: Promise<void>;
  release(): void;
}

export function deadline(ms: number, parent?: AbortSignal): Deadline {
  const controller = new AbortController();
  let timedOut = false;
  let resolveAborted!: () => void;
  const aborted = new Promise<void>((resolve) => (resolveAborted = resolve));
  controller.signal.addEventListener('abort', () => resolveAborted(), { once: true });
  const onParent = () => controller.abort(parent?.reason);
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error(`timed out after ${ms} ms`));
  }, ms);
  if (parent?.aborted) onParent();
  else parent?.addEventListener('abort', onParent, { once: true });
  return {
    signal: controller.signal,
    get timedOut() {
      return timedOut;
    },
    aborted,
    release() {
      clearTimeout(timer);
      parent?.removeEventListener('abort', onParent);
    },
  };
}
