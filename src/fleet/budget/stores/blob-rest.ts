/**
 * BlobRest: the six Blob service operations the fleet's Blob store makes (Put Blob, Get Blob,
 * Get Blob Properties, Delete Blob, List Blobs, Create Container), as the REST reference writes
 * them, on the project's HTTP client. It replaces @azure/storage-blob, whose client and Azure
 * core cost about 16 MiB of private memory for these calls (docs/performance.md).
 * https://learn.microsoft.com/rest/api/storageservices/blob-service-rest-api
 *
 * Authorization is Shared Key (an account key, from a connection string), a SAS from a
 * connection string, or a bearer token (the VM's managed identity). Reads are tried twice (5 s
 * each, as the SDK was configured); a write is sent once, so a conditional write is never sent
 * twice. Every request ends with the caller's signal.
 */
import { createHmac } from 'node:crypto';
import { DEV_ACCOUNT, DEV_KEY } from '../../../azure/dev-storage.ts';
import { BridgeError } from '../../../lib/errors.ts';
import { HttpClient, type HttpHeaders } from '../../../lib/http-client.ts';

export const BLOB_API_VERSION = '2021-08-06';
const TRY_MS = 5000;
/** The most of one answer that is read: a page of List Blobs fits in it (blob.ts asks pages that small). */
export const MAX_ANSWER_BYTES = 32 * 2 ** 20;

/** An answer outside 2xx: the HTTP status and Azure's error code (x-ms-error-code). */
export class BlobError extends BridgeError<'BLOB_STATUS'> {
  readonly statusCode: number;
  readonly errorCode: string | undefined;
  constructor(what: string, statusCode: number, errorCode: string | undefined) {
    super('BLOB_STATUS', `${what}: Blob Storage answered ${statusCode}${errorCode ? ` ${errorCode}` : ''}`);
    this.statusCode = statusCode;
    this.errorCode = errorCode;
  }
}

/** An answer larger than the client reads: an error, never a part of it taken for the whole (a listing cut short). */
export class BlobAnswerTooLarge extends BridgeError<'BLOB_ANSWER_TOO_LARGE'> {
  constructor(what: string, limit: number) {
    super('BLOB_ANSWER_TOO_LARGE', `${what}: Blob Storage answered more than ${limit} bytes, and no part of it is used`);
  }
}

export type BlobAuth =
  | { readonly kind: 'sharedKey'; readonly account: string; readonly key: Buffer }
  | { readonly kind: 'sas'; readonly query: string }
  | { readonly kind: 'bearer'; readonly token: (signal: AbortSignal) => Promise<string> };

export interface BlobEndpoint {
  /** The account's URL: https://ACCOUNT.blob.core.windows.net, or Azurite's http://HOST:PORT/ACCOUNT. */
  readonly url: string;
  readonly auth: BlobAuth;
}

/** endpointOf: the account URL and key, SAS or development account of a connection string. */
export function endpointOf(connectionString: string): BlobEndpoint {
  const kv = new Map(
    connectionString
      .split(';')
      .filter((p) => p.includes('='))
      .map((p) => [p.slice(0, p.indexOf('=')).trim().toLowerCase(), p.slice(p.indexOf('=') + 1).trim()] as const),
  );
  if (kv.get('usedevelopmentstorage')?.toLowerCase() === 'true')
    return {
      url: `http://127.0.0.1:10000/${DEV_ACCOUNT}`,
      auth: { kind: 'sharedKey', account: DEV_ACCOUNT, key: Buffer.from(DEV_KEY, 'base64') },
    };
  const account = kv.get('accountname');
  const url =
    kv.get('blobendpoint') ??
    (account === undefined
      ? undefined
      : `${kv.get('defaultendpointsprotocol') ?? 'https'}://${account}.blob.${kv.get('endpointsuffix') ?? 'core.windows.net'}`);
  if (url === undefined) throw new Error('the connection string names neither BlobEndpoint nor AccountName');
  const sas = kv.get('sharedaccesssignature');
  if (sas !== undefined) return { url: url.replace(/\/+$/, ''), auth: { kind: 'sas', query: sas.replace(/^\?/, '') } };
  const key = kv.get('accountkey');
  if (account === undefined || key === undefined) throw new Error('the connection string has no AccountKey and no SharedAccessSignature');
  return { url: url.replace(/\/+$/, ''), auth: { kind: 'sharedKey', account, key: Buffer.from(key, 'base64') } };
}

export interface BlobAnswer {
  readonly status: number;
  readonly headers: HttpHeaders;
  readonly body: Buffer;
}

interface Call {
  readonly method: 'GET' | 'PUT' | 'DELETE' | 'HEAD';
  /** The path under the account, unescaped: `container` or `container/a/b.json`. */
  readonly path: string;
  readonly query?: Readonly<Record<string, string | undefined>>;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** Statuses that are an answer, not a failure (e.g. 404 for a read). */
  readonly accept?: readonly number[];
  readonly signal?: AbortSignal;
}

export class BlobRest {
  readonly url: string;
  /** The most of one answer that is read (MAX_ANSWER_BYTES unless a test says less); past it the call fails. */
  readonly answerBytes: number;
  readonly #auth: BlobAuth;
  readonly #http = new HttpClient({ proxy: 'none', maxSockets: 8, keepAliveMs: 30_000 });

  constructor(endpoint: BlobEndpoint, answerBytes: number = MAX_ANSWER_BYTES) {
    this.url = endpoint.url;
    this.#auth = endpoint.auth;
    this.answerBytes = answerBytes;
  }

