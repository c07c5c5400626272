/**
 * Lists in chunks, for the Kubernetes API stand-in, as the API server serves them
 * (https://kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks):
 *
 * - items in key order (namespace, then name), at most `limit` of them when `limit` is given;
 * - `metadata.continue`: an opaque token for the rest (base64 of the list's resourceVersion and
 *   the last key, as the API server's is), `metadata.remainingItemCount` when the list had no
 *   selector; a token that cannot be read is a 400;
 * - an expired token (the API server's snapshot compacted away; here, when a test says so with
 *   `expireContinues`) is a 410 Gone, reason Expired, with the API server's words.
 *
 * Unlike the API server, a page after the first shows the objects as they are now, not as they
 * were at the first page's resourceVersion.
 */
import type { ServerResponse } from 'node:http';
import { json, status } from './kube-objects.ts';

const EXPIRED =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';

export class ListChunks {
  /** How many of the next requests that carry a continue token are answered 410 Gone (Expired). */
  expireContinues = 0;
  /** A broken server: each page after the first hands back the continue token it was given. */
  stuck = false;
  /** A broken server: every page says there is more, under a new continue token each time. */
  endless = false;
  #pages = 0;

  /** answer serves one page of `items` (keyed by `keyOf`) as a `kind` of `apiVersion`. */
  answer<T>(
    res: ServerResponse,
    url: URL,
    list: { kind: string; apiVersion: string; rv: string; items: T[]; keyOf: (item: T) => string },
  ): void {
    const limit = Number(url.searchParams.get('limit') ?? '0');
    const token = url.searchParams.get('continue');
    let after = '';
    if (token !== null && token !== '') {
      const read = readToken(token);
      if (read === null) return status(res, 400, 'BadRequest', `continue key is not valid: ${token}`);
      if (this.expireContinues > 0) {
        this.expireContinues--;
        return status(res, 410, 'Expired', EXPIRED);
      }
      after = read;
    }
    const sorted = list.items.map((item) => ({ key: list.keyOf(item), item })).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const rest = sorted.filter((e) => e.key > after);
    const page = Number.isInteger(limit) && limit > 0 ? rest.slice(0, limit) : rest;
    const more = rest.length - page.length;
    const selected = url.searchParams.has('labelSelector') || url.searchParams.has('fieldSelector');
    json(res, 200, {
      kind: list.kind,
      apiVersion: list.apiVersion,
      metadata: {
        resourceVersion: list.rv,
        ...(this.endless ? { continue: tokenOf(list.rv, `${after}\u0000${this.#pages++}`) } : {}),
        ...(more > 0 && !this.endless
          ? {
              continue: this.stuck && token ? token : tokenOf(list.rv, page.at(-1)!.key),
              ...(selected ? {} : { remainingItemCount: more }),
            }
          : {}),
      },
      items: page.map((e) => e.item),
    });
  }
}

function tokenOf(rv: string, key: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: Number(rv), start: `${key}\u0000` })).toString('base64');
}

/** readToken: the last key a token says was served, or null when it is not one of ours. */
function readToken(token: string): string | null {
  try {
    const t = JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as { v?: unknown; start?: unknown };
    return t.v === 'meta.k8s.io/v1' && typeof t.start === 'string' ? (t.start.endsWith('\u0000') ? t.start.slice(0, -1) : t.start) : null;
  } catch {
    return null;
  }
}
