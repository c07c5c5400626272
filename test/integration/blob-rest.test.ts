/**
 * The Blob service calls of the fleet's Blob store (src/fleet/budget/stores/blob-rest.ts) over the
 * wire: Azure Blob Storage served by Azurite (Microsoft's emulator, which checks every Shared Key
 * signature and SAS), behind a proxy that counts each request by its operation and, when a test
 * says so, answers it with a fault instead (a 5xx with Azure's error code, a reset connection, no
 * answer). A read is tried twice, a write is sent once: never a conditional write sent twice.
 * The bearer token's header is seen by a recording HTTP peer (Azurite takes bearer tokens only
 * over HTTPS with a tenant of its own).
 */
import { AccountSASPermissions, generateAccountSASQueryParameters, StorageSharedKeyCredential } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BlobAnswerTooLarge, BlobError, BlobRest, endpointOf, parseList, quoted } from '../../src/fleet/budget/stores/blob-rest.ts';
import { Azurite, DEV_ACCOUNT, DEV_KEY } from '../../src/simulator/azurite.ts';
import { CountingProxy } from '../../testkit/counting-proxy.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { waitFor } from '../helpers.ts';

let azurite: Azurite;
let proxy: CountingProxy;
let rest: BlobRest;
const CONTAINER = 'rest';

beforeAll(async () => {
  azurite = await Azurite.start();
  proxy = await new CountingProxy(azurite.url).start();
  rest = new BlobRest(endpointOf(azurite.connectionString(`${proxy.url}/${DEV_ACCOUNT}`)));
  await rest.call('create the container', { method: 'PUT', path: CONTAINER, query: { restype: 'container' } });
}, 60_000);

afterAll(async () => {
  rest?.close();
  await proxy?.stop();
  await azurite?.stop();
});

const put = (name: string, body: string, headers: Record<string, string> = {}) =>
  rest.call(`write ${name}`, {
    method: 'PUT',
    path: `${CONTAINER}/${name}`,
    headers: { 'x-ms-blob-type': 'BlockBlob', 'content-type': 'application/json', ...headers },
    body,
  });
const read = (name: string, r: BlobRest = rest) => r.call(`read ${name}`, { method: 'GET', path: `${CONTAINER}/${name}` });
const failure = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => new Error('it did not fail'),
    (err: unknown) => err,
  );
const busy = { status: 503, code: 'ServerBusy' } as const;

