/**
 * withDeadlines: the store with a deadline on the client for every call. The call's request is
 * aborted when the deadline passes (the signal each store hands its client), and the call fails
 * then in any case (a client that ignores the signal is not waited for): a store that accepts
 * connections and never answers fails the operation within `ms`, and the budget fails closed and
 * says so, instead of waiting for ever.
 */
import { withDeadline } from '../../../lib/time.ts';
import { FleetStoreError, type FleetStore } from './port.ts';

export function withDeadlines(store: FleetStore, ms: number): FleetStore {
  const late = (operation: string) => new FleetStoreError(operation, `no answer within ${ms / 1000} s`);
  async function call<T>(operation: string, outer: AbortSignal | undefined, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const deadline = new AbortController();
    const signal = outer === undefined ? deadline.signal : AbortSignal.any([outer, deadline.signal]);
    try {
      return await withDeadline(run(signal), ms, () => {
        deadline.abort(late(operation));
        return late(operation);
      });
    } catch (err) {
      // the client's own error for the abort (AbortError) says less than the deadline did
      if (deadline.signal.aborted) throw late(operation);
      throw err;
    }
  }
  return {
    where: store.where,
    get: (name, signal) => call(`read ${name}`, signal, (s) => store.get(name, s)),
    put: (name, value, version, signal) => call(`write ${name}`, signal, (s) => store.put(name, value, version, s)),
    remove: (name, version, signal) => call(`delete ${name}`, signal, (s) => store.remove(name, version, s)),
    list: (prefix, signal) => call(`list ${prefix}*`, signal, (s) => store.list(prefix, s)),
    head: (prefix, limit, signal) => call(`list ${prefix}* (first ${limit})`, signal, (s) => store.head(prefix, limit, s)),
    // a watch lasts while it is wanted: each of its requests has the Kubernetes client's deadline (lease-watch.ts)
    ...(store.watch === undefined ? {} : { watch: store.watch.bind(store) }),
    close: () => store.close(),
  };
}
