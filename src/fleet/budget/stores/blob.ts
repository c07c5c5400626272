/**
 * BlobFleetStore keeps a group's records in Azure Blob Storage: one block blob per record
 * (`<container>/<group>/<name>.json`), created with `If-None-Match: *` and replaced with
 * `If-Match: <ETag>`, so a write based on a stale read fails with 409 or 412 and the writer reads
 * again. https://learn.microsoft.com/rest/api/storageservices/specifying-conditional-headers-for-blob-service-operations
 *
 * A record small enough is also carried in the blob's metadata (`record`, base64 of its JSON, set
 * in the same Put Blob, so it always matches the blob's ETag), and `list` reads the group with one
 * List Blobs request (`include=metadata`) per page of records, whatever the number of members:
 * only a record written without it (larger than METADATA_RECORD_BYTES, or by a version before it)
 * is downloaded. A page is as many records as fit the client's limit on an answer at their
 * largest (listPage), and an answer over that limit fails the listing: a group is read whole or
 * not at all. https://learn.microsoft.com/rest/api/storageservices/list-blobs
 * The calls are the REST API's, through blob-rest.ts; the VM's managed identity token comes
 * straight from IMDS (src/azure/imds-token.ts), DefaultAzureCredential from @azure/identity.
 */
import { BearerSource } from '../../../azure/entra.ts';
import { ImdsTokens } from '../../../azure/imds-token.ts';
import type { FleetStoreConfig } from './config.ts';
import {
  BlobAnswerTooLarge,
  BlobError,
  BlobRest,
  endpointOf,
  header,
  MAX_ANSWER_BYTES,
  parseList,
  quoted,
  type BlobAuth,
} from './blob-rest.ts';
import { FleetStoreError, MAX_RECORD_BYTES, recordOf, tooLarge, type FleetStore, type Versioned } from './port.ts';

type BlobConfig = Extract<FleetStoreConfig, { type: 'blob' }>;

/**
 * The largest record carried in metadata: its base64 (4/3 of it) stays under the 8 KiB Azure
 * allows a blob's metadata in all. A member record with a dozen events is about 3 KiB.
 */
export const METADATA_RECORD_BYTES = 6000;
const METADATA_KEY = 'record';

/**
 * The most one blob takes in a List Blobs answer with its metadata: its metadata (8 KiB, what
 * Azure allows a blob in all; a record carried there is at most 8,000 characters of base64), its
 * name (a group and a record's name, well under 1 KiB) and its properties (about 1 KiB), with room.
 */
const LISTED_BLOB_BYTES = 16 * 1024;

/** listPage: how many blobs one List Blobs request asks for, so that a page of them at their largest, and the answer's envelope, fit in `answerBytes`. */
export const listPage = (answerBytes: number): number => Math.max(1, Math.min(5000, Math.floor(answerBytes / LISTED_BLOB_BYTES) - 1));

const STORAGE = 'https://storage.azure.com';
const statusOf = (err: unknown): number | undefined => (err instanceof BlobError ? err.statusCode : undefined);

export class BlobFleetStore implements FleetStore {
  readonly where: string;
  readonly #rest: BlobRest;
  readonly #container: string;
  readonly #prefix: string;
  readonly #release: () => void;
  #ensured: Promise<void> | null = null;

  /** group '' is the whole container, read only (the fleet view): its records are named `<group>/<name>`. */
  private constructor(rest: BlobRest, container: string, group: string, release: () => void) {
    this.#rest = rest;
    this.#container = container;
    this.#prefix = group === '' ? '' : `${group}/`;
    this.#release = release;
    this.where = `blob ${rest.url}/${container}${group === '' ? '' : `/${group}`}`;
  }