describe('Blob REST calls against Azurite', () => {
  it('writes, reads, lists and deletes a record whose name needs escaping, each signed with Shared Key as the reference says', async () => {
    proxy.take();
    const name = 'g/a b&c+\u00e9=%.json';
    const written = await put(name, '{"member":"vm-a"}', { 'if-none-match': '*', 'x-ms-meta-note': '  padded  ' });
    expect(written.status).toBe(201);
    const etag = written.headers.etag as string;
    expect((await read(name)).body.toString()).toBe('{"member":"vm-a"}');
    // If-Match and a range are signed too; a replace at another version is refused
    const replaced = await put(name, '{"member":"vm-b"}', { 'if-match': etag, 'x-ms-meta-note': '  padded  ' });
    expect(await failure(put(name, '{"member":"vm-c"}', { 'if-match': etag }))).toMatchObject({
      statusCode: 412,
      errorCode: 'ConditionNotMet',
    });
    const ranged = await rest.call('read', { method: 'GET', path: `${CONTAINER}/${name}`, headers: { 'x-ms-range': 'bytes=0-3' } });
    expect(ranged).toMatchObject({ status: 206, body: Buffer.from('{"me') });
    const head = await rest.call('properties', { method: 'HEAD', path: `${CONTAINER}/${name}` });
    expect(head.headers.etag).toBe(replaced.headers.etag);
    expect(head.headers['x-ms-meta-note']).toBe('padded');
    // a listing's query is signed key by key (sorted, lower-cased); an undefined marker is not sent
    const listed = await rest.call('list', {
      method: 'GET',
      path: CONTAINER,
      query: { restype: 'container', comp: 'list', prefix: 'g/a', include: 'metadata', MaxResults: '5', marker: undefined },
    });
    expect(parseList(listed.body.toString()).blobs).toEqual([
      { name, etag: replaced.headers.etag, bytes: 17, metadata: { note: 'padded' } },
    ]);
    // an empty body is signed with no length, as the reference says of a length of 0
    expect((await put('g/empty.json', '')).status).toBe(201);
    expect((await rest.call('properties', { method: 'HEAD', path: `${CONTAINER}/g/empty.json` })).headers['content-length']).toBe('0');
    await rest.call('delete', { method: 'DELETE', path: `${CONTAINER}/${name}`, headers: { 'if-match': replaced.headers.etag as string } });
    expect(await failure(read(name))).toMatchObject({
      code: 'BLOB_STATUS',
      statusCode: 404,
      errorCode: 'BlobNotFound',
      message: `read ${name}: Blob Storage answered 404 BlobNotFound`,
    });
    expect(proxy.take().counts).toMatchObject({ write: 4, read: 3, properties: 2, list: 1, delete: 1 });
  });

  it('answers an accepted status as an answer, and any other outside 2xx as a BlobError (a 3xx too)', async () => {
    const again = await rest.call('create the container', {
      method: 'PUT',
      path: CONTAINER,
      query: { restype: 'container' },
      accept: [409],
    });
    expect(again.status).toBe(409);
    expect(
      await failure(rest.call('create the container', { method: 'PUT', path: CONTAINER, query: { restype: 'container' } })),
    ).toMatchObject({
      statusCode: 409,
      errorCode: 'ContainerAlreadyExists',
    });
    await put('moved.json', '{}');
    proxy.fail('read', { status: 304, code: '' });
    const err = await failure(read('moved.json'));
    expect(err).toBeInstanceOf(BlobError);
    expect(err).toMatchObject({ statusCode: 304, message: 'read moved.json: Blob Storage answered 304' });
  });

  it('tries a read again after a 5xx or a reset connection, once: a read that fails twice is an error', async () => {
    await put('busy.json', '{"n":1}');
    proxy.take();
    proxy.fail('read', busy);
    expect((await read('busy.json')).body.toString()).toBe('{"n":1}');
    expect(proxy.take().counts).toEqual({ read: 2 });
    // a 500 is a 5xx too, and Get Blob Properties is a read
    proxy.fail('properties', { status: 500, code: 'InternalError' });
    expect((await rest.call('properties', { method: 'HEAD', path: `${CONTAINER}/busy.json` })).status).toBe(200);
    expect(proxy.take().counts).toEqual({ properties: 2 });
    proxy.fail('read', 'reset');
    expect((await read('busy.json')).status).toBe(200);
    expect(proxy.take().counts).toEqual({ read: 2 });
    proxy.fail('read', busy, { status: 500, code: 'InternalError' });
    expect(await failure(read('busy.json'))).toMatchObject({
      statusCode: 500,
      errorCode: 'InternalError',
      message: 'read busy.json: Blob Storage answered 500 InternalError',
    });
    expect(proxy.take().counts).toEqual({ read: 2 });
    proxy.fail('read', 'reset', 'reset');
    const reset = await failure(read('busy.json'));
    expect(reset).not.toBeInstanceOf(BlobError);
    expect(reset).toMatchObject({ code: 'ECONNRESET' });
    expect(proxy.take().counts).toEqual({ read: 2 });
  });

  it('never tries a 4xx or an answer too large again', async () => {
    proxy.take();
    expect(await failure(read('missing.json'))).toMatchObject({ statusCode: 404 });
    expect(proxy.take().counts).toEqual({ read: 1 });
    await put('large.json', 'x'.repeat(4096));
    proxy.take();
    const small = new BlobRest(endpointOf(azurite.connectionString(`${proxy.url}/${DEV_ACCOUNT}`)), 1024);
    const err = await failure(read('large.json', small));
    small.close();
    expect(err).toBeInstanceOf(BlobAnswerTooLarge);
    expect(err).toMatchObject({ message: 'read large.json: Blob Storage answered more than 1024 bytes, and no part of it is used' });
    expect(proxy.take().counts).toEqual({ read: 1 });
  });

  it('sends a write once, whatever it meets: a 5xx or a reset is the caller to judge, and the record is as it was', async () => {
    const first = await put('once.json', '{"v":1}');
    proxy.take();
    for (const fault of [busy, 'reset'] as const) {
      proxy.fail('write', fault);
      const err = await failure(put('once.json', '{"v":2}', { 'if-match': first.headers.etag as string }));
      expect(err).toBeInstanceOf(Error);
      expect(proxy.take().counts).toEqual({ write: 1 });
    }
    proxy.fail('delete', busy);
    expect(await failure(rest.call('delete', { method: 'DELETE', path: `${CONTAINER}/once.json` }))).toMatchObject({ statusCode: 503 });
    expect(proxy.take().counts).toEqual({ delete: 1 });
    const kept = await read('once.json');
    expect(kept).toMatchObject({ body: Buffer.from('{"v":1}'), headers: { etag: first.headers.etag } });
  });

  it("a read that never answers ends at its own deadline (5 s) and is tried again; the caller's signal ends it at once, tried no more", async () => {
    await put('slow.json', '{}');
    proxy.take();
    proxy.fail('read', 'hang');
    expect((await read('slow.json')).status).toBe(200);
    expect(proxy.take().counts).toEqual({ read: 2 });
    proxy.fail('read', 'hang');
    const stop = new AbortController();
    const asked = failure(rest.call('read', { method: 'GET', path: `${CONTAINER}/slow.json`, signal: stop.signal }));
    await waitFor(() => proxy.counts.get('read') === 1, 'the read reaching the proxy', 10_000, 5);
    stop.abort();
    expect(await asked).toMatchObject({ code: 'ABORT_ERR' });
    // a fresh read is answered at once: nothing of the aborted one was sent again
    expect((await read('slow.json')).status).toBe(200);
    expect(proxy.take().counts).toEqual({ read: 2 });
  }, 30_000);

  it('signs with a SAS from a connection string instead of a key, on a call with a query and on one without', async () => {
    const sas = generateAccountSASQueryParameters(
      { expiresOn: new Date(Date.now() + 3_600_000), permissions: AccountSASPermissions.parse('rl'), resourceTypes: 'sco', services: 'b' },
      new StorageSharedKeyCredential(DEV_ACCOUNT, DEV_KEY),
    ).toString();
    const endpoint = endpointOf(`BlobEndpoint=${proxy.url}/${DEV_ACCOUNT}/;SharedAccessSignature=?${sas}`);
    expect(endpoint.auth).toEqual({ kind: 'sas', query: sas });
    const viaSas = new BlobRest(endpoint);
    await put('sas.json', '{"sas":true}');
    expect((await read('sas.json', viaSas)).body.toString()).toBe('{"sas":true}');
    const listed = await viaSas.call('list', {
      method: 'GET',
      path: CONTAINER,
      query: { restype: 'container', comp: 'list', prefix: 'sas' },
    });
    expect(parseList(listed.body.toString()).blobs.map((b) => b.name)).toEqual(['sas.json']);
    viaSas.close();
    // the same key with a wrong signature is refused: the signature is checked
    const forged = new BlobRest({
      url: `${proxy.url}/${DEV_ACCOUNT}`,
      auth: { kind: 'sharedKey', account: DEV_ACCOUNT, key: Buffer.from('not the key') },
    });
    expect(await failure(read('sas.json', forged))).toMatchObject({ statusCode: 403 });
    forged.close();
  });
});

