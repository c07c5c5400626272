/** What KubeConnection's credentials need: a token file read, and a shared fetch waited for by each call under its own deadline. */
import { readFileSync } from 'node:fs';
import { KubeConfigError } from './errors.ts';

/** untilAborted: `work`'s outcome, or a rejection when `signal` aborts first (the work goes on for whoever else waits). */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const stop = () => reject(signal.reason as Error);
    signal.addEventListener('abort', stop, { once: true });
    work.then(
      (v) => (signal.removeEventListener('abort', stop), resolve(v)),
      (e: unknown) => (signal.removeEventListener('abort', stop), reject(e as Error)),
    );
  });
}

export function readToken(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new KubeConfigError(`cannot read the token file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}