  /** open: `answerBytes` is the most of one answer the client reads (a test may say less, to see a page overflow). */
  static async open(config: BlobConfig, group: string, answerBytes: number = MAX_ANSWER_BYTES): Promise<BlobFleetStore> {
    if (config.connectionString !== undefined) {
      let endpoint;
      try {
        endpoint = endpointOf(config.connectionString);
      } catch (err) {
        throw new FleetStoreError('connect', (err as Error).message, err);
      }
      const rest = new BlobRest(endpoint, answerBytes);
      return new BlobFleetStore(rest, config.container, group, () => rest.close());
    }
    const credential = config.credential ?? { kind: 'managedIdentity' };
    let auth: BlobAuth;
    let release = () => {};
    if (credential.kind === 'managedIdentity') {
      const tokens = new ImdsTokens(credential);
      auth = { kind: 'bearer', token: (signal) => tokens.token(STORAGE, signal) };
      release = () => tokens.close();
    } else {
      // DefaultAzureCredential, through the bearer source the HTTP sinks use (cached, renewed early)
      const bearer = new BearerSource(credential, `${STORAGE}/.default`);
      auth = { kind: 'bearer', token: (signal) => bearer.token(signal) };
    }
    const rest = new BlobRest({ url: config.accountUrl!.replace(/\/+$/, ''), auth }, answerBytes);
    return new BlobFleetStore(rest, config.container, group, () => (rest.close(), release()));
  }

  async get(name: string, signal?: AbortSignal): Promise<Versioned | null> {
    return this.#read(name, signal);
  }