describe('Blob REST calls with a bearer token (a recording HTTP peer)', () => {
  it("sends the token the source gives, asked with the call's signal, and the service's version and date", async () => {
    const peer = new HttpPeer();
    await peer.listen();
    const asked: AbortSignal[] = [];
    const bearer = new BlobRest({
      url: `${peer.url}/acct/`.replace(/\/$/, ''),
      auth: { kind: 'bearer', token: async (signal) => (asked.push(signal), 'tok-1') },
    });
    peer.answer = () => ({ status: 200, body: 'ok' });
    expect((await read('x y.json', bearer)).body.toString()).toBe('ok');
    bearer.close();
    await peer.close();
    expect(asked).toHaveLength(1);
    expect(asked[0]!.aborted).toBe(false);
    const [req] = peer.requests;
    expect(req).toMatchObject({ method: 'GET', url: `/acct/${CONTAINER}/x%20y.json` });
    expect(req!.headers).toMatchObject({ authorization: 'Bearer tok-1', 'x-ms-version': '2021-08-06' });
    expect(Number.isNaN(Date.parse(req!.headers['x-ms-date'] as string))).toBe(false);
  });
});

describe('connection strings and List Blobs answers', () => {
  it('reads keys in any case with spaces around them; the default protocol and suffix; a trailing slash and a SAS "?" dropped', () => {
    expect(endpointOf(' accountname = acct ; AccountKey= a2V5 ')).toMatchObject({
      url: 'https://acct.blob.core.windows.net',
      auth: { kind: 'sharedKey', account: 'acct', key: Buffer.from('key') },
    });
    expect(endpointOf('DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.chinacloudapi.cn').url).toBe(
      'http://acct.blob.core.chinacloudapi.cn',
    );
    expect(endpointOf('AccountName=acct;AccountKey=a2V5;BlobEndpoint=https://h/acct//').url).toBe('https://h/acct');
    expect(endpointOf('AccountName=acct;SharedAccessSignature=sv=1&sig=a%3D;junk')).toEqual({
      url: 'https://acct.blob.core.windows.net',
      auth: { kind: 'sas', query: 'sv=1&sig=a%3D' },
    });
    expect(endpointOf('UseDevelopmentStorage=TRUE')).toMatchObject({
      auth: { kind: 'sharedKey', account: DEV_ACCOUNT, key: Buffer.from(DEV_KEY, 'base64') },
    });
    expect(endpointOf('UseDevelopmentStorage=false;AccountName=a;AccountKey=a2V5').url).toBe('https://a.blob.core.windows.net');
    // a part without "=" is no setting
    expect(endpointOf('AccountName=acct;AccountKey=a2V5;BlobEndpointx').url).toBe('https://acct.blob.core.windows.net');
    expect(() => endpointOf('BlobEndpoint=https://h;AccountKey=a2V5')).toThrow(
      'the connection string has no AccountKey and no SharedAccessSignature',
    );
  });

  it('unescapes names, entities in decimal and hex and metadata values; keys lower-cased; an ETag quoted once', () => {
    const xml = `<EnumerationResults><Blobs><Blob><Name>a&#65;&#x42;&quot;&apos;&gt;</Name><Properties><Etag>x</Etag></Properties><Metadata><Record>v&amp;w</Record><b-2>z</b-2></Metadata></Blob></Blobs><NextMarker>m&amp;n</NextMarker></EnumerationResults>`;
    expect(parseList(xml)).toEqual({
      blobs: [{ name: 'aAB"\'>', etag: '"x"', bytes: 0, metadata: { record: 'v&w', 'b-2': 'z' } }],
      next: 'm&n',
    });
    expect(parseList('<Blob><Properties /></Blob>').blobs).toEqual([{ name: '', etag: '', bytes: 0, metadata: {} }]);
    // metadata written over several lines; an empty NextMarker is the last page
    const spread = '<Blob><Name>n</Name><Metadata>\n  <a>1</a>\n  <b>2</b>\n</Metadata></Blob><NextMarker></NextMarker>';
    expect(parseList(spread)).toEqual({ blobs: [{ name: 'n', etag: '', bytes: 0, metadata: { a: '1', b: '2' } }], next: undefined });
    expect(parseList('<Blob><Name>&lt;&#x3c;&#60;&#128512;</Name></Blob>').blobs[0]!.name).toBe('<<<\u{1F600}');
    expect(quoted('')).toBe('');
    expect(quoted('"q"')).toBe('"q"');
    // an ETag that starts with its quote is taken as written
    expect(quoted('"0x8D')).toBe('"0x8D');
  });
});