  /** call: one operation; 2xx or an accepted status is the answer, anything else a BlobError. */
  async call(what: string, c: Call): Promise<BlobAnswer> {
    const tries = c.method === 'GET' || c.method === 'HEAD' ? 2 : 1;
    for (let attempt = 1; ; attempt++) {
      try {
        const a = await this.#send(c);
        if (a.overflow) throw new BlobAnswerTooLarge(what, this.answerBytes);
        if ((a.status >= 200 && a.status < 300) || c.accept?.includes(a.status)) return a;
        if (attempt < tries && a.status >= 500) continue;
        throw new BlobError(what, a.status, header(a.headers, 'x-ms-error-code'));
      } catch (err) {
        if (err instanceof BlobError || err instanceof BlobAnswerTooLarge || attempt >= tries || c.signal?.aborted) throw err;
      }
    }
  }

  close(): void {
    this.#http.close();
  }

  async #send(c: Call): Promise<BlobAnswer & { readonly overflow: boolean }> {
    const signal = AbortSignal.any([AbortSignal.timeout(TRY_MS), ...(c.signal === undefined ? [] : [c.signal])]);
    const path = c.path.split('/').map(encodeURIComponent).join('/');
    const query = Object.entries(c.query ?? {}).filter((e): e is [string, string] => e[1] !== undefined);
    const search = new URLSearchParams(query).toString();
    const sas = this.#auth.kind === 'sas' ? this.#auth.query : '';
    const url = `${this.url}/${path}${search || sas ? `?${[search, sas].filter(Boolean).join('&')}` : ''}`;
    const headers: Record<string, string> = {
      'x-ms-version': BLOB_API_VERSION,
      'x-ms-date': new Date().toUTCString(),
      ...c.headers,
    };
    if (this.#auth.kind === 'bearer') headers.authorization = `Bearer ${await this.#auth.token(signal)}`;
    if (this.#auth.kind === 'sharedKey') headers.authorization = sharedKey(this.#auth, c.method, new URL(url), headers, c.body);
    const res = await this.#http.request(url, {
      method: c.method,
      headers,
      ...(c.body === undefined ? {} : { body: c.body }),
      signal,
      maxBodyBytes: this.answerBytes,
      onOverflow: 'destroy',
    });
    return { status: res.status, headers: res.headers, body: res.bytes, overflow: res.overflow };
  }
}

export const header = (h: HttpHeaders, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

/**
 * sharedKey: the Authorization header of Shared Key, as the reference defines its string to sign.
 * https://learn.microsoft.com/rest/api/storageservices/authorize-with-shared-key
 */
function sharedKey(
  auth: Extract<BlobAuth, { kind: 'sharedKey' }>,
  method: string,
  url: URL,
  headers: Record<string, string>,
  body?: string,
): string {
  const h = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const length = body === undefined || body.length === 0 ? '' : String(Buffer.byteLength(body));
  const standard = [
    'content-encoding',
    'content-language',
    '',
    'content-md5',
    'content-type',
    'date',
    'if-modified-since',
    'if-match',
    'if-none-match',
    'if-unmodified-since',
    'range',
  ];
  const canonicalHeaders = Object.keys(h)
    .filter((k) => k.startsWith('x-ms-'))
    .sort()
    .map((k) => `${k}:${h[k]!.trim()}\n`)
    .join('');
  const params = new Map<string, string[]>();
  for (const [k, v] of url.searchParams) params.set(k.toLowerCase(), [...(params.get(k.toLowerCase()) ?? []), v]);
  const canonicalResource =
    `/${auth.account}${url.pathname}` +
    [...params.keys()]
      .sort()
      .map((k) => `\n${k}:${params.get(k)!.sort().join(',')}`)
      .join('');
  const toSign =
    [method, ...standard.map((k) => (k === '' ? length : (h[k] ?? '')))].join('\n') + '\n' + canonicalHeaders + canonicalResource;
  return `SharedKey ${auth.account}:${createHmac('sha256', auth.key).update(toSign, 'utf8').digest('base64')}`;
}

/** One blob of a List Blobs answer. */
export interface Listed {
  readonly name: string;
  readonly etag: string;
  readonly bytes: number;
  readonly metadata: Readonly<Record<string, string>>;
}

/** parseList reads a List Blobs answer (EnumerationResults): its blobs and the marker of the next page. */
export function parseList(xml: string): { blobs: Listed[]; next: string | undefined } {
  const blobs: Listed[] = [];
  for (const [, blob] of xml.matchAll(/<Blob>([\s\S]*?)<\/Blob>/g)) {
    const meta = /<Metadata>([\s\S]*?)<\/Metadata>/.exec(blob!)?.[1] ?? '';
    blobs.push({
      name: unescapeXml(tag(blob!, 'Name') ?? ''),
      etag: quoted(unescapeXml(tag(blob!, 'Etag') ?? '')),
      bytes: Number(tag(blob!, 'Content-Length') ?? 0),
      metadata: Object.fromEntries([...meta.matchAll(/<([\w-]+)>([^<]*)<\/\1>/g)].map(([, k, v]) => [k!.toLowerCase(), unescapeXml(v!)])),
    });
  }
  const next = tag(xml, 'NextMarker');
  return { blobs, next: next === undefined || next === '' ? undefined : unescapeXml(next) };
}

const tag = (xml: string, name: string): string | undefined => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];

/** quoted: an ETag as the headers carry it ("0x8D…"), whichever way the listing wrote it. */
export const quoted = (etag: string): string => (etag === '' || etag.startsWith('"') ? etag : `"${etag}"`);

function unescapeXml(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (_, e: string) => {
    const named: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
    if (e[0] !== '#') return named[e.toLowerCase()]!;
    return String.fromCodePoint(e[1]!.toLowerCase() === 'x' ? parseInt(e.slice(2), 16) : Number(e.slice(1)));
  });
}