  async put(name: string, value: unknown, version: string | null, signal?: AbortSignal): Promise<string | null> {
    await this.#ensure(signal);
    const body = JSON.stringify(value);
    try {
      const r = await this.#rest.call(`write ${name}`, {
        method: 'PUT',
        path: this.#path(name),
        headers: {
          'x-ms-blob-type': 'BlockBlob',
          'content-type': 'application/json',
          ...(Buffer.byteLength(body) <= METADATA_RECORD_BYTES
            ? { [`x-ms-meta-${METADATA_KEY}`]: Buffer.from(body).toString('base64') }
            : {}),
          ...(version === null ? { 'if-none-match': '*' } : { 'if-match': version }),
        },
        body,
        ...(signal === undefined ? {} : { signal }),
      });
      return header(r.headers, 'etag') ?? null;
    } catch (err) {
      const status = statusOf(err);
      // 409 BlobAlreadyExists (If-None-Match: *), 412 ConditionNotMet (If-Match): another writer came first
      if (status === 409 || status === 412) return null;
      // a replace of a record deleted by hand: nothing to win against but a fresh create
      if (status === 404 && version !== null) return null;
      throw failure(`write ${name}`, err);
    }
  }

  async remove(name: string, version: string, signal?: AbortSignal): Promise<boolean> {
    try {
      await this.#rest.call(`delete ${name}`, {
        method: 'DELETE',
        path: this.#path(name),
        headers: { 'if-match': version },
        ...(signal === undefined ? {} : { signal }),
      });
      return true;
    } catch (err) {
      // 412 ConditionNotMet: another writer came first; 404: gone already
      const status = statusOf(err);
      if (status === 412 || status === 404) return false;
      throw failure(`delete ${name}`, err);
    }
  }

  list(prefix: string, signal?: AbortSignal): Promise<Versioned[]> {
    return this.#list(prefix, Infinity, signal);
  }

  head(prefix: string, limit: number, signal?: AbortSignal): Promise<Versioned[]> {
    // List Blobs answers in the order of the names
    return this.#list(prefix, Math.max(1, limit), signal);
  }

  /**
   * list: the first `most` records named `prefix`… (Infinity: all), a page a request. A page may
   * hold fewer than it was asked for, with a marker for the rest (the service does so at a
   * partition's boundary): the next page is asked for until `most` are read or none is left.
   * Bounded, so a listing that never ends cannot loop.
   */
  async #list(prefix: string, most: number, signal?: AbortSignal): Promise<Versioned[]> {
    const items: { name: string; bytes: number; version: string; carried: string | undefined }[] = [];
    try {
      let marker: string | undefined;
      for (let page = 0; page < 10_000 && items.length < most; page++) {
        const maxresults = String(Math.min(listPage(this.#rest.answerBytes), most - items.length));
        const r = await this.#rest.call(`list ${prefix}*`, {
          method: 'GET',
          path: this.#container,
          query: { restype: 'container', comp: 'list', prefix: this.#prefix + prefix, include: 'metadata', maxresults, marker },
          ...(signal === undefined ? {} : { signal }),
        });
        const listed = parseList(r.body.toString('utf8'));
        for (const b of listed.blobs)
          items.push({ name: b.name.slice(this.#prefix.length), bytes: b.bytes, version: b.etag, carried: b.metadata[METADATA_KEY] });
        marker = listed.next;
        if (marker === undefined) break;
      }
    } catch (err) {
      if (statusOf(err) === 404) return []; // no container yet: no records
      throw failure(`list ${prefix}*`, err);
    }
    // a record carried in the listing is not downloaded; one over the limit never is
    const read = await Promise.all(
      items.map(async (i) => {
        if (i.bytes > MAX_RECORD_BYTES) return tooLarge(i.name, i.bytes, i.version);
        if (i.carried !== undefined) return recordOf(i.name, Buffer.from(i.carried, 'base64').toString('utf8'), i.version);
        return this.#read(i.name, signal);
      }),
    );
    return read.filter((r): r is Versioned => r !== null);
  }

  async close(): Promise<void> {
    this.#release();
  }

  /** path: a record's blob under the container. */
  #path(name: string): string {
    return `${this.#container}/${this.#prefix}${name}`;
  }

  async #read(name: string, signal?: AbortSignal): Promise<Versioned | null> {
    try {
      // one byte past the limit is asked for, never more: a larger record is named by its size, not downloaded
      const r = await this.#rest.call(`read ${name}`, {
        method: 'GET',
        path: this.#path(name),
        headers: { 'x-ms-range': `bytes=0-${MAX_RECORD_BYTES}` },
        ...(signal === undefined ? {} : { signal }),
      });
      const etag = header(r.headers, 'etag');
      if (etag === undefined) throw new FleetStoreError(`read ${name}`, 'the answer has no ETag');
      const total = Number(/\/(\d+)$/.exec(header(r.headers, 'content-range') ?? '')?.[1] ?? r.body.length);
      if (total > MAX_RECORD_BYTES) return tooLarge(name, total, etag);
      return recordOf(name, r.body.toString('utf8'), etag);
    } catch (err) {
      if (statusOf(err) === 404) return null;
      // an empty blob has no first byte to ask for: no record of ours, read with its ETag so that it can be replaced
      if (statusOf(err) === 416) return this.#empty(name, signal);
      throw failure(`read ${name}`, err);
    }
  }

  async #empty(name: string, signal?: AbortSignal): Promise<Versioned | null> {
    try {
      const p = await this.#rest.call(`read ${name}`, {
        method: 'HEAD',
        path: this.#path(name),
        ...(signal === undefined ? {} : { signal }),
      });
      return { name, value: undefined, version: quoted(header(p.headers, 'etag') ?? ''), unreadable: 'empty' };
    } catch (err) {
      if (statusOf(err) === 404) return null;
      throw failure(`read ${name}`, err);
    }
  }

  /** ensure creates the container once, when missing; a role that may not create containers finds it made by hand. */
  #ensure(signal?: AbortSignal): Promise<void> {
    this.#ensured ??= this.#rest
      .call('create the container', {
        method: 'PUT',
        path: this.#container,
        query: { restype: 'container' },
        accept: [409], // ContainerAlreadyExists
        ...(signal === undefined ? {} : { signal }),
      })
      .then(
        () => undefined,
        (err: unknown) => {
          this.#ensured = null;
          if (statusOf(err) === 403) return; // not allowed to create: the container is expected to exist
          throw failure('create the container', err);
        },
      );
    return this.#ensured;
  }
}

function failure(operation: string, err: unknown): FleetStoreError {
  if (err instanceof FleetStoreError) return err;
  const e = err as { code?: string; message?: string; cause?: { code?: string } };
  const what =
    err instanceof BlobError || err instanceof BlobAnswerTooLarge
      ? err.message.slice(err.message.indexOf('Blob Storage answered'))
      : (e.code ?? e.message ?? String(err));
  return new FleetStoreError(operation, what, err);
}
