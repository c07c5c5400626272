/**
 * CountingProxy: an HTTP relay on 127.0.0.1 in front of Azure Blob Storage (Azurite) that counts
 * every request by the Blob operation it is (List Blobs, Get Blob, Put Blob, Delete Blob, ...) and
 * every conditional write the service refused (409, 412), and the bytes it answered: what a
 * fleet budget costs its store. A test may also have the next requests of an operation meet a
 * fault instead of the service (`fail`): an answer of a status with Azure's error code, as a busy
 * or failing account answers, the connection reset, or no answer; the request is counted all the same.
 */
import { Agent, createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** blobOperation: the Blob Storage operation of a request, from its method and query. */
export function blobOperation(method: string, url: URL): string {
  const comp = url.searchParams.get('comp');
  const container = url.searchParams.get('restype') === 'container';
  if (container && comp === 'list') return 'list';
  if (container) return `${method.toLowerCase()} container`;
  if (comp !== null) return `${method.toLowerCase()} ${comp}`;
  return { GET: 'read', PUT: 'write', DELETE: 'delete', HEAD: 'properties' }[method] ?? method.toLowerCase();
}

/** Fault: what one request meets instead of the service: an answer of `status` with Azure's error `code`, its connection reset, or no answer at all (until the proxy stops). */
export type Fault = { readonly status: number; readonly code: string } | 'reset' | 'hang';

export class CountingProxy {
  readonly #target: URL;
  readonly #server: Server;
  readonly #agent = new Agent({ keepAlive: true, maxSockets: 64 });
  /** Requests by operation since the last reset. */
  counts = new Map<string, number>();
  /** Conditional writes refused (409, 412) since the last reset. */
  lost = 0;
  /** The same, by the kind of record the blob's name says (slot, member, or its name). */
  lostBy = new Map<string, number>();
  /** Bytes of the answers' bodies since the last reset. */
  bytes = 0;
  /** The same, by operation. */
  bytesBy = new Map<string, number>();
  /** The bytes answered to listings, by the kind of record listed (the prefix's: slot, member, queue; `all` for none). */
  listBytesBy = new Map<string, number>();
  /** Requests to each blob (its name under the container; a listing: `list`; the container's own: `container`) in each second of the proxy's clock since the last reset. */
  perSecond = new Map<string, Map<number, number>>();
  readonly #faults = new Map<string, Fault[]>();

  constructor(targetUrl: string) {
    this.#target = new URL(targetUrl);
    this.#server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', this.#target);
      const op = blobOperation(req.method ?? 'GET', url);
      this.counts.set(op, (this.counts.get(op) ?? 0) + 1);
      const blob = op === 'list' ? 'list' : op.endsWith(' container') ? 'container' : url.pathname.split('/').slice(3).join('/');
      const listed = listedKind(url.searchParams.get('prefix') || 'all');
      const second = Math.floor(Date.now() / 1000);
      const seconds = this.perSecond.get(blob) ?? new Map<number, number>();
      this.perSecond.set(blob, seconds.set(second, (seconds.get(second) ?? 0) + 1));
      const fault = this.#faults.get(op)?.shift();
      if (fault === 'reset') return void req.socket.resetAndDestroy();
      if (fault === 'hang') return void req.resume();
      if (fault !== undefined) {
        req.resume();
        // 204 and 304 carry no body, and so say a length of 0, as the service does
        const bodiless = fault.status === 204 || fault.status === 304;
        const body = bodiless
          ? ''
          : `<?xml version="1.0" encoding="utf-8"?><Error><Code>${fault.code}</Code><Message>a fault of the test</Message></Error>`;
        res.writeHead(fault.status, {
          'x-ms-error-code': fault.code,
          'content-type': 'application/xml',
          'content-length': Buffer.byteLength(body),
        });
        return void res.end(body);
      }
      const upstream = request(
        url,
        { method: req.method, headers: { ...req.headers, host: this.#target.host }, agent: this.#agent },
        (answer: IncomingMessage) => {
          if ((answer.statusCode === 409 || answer.statusCode === 412) && (op === 'write' || op === 'delete')) {
            this.lost++;
            const kind = recordKind(url.pathname);
            this.lostBy.set(kind, (this.lostBy.get(kind) ?? 0) + 1);
          }
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.on('data', (chunk: Buffer) => {
            this.bytes += chunk.length;
            this.bytesBy.set(op, (this.bytesBy.get(op) ?? 0) + chunk.length);
            if (op === 'list') this.listBytesBy.set(listed, (this.listBytesBy.get(listed) ?? 0) + chunk.length);
          });
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  /** url: the proxy's address in place of the target's. */
  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** fail: the next requests of operation `op` (one a fault, in order) meet these faults instead of the service. */
  fail(op: string, ...faults: Fault[]): void {
    this.#faults.set(op, [...(this.#faults.get(op) ?? []), ...faults]);
  }

  /** take: the counts since the last take, and a fresh start. */
  take(): {
    counts: Record<string, number>;
    lost: number;
    lostBy: Record<string, number>;
    bytes: number;
    bytesBy: Record<string, number>;
    listBytesBy: Record<string, number>;
    busiestSecond: Record<string, number>;
  } {
    const out = {
      ...{ counts: Object.fromEntries(this.counts), lost: this.lost, lostBy: Object.fromEntries(this.lostBy) },
      ...{ bytes: this.bytes, bytesBy: Object.fromEntries(this.bytesBy), listBytesBy: Object.fromEntries(this.listBytesBy) },
      // each blob's most requests in one second
      busiestSecond: Object.fromEntries([...this.perSecond].map(([blob, seconds]) => [blob, Math.max(...seconds.values())])),
    };
    this.counts = new Map();
    this.lost = 0;
    this.lostBy = new Map();
    this.bytes = 0;
    this.bytesBy = new Map();
    this.listBytesBy = new Map();
    this.perSecond = new Map();
    return out;
  }

  async stop(): Promise<void> {
    this.#agent.destroy();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/**
 * recordKind: what a fleet store's blob holds, from its name (`…/slot-0.json`: slot; `…/slot-wave-…`:
 * wave, a collision notice; `…/slot-x-…`: overflow; `…/member-…`: member; `…/queue-…` and
 * `…/asking-…`: queue; else its name, as `slot-pause`). A slot is only `slot-<n>`: the notices
 * share its prefix (they are listed with the slots) but their lost writes are no hand-off's.
 */
export function recordKind(path: string): string {
  const name = path.slice(path.lastIndexOf('/') + 1).replace(/\.json$/, '');
  const kinds: [RegExp, string][] = [
    [/^slot-[0-9]+$/, 'slot'],
    [/^slot-wave-/, 'wave'],
    [/^slot-x-/, 'overflow'],
    [/^member-/, 'member'],
    [/^(queue|asking)-/, 'queue'],
  ];
  return kinds.find(([pattern]) => pattern.test(name))?.[1] ?? name;
}

/** listedKind: what a listing asks for, from its prefix (`slot-`: the slots, with the notices listed among them). */
const listedKind = (prefix: string): string => (prefix.slice(prefix.lastIndexOf('/') + 1) === 'slot-' ? 'slot' : recordKind(prefix));
