/**
 * watchOnce: one Kubernetes watch of a collection (GET <collection>?watch=1&resourceVersion=RV),
 * its events handed to `on` one at a time as they arrive, until the server ends the stream (at
 * `timeoutSeconds`, which the client's own deadline outlasts by GRACE_MS) or the caller's signal
 * aborts. As the API reference says
 * (https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes):
 *
 * - one JSON event a line: `{"type": "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR", "object": …}`,
 *   each read against a schema, each line bounded at MAX_EVENT_BYTES before it is decoded;
 * - bookmarks are asked for (`allowWatchBookmarks`): a BOOKMARK carries only the resourceVersion
 *   the watch has reached, so the next watch starts from there;
 * - an ERROR event is the server's Status: it rejects with a KubeApiError of its code (410
 *   Expired: the RV is older than the changes the server keeps, and only a new list goes on).
 */
import { StringDecoder } from 'node:string_decoder';
import { z } from 'zod';
import type { KubeConnection } from './client.ts';
import { KubeApiError, KubeTooLargeError, KubeUnreadableError } from './errors.ts';

/** How long past the watch's timeoutSeconds the client waits for the server to end it. */
const GRACE_MS = 30_000;
/** The most one event's line may hold: an object's largest (the API server takes no request body over 3 MiB). */
const MAX_EVENT_BYTES = 3 * 2 ** 20;

const WatchEvent = z.object({
  type: z.enum(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']),
  object: z.record(z.string(), z.unknown()),
});
export type WatchEvent = z.infer<typeof WatchEvent>;

const StatusObject = z.object({ code: z.number().int().optional(), message: z.string().optional() });

export interface KubeWatchRequest {
  /** The collection's path, e.g. /apis/coordination.k8s.io/v1/namespaces/NS/leases. */
  readonly path: string;
  /** Selectors (labelSelector, fieldSelector). */
  readonly query?: Readonly<Record<string, string | undefined>>;
  /** Where the watch starts: the resourceVersion of a list, or of the last event seen. */
  readonly resourceVersion: string;
  /** When the server ends the watch (the caller then starts the next one). */
  readonly timeoutSeconds: number;
  readonly signal?: AbortSignal | undefined;
}

export async function watchOnce(kube: KubeConnection, r: KubeWatchRequest, on: (event: WatchEvent) => void): Promise<void> {
  const what = `GET ${r.path} (watch)`;
  const query = {
    ...r.query,
    watch: '1',
    resourceVersion: r.resourceVersion,
    allowWatchBookmarks: 'true',
    timeoutSeconds: String(r.timeoutSeconds),
  };
  const body = await kube.stream({ method: 'GET', path: r.path, query, signal: r.signal }, r.timeoutSeconds * 1000 + GRACE_MS);
  const decoder = new StringDecoder('utf8');
  let pending = '';
  const line = (text: string): void => {
    if (text.trim() === '') return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new KubeUnreadableError(`${what}: an event is not JSON`);
    }
    const event = WatchEvent.safeParse(parsed);
    if (!event.success) throw new KubeUnreadableError(`${what}: an event is not a watch event`);
    if (event.data.type === 'ERROR') {
      const status = StatusObject.safeParse(event.data.object);
      throw new KubeApiError(what, status.success ? (status.data.code ?? 500) : 500, JSON.stringify(event.data.object));
    }
    on(event.data);
  };
  try {
    for await (const chunk of body) {
      pending += decoder.write(chunk);
      for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
        line(pending.slice(0, nl));
        pending = pending.slice(nl + 1);
      }
      // counted in characters (each one byte or more): the line is over its bound before its bytes are
      if (pending.length > MAX_EVENT_BYTES) throw new KubeTooLargeError(what, MAX_EVENT_BYTES);
    }
    line(pending + decoder.end());
  } finally {
    body.destroy();
  }
}
