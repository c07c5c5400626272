/**
 * The managed identity token client (src/azure/imds-token.ts) against the IMDS simulator's token
 * endpoint, over HTTP on 127.0.0.1, and the Blob REST helpers (blob-rest.ts) on what Azure's
 * reference writes: a connection string's parts, a List Blobs answer with escaped names,
 * metadata and a next page. The Blob calls themselves run against Azurite in the fleet tests.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { imdsCredential, ImdsTokens, ManagedIdentityError } from '../../src/azure/imds-token.ts';
import { DEV_ACCOUNT } from '../../src/azure/dev-storage.ts';
import { endpointOf, parseList } from '../../src/fleet/budget/stores/blob-rest.ts';
import { readJwt } from '../../src/simulator/identity.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';

let sim: ImdsSimulator;
const saved = process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST;
beforeAll(async () => {
  sim = new ImdsSimulator({ vmName: 'vm-token' });
  await sim.listen(0);
  process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = sim.url;
});
afterAll(async () => {
  if (saved === undefined) delete process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST;
  else process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = saved;
  await sim.close();
});
afterEach(() => {
  sim.clearFaults();
  sim.identities.requests.length = 0;
  sim.identities.configure({ systemAssigned: true, userAssigned: [], tokenLifetimeSec: 86_399 });
});

const STORAGE = 'https://storage.azure.com';

describe('managed identity tokens from IMDS', () => {
  it('one request for many callers and calls, a token for the resource asked; a new one once it is near its end', async () => {
    const tokens = new ImdsTokens({ kind: 'managedIdentity' });
    const got = await Promise.all([tokens.token(STORAGE), tokens.token(STORAGE), tokens.token(STORAGE)]);
    expect(new Set(got).size).toBe(1);
    await tokens.token(STORAGE);
    expect(sim.identities.requests).toHaveLength(1);
    expect(readJwt(got[0])).toMatchObject({ aud: STORAGE });
    // a token that lives 60 s is within 5 minutes of its end at once: asked again at each call
    sim.identities.configure({ tokenLifetimeSec: 60 });
    const short = new ImdsTokens({ kind: 'managedIdentity' });
    await short.token(STORAGE);
    await short.token(STORAGE);
    expect(sim.identities.requests.length).toBeGreaterThanOrEqual(2);
    tokens.close();
    short.close();
  });

  it('a user-assigned identity by client id; one this VM does not have is said at once (400), not tried four times', async () => {
    const uai = {
      clientId: '6c1f1e2a-3b4c-4d5e-8f60-718293a4b5c6',
      objectId: '7d2f2f3b-4c5d-4e6f-9a71-8293a4b5c6d7',
      resourceId: '/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/uai',
    };
    sim.identities.configure({ userAssigned: [uai] });
    const mine = new ImdsTokens({ kind: 'managedIdentity', clientId: uai.clientId });
    expect(readJwt(await mine.token(STORAGE))).toMatchObject({ appid: uai.clientId });
    expect(sim.identities.requests.at(-1)).toMatchObject({ asked: `client_id=${uai.clientId}`, status: 200 });
    const other = new ImdsTokens({ kind: 'managedIdentity', clientId: '00000000-0000-4000-8000-000000000001' });
    const err = await other.token(STORAGE).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ManagedIdentityError);
    expect((err as Error).message).toMatch(/IMDS answered 400: invalid_request: Identity not found/);
    expect(sim.identities.requests.filter((r) => r.status === 400)).toHaveLength(1);
    mine.close();
    other.close();
  });

  it("IMDS's transient answers (500, 429) are tried again; an endpoint that never answers ends with the caller's deadline", async () => {
    sim.injectFault({ kind: 'status', status: 500, target: 'token', count: 1 });
    sim.injectFault({ kind: 'status', status: 429, target: 'token', count: 1 });
    const tokens = new ImdsTokens({ kind: 'managedIdentity' });
    expect(readJwt(await tokens.token(STORAGE))).toMatchObject({ aud: STORAGE });
    expect(sim.identities.requests.map((r) => r.status)).toEqual([200]);
    sim.injectFault({ kind: 'hang', target: 'token', count: 10 });
    const late = new ImdsTokens({ kind: 'managedIdentity' });
    await expect(late.token(STORAGE, AbortSignal.timeout(300))).rejects.toThrow(
      /no managed identity token for https:\/\/storage\.azure\.com in time/,
    );
    tokens.close();
    late.close();
  });
});

describe('the managed identity as a TokenCredential (the Azure SDKs, the sinks, Resource Manager)', () => {
  it('a .default scope asks for its resource; the token says when it expires; one kept is said when to renew; a failure is a CredentialUnavailableError', async () => {
    const credential = imdsCredential({ kind: 'managedIdentity' });
    const before = Date.now();
    const t = await credential.getToken('https://eventgrid.azure.net/.default');
    expect(readJwt(t!.token)).toMatchObject({ aud: 'https://eventgrid.azure.net' });
    expect(sim.identities.requests.at(-1)).toMatchObject({ resource: 'https://eventgrid.azure.net', status: 200 });
    // a day-long token: kept, renewed well before it expires
    expect(t!.expiresOnTimestamp).toBeGreaterThan(before + 86_000_000);
    expect(t!.refreshAfterTimestamp).toBeGreaterThan(before);
    expect(t!.refreshAfterTimestamp).toBeLessThan(t!.expiresOnTimestamp);
    // a token of less than 5 minutes is not kept: its holder renews it by when it expires
    sim.identities.configure({ tokenLifetimeSec: 120 });
    const short = await imdsCredential({ kind: 'managedIdentity' }).getToken(['https://servicebus.azure.net//.default']);
    expect(short).not.toHaveProperty('refreshAfterTimestamp');
    expect(sim.identities.requests.at(-1)).toMatchObject({ resource: 'https://servicebus.azure.net/' });
    await expect(credential.getToken(['a/.default', 'b/.default'])).rejects.toMatchObject({ name: 'CredentialUnavailableError' });
    const missing = imdsCredential({ kind: 'managedIdentity', clientId: '00000000-0000-4000-8000-000000000002' });
    const err = await missing.getToken('https://eventgrid.azure.net/.default').catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'CredentialUnavailableError', message: expect.stringMatching(/Identity not found/) });
    expect((err as Error).cause).toBeInstanceOf(ManagedIdentityError);
  });
});

describe('Blob REST helpers', () => {
  it('reads a connection string: account and key, an explicit endpoint, a SAS, the development account; refuses one without credentials', () => {
    expect(endpointOf('DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net')).toMatchObject({
      url: 'https://acct.blob.core.windows.net',
      auth: { kind: 'sharedKey', account: 'acct' },
    });
    expect(endpointOf(`AccountName=${DEV_ACCOUNT};AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:9/${DEV_ACCOUNT}/;`).url).toBe(
      `http://127.0.0.1:9/${DEV_ACCOUNT}`,
    );
    expect(endpointOf('BlobEndpoint=https://acct.blob.core.windows.net;SharedAccessSignature=?sv=2021&sig=x')).toEqual({
      url: 'https://acct.blob.core.windows.net',
      auth: { kind: 'sas', query: 'sv=2021&sig=x' },
    });
    expect(endpointOf('UseDevelopmentStorage=true').url).toBe(`http://127.0.0.1:10000/${DEV_ACCOUNT}`);
    expect(() => endpointOf('AccountName=acct')).toThrow(/no AccountKey and no SharedAccessSignature/);
    expect(() => endpointOf('nothing=here')).toThrow(/neither BlobEndpoint nor AccountName/);
  });

  it('reads a List Blobs answer: escaped names, quoted ETags, sizes, metadata, the next marker', () => {
    const xml = `<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="http://x/" ContainerName="fleet"><Prefix>g/</Prefix><Blobs>
      <Blob><Name>g/member-a&amp;b.json</Name><Properties><Etag>0x8DC1</Etag><Content-Length>120</Content-Length></Properties><Metadata><record>eyJ2bSI6ImEifQ==</record></Metadata></Blob>
      <Blob><Name>g/slot-&#x4E00;.json</Name><Properties><Etag>"0x8DC2"</Etag><Content-Length>0</Content-Length></Properties><Metadata /></Blob>
    </Blobs><NextMarker>2!g/slot-&lt;x</NextMarker></EnumerationResults>`;
    const listed = parseList(xml);
    expect(listed.blobs).toEqual([
      { name: 'g/member-a&b.json', etag: '"0x8DC1"', bytes: 120, metadata: { record: 'eyJ2bSI6ImEifQ==' } },
      { name: 'g/slot-\u4e00.json', etag: '"0x8DC2"', bytes: 0, metadata: {} },
    ]);
    expect(listed.next).toBe('2!g/slot-<x');
    expect(parseList('<EnumerationResults><Blobs /><NextMarker /></EnumerationResults>')).toEqual({ blobs: [], next: undefined });
  });
});
