/**
 * BlobFleetStore keeps a group's records in Azure Blob Storage: one block blob per record
 * (`<container>/<group>/<name>.json`), created with `If-None-Match: *` and replaced with
 * `If-Match: <ETag>`, so a write based on a stale read fails with 409 or 412 and the writer reads
 * again. https://learn.microsoft.com/rest/api/storageservices/specifying-conditional-headers-for-blob-service-operations
 *
 * A record small enough is also carried in the blob's metadata (`record`, base64 of its JSON, set
 * in the same Put Blob, so it always matches the blob's ETag), and `list` reads the group with one
 * List Blobs request (`include=metadata`) whatever the number of members: only a record written
 * without it (larger than METADATA_RECORD_BYTES, or by a version before it) is downloaded.
 * https://learn.microsoft.com/rest/api/storageservices/list-blobs
 * @azure/storage-blob is imported only here, when a blob store is configured.
 */
import type { ContainerClient } from '@azure/storage-blob';
import { createCredential } from '../../../azure/credentials.ts';
import type { FleetStoreConfig } from './config.ts';
import { FleetStoreError, MAX_RECORD_BYTES, recordOf, tooLarge, type FleetStore, type Versioned } from './port.ts';

type BlobConfig = Extract<FleetStoreConfig, { type: 'blob' }>;

/** One try, bounded: a store that does not answer fails the operation (the budget then fails closed) rather than stalling it. */
const PIPELINE = { retryOptions: { maxTries: 2, tryTimeoutInMs: 5000, retryDelayInMs: 200, maxRetryDelayInMs: 1000 } };

/**
 * The largest record carried in metadata: its base64 (4/3 of it) stays under the 8 KiB Azure
 * allows a blob's metadata in all. A member record with a dozen events is about 3 KiB.
 */
export const METADATA_RECORD_BYTES = 6000;
const METADATA_KEY = 'record';

const statusOf = (err: unknown): number | undefined => (err as { statusCode?: number }).statusCode;

export class BlobFleetStore implements FleetStore {
  readonly where: string;
  readonly #container: ContainerClient;
  readonly #prefix: string;
  #ensured: Promise<void> | null = null;

  /** group '' is the whole container, read only (the fleet view): its records are named `<group>/<name>`. */
  private constructor(container: ContainerClient, group: string) {
    this.#container = container;
    this.#prefix = group === '' ? '' : `${group}/`;
    this.where = `blob ${container.url.replace(/\?.*$/, '')}${group === '' ? '' : `/${group}`}`;
  }

  static async open(config: BlobConfig, group: string): Promise<BlobFleetStore> {
    const blob = await import('@azure/storage-blob');
    const service =
      config.connectionString !== undefined
        ? blob.BlobServiceClient.fromConnectionString(config.connectionString, PIPELINE)
        : new blob.BlobServiceClient(
            config.accountUrl!,
            await createCredential(config.credential ?? { kind: 'managedIdentity' }),
            PIPELINE,
          );
    return new BlobFleetStore(service.getContainerClient(config.container), group);
  }

  async get(name: string, signal?: AbortSignal): Promise<Versioned | null> {
    return this.#read(name, signal);
  }

  async put(name: string, value: unknown, version: string | null, signal?: AbortSignal): Promise<string | null> {
    await this.#ensure(signal);
    const body = JSON.stringify(value);
    try {
      const r = await this.#container.getBlockBlobClient(this.#prefix + name).upload(body, Buffer.byteLength(body), {
        abortSignal: signal,
        blobHTTPHeaders: { blobContentType: 'application/json' },
        ...(Buffer.byteLength(body) <= METADATA_RECORD_BYTES ? { metadata: { [METADATA_KEY]: Buffer.from(body).toString('base64') } } : {}),
        conditions: version === null ? { ifNoneMatch: '*' } : { ifMatch: version },
      });
      return r.etag ?? null;
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
      await this.#container.getBlockBlobClient(this.#prefix + name).delete({ abortSignal: signal, conditions: { ifMatch: version } });
      return true;
    } catch (err) {
      // 412 ConditionNotMet: another writer came first; 404: gone already
      const status = statusOf(err);
      if (status === 412 || status === 404) return false;
      throw failure(`delete ${name}`, err);
    }
  }

  async list(prefix: string, signal?: AbortSignal): Promise<Versioned[]> {
    const items: { name: string; bytes: number; version: string; carried: string | undefined }[] = [];
    try {
      for await (const item of this.#container.listBlobsFlat({ prefix: this.#prefix + prefix, includeMetadata: true, abortSignal: signal }))
        items.push({
          name: item.name.slice(this.#prefix.length),
          bytes: item.properties.contentLength ?? 0,
          version: item.properties.etag,
          carried: item.metadata?.[METADATA_KEY],
        });
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
    // the SDK's HTTP client holds nothing that outlives a request
  }

  async #read(name: string, signal?: AbortSignal): Promise<Versioned | null> {
    try {
      // one byte past the limit is asked for, never more: a larger record is named by its size, not downloaded
      const r = await this.#container.getBlockBlobClient(this.#prefix + name).download(0, MAX_RECORD_BYTES + 1, { abortSignal: signal });
      if (r.readableStreamBody === undefined || r.etag === undefined)
        throw new FleetStoreError(`read ${name}`, 'the answer has no body or no ETag');
      const total = Number(/\/(\d+)$/.exec(r.contentRange ?? '')?.[1] ?? r.contentLength ?? 0);
      if (total > MAX_RECORD_BYTES) {
        r.readableStreamBody.resume();
        return tooLarge(name, total, r.etag);
      }
      const chunks: Buffer[] = [];
      for await (const c of r.readableStreamBody) chunks.push(c as Buffer);
      return recordOf(name, Buffer.concat(chunks).toString('utf8'), r.etag);
    } catch (err) {
      if (statusOf(err) === 404) return null;
      // an empty blob has no first byte to ask for: no record of ours, read with its ETag so that it can be replaced
      if (statusOf(err) === 416) return this.#empty(name, signal);
      throw failure(`read ${name}`, err);
    }
  }

  async #empty(name: string, signal?: AbortSignal): Promise<Versioned | null> {
    try {
      const p = await this.#container.getBlockBlobClient(this.#prefix + name).getProperties({ abortSignal: signal });
      return { name, value: undefined, version: p.etag ?? '', unreadable: 'empty' };
    } catch (err) {
      if (statusOf(err) === 404) return null;
      throw failure(`read ${name}`, err);
    }
  }

  /** ensure creates the container once, when missing; a role that may not create containers finds it made by hand. */
  #ensure(signal?: AbortSignal): Promise<void> {
    this.#ensured ??= this.#container.createIfNotExists({ abortSignal: signal }).then(
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
  const e = err as { statusCode?: number; code?: string; message?: string };
  const what =
    e.statusCode !== undefined
      ? `Blob Storage answered ${e.statusCode}${e.code ? ` ${e.code}` : ''}`
      : (e.code ?? e.message ?? String(err));
  return new FleetStoreError(operation, what, err);
}
