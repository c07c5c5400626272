/**
 * Watches for the Kubernetes API stand-in, written from the API reference
 * (https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes):
 *
 *   GET <collection>?watch=1&resourceVersion=RV&labelSelector=…&allowWatchBookmarks=true&timeoutSeconds=N
 *
 * answers 200 with a stream of JSON watch events, one a line, `{"type": "ADDED" | "MODIFIED" |
 * "DELETED" | "BOOKMARK" | "ERROR", "object": …}`: every change after RV to an object the selector
 * takes, then each change as it is made, until `timeoutSeconds` (the server's own limit
 * otherwise) or the client goes. A BOOKMARK carries only the resourceVersion the watch has reached
 * (sent every `bookmarkMs` when asked for). An RV older than the changes the server keeps is not
 * refused with a status: the stream's first and only event is an ERROR whose object is a Status
 * with code 410 (Expired, "too old resource version"), as the API server does; the client lists
 * again. Without an RV, the stream starts with an ADDED event for every object there now.
 */
import type { ServerResponse } from 'node:http';
import type { Json } from './kube-objects.ts';

export type WatchType = 'ADDED' | 'MODIFIED' | 'DELETED';

interface Change<T> {
  readonly rv: number;
  readonly type: WatchType;
  readonly object: T;
}

interface Watcher<T> {
  readonly matches: (o: T) => boolean;
  readonly send: (c: Change<T>) => void;
  readonly end: () => void;
}

export class WatchLog<T> {
  /** How many changes are kept for a watch that starts from an older RV; older RVs get 410. */
  keep = 1000;
  /** How many of the next watches get 410 Expired whatever their RV (a test's compaction). */
  expireNext = 0;
  /** How often a watch that asked for bookmarks gets one. */
  bookmarkMs = 5000;
  /** The server's own limit of a watch without timeoutSeconds (the API server's is 30 to 60 minutes). */
  maxSeconds = 1800;
  readonly #changes: Change<T>[] = [];
  readonly #watchers = new Set<Watcher<T>>();
  /** The RV of the oldest change no longer kept: a watch from below it has lost changes. */
  #compacted = 0;
  /** The RV of the latest change recorded. */
  #last = 0;
  readonly #bookmark: (rv: string) => Json;
  readonly #rvOf: (o: T) => string;

  constructor(bookmark: (rv: string) => Json, rvOf: (o: T) => string) {
    this.#bookmark = bookmark;
    this.#rvOf = rvOf;
  }

  /** open: how many watches are open now. */
  get open(): number {
    return this.#watchers.size;
  }

  /** endAll ends every open watch, as the API server does at its timeout or when it restarts (each client starts its next one). */
  endAll(): void {
    for (const w of this.#watchers) w.end();
  }

  /** record a change (the object as it is after it; for DELETED, as it was, at the RV of the delete). */
  record(type: WatchType, object: T): void {
    const change = { rv: Number(this.#rvOf(object)), type, object: structuredClone(object) };
    this.#last = Math.max(this.#last, change.rv);
    this.#changes.push(change);
    while (this.#changes.length > this.keep) this.#compacted = this.#changes.shift()!.rv;
    for (const w of this.#watchers) if (w.matches(change.object)) w.send(change);
  }

  /** serve answers a watch request: `current` is every object there now (for a watch without an RV), `full` an object as the API gives it. */
  serve(res: ServerResponse, url: URL, current: () => T[], matches: (o: T) => boolean, full: (o: T) => Json): void {
    res.setHeader('content-type', 'application/json');
    res.writeHead(200);
    const line = (type: string, object: Json) => res.write(`${JSON.stringify({ type, object })}\n`);
    const asked = url.searchParams.get('resourceVersion');
    const from = asked === null || asked === '' || asked === '0' ? null : Number(asked);
    if (this.expireNext > 0 || (from !== null && (!Number.isFinite(from) || from < this.#compacted))) {
      if (this.expireNext > 0) this.expireNext--;
      line('ERROR', {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `too old resource version: ${asked ?? ''} (${this.#last})`,
        reason: 'Expired',
        code: 410,
      });
      res.end();
      return;
    }
    if (from === null) for (const o of current().filter(matches)) line('ADDED', full(o));
    else for (const c of this.#changes) if (c.rv > from && matches(c.object)) line(c.type, full(c.object));
    // ended (its time, endAll): no bookmark is written after the end, before the connection closes
    const finish = () => (this.#watchers.delete(watcher), clearInterval(bookmarks), clearTimeout(end), res.end());
    const watcher: Watcher<T> = { matches, send: (c) => line(c.type, full(c.object)), end: () => finish() };
    this.#watchers.add(watcher);
    const timeout = Number(url.searchParams.get('timeoutSeconds') ?? '');
    const seconds = Number.isFinite(timeout) && timeout > 0 ? Math.min(timeout, this.maxSeconds) : this.maxSeconds;
    const bookmarks = /^(true|1)$/.test(url.searchParams.get('allowWatchBookmarks') ?? '')
      ? setInterval(() => line('BOOKMARK', this.#bookmark(String(Math.max(this.#last, from ?? 0)))), this.bookmarkMs)
      : undefined;
    const end = setTimeout(() => finish(), seconds * 1000);
    res.on('close', () => {
      this.#watchers.delete(watcher);
      clearTimeout(end);
      clearInterval(bookmarks);
    });
  }
}
