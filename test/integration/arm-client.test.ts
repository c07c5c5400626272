/**
 * ArmClient, the relay's Resource Manager client, against an HTTPS stand-in of Resource Manager
 * written from its REST reference (no Azure service runs here): the acknowledgement of scheduled
 * events (Microsoft.Maintenance, api-version 2025-11-01) behind a bearer token for Resource
 * Manager's own origin, answering as Resource Manager does when it refuses (`{"error": {"code",
 * "message"}}`, Retry-After in seconds) or not at all. The token comes from the IMDS simulator's
 * managed identity endpoint, over the wire.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseEventResource } from '../../src/azure/resource-id.ts';
import { ArmClient } from '../../src/relay/arm.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { ArmStandIn, scheduledEventOf, vmId } from '../../testkit/azure-feed.ts';
import { ForwardProxy } from '../../testkit/forward-proxy.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { ROOT, waitFor } from '../helpers.ts';

const TLS = {
  key: readFileSync(join(ROOT, 'test/fixtures/tls/key.pem'), 'utf8'),
  cert: readFileSync(join(ROOT, 'test/fixtures/tls/cert.pem'), 'utf8'),
};
const CA_FILE = join(ROOT, 'test/fixtures/tls/cert.pem');
const E = (n: number) => `00000000-0000-4000-b000-${String(n).padStart(12, '0')}`;
const ACK = (vm: string, e: string) =>
  `${vmId(vm)}/providers/Microsoft.Maintenance/scheduledevents/${e}/acknowledge?api-version=2025-11-01`;

let identity: ImdsSimulator;
let identityUrl: string;
let arm: ArmStandIn;
let trap: HttpPeer;
const clients: ArmClient[] = [];

beforeAll(async () => {
  identity = new ImdsSimulator({ vmName: 'relay-vm', tickMs: 10 });
  identityUrl = await identity.listen();
  arm = new ArmStandIn(TLS, 50);
  await arm.peer.listen();
  trap = new HttpPeer();
  await trap.listen();
}, 30_000);
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
  arm.rows = [];
  arm.refusals.length = 0;
  arm.peer.requests.length = 0;
  delete process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST;
});
afterAll(async () => {
  await trap?.close();
  await arm?.peer.close();
  await identity?.close();
});

/** client: an ArmClient of the stand-in (or `endpoint`), its token from the simulator's identity endpoint (a user-assigned identity's when `clientId`). */
function client(o: { timeoutMs?: number; endpoint?: string; clientId?: string } = {}): ArmClient {
  process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = identityUrl;
  const credential = o.clientId === undefined ? {} : { credential: { kind: 'managedIdentity' as const, clientId: o.clientId } };
  const c = new ArmClient({ endpoint: o.endpoint ?? arm.peer.url, caFile: CA_FILE, timeoutMs: o.timeoutMs ?? 5000, ...credential });
  clients.push(c);
  return c;
}

const web1 = () => parseEventResource(vmId('web-1'))!;

describe('ArmClient: the acknowledgement as Resource Manager takes it', () => {
  it("one event at its own path with an empty body, with a token for Resource Manager's origin; the answer read", async () => {
    arm.rows = [scheduledEventOf({ resourceId: vmId('web-1'), eventId: E(1) })];
    // the endpoint as configured may carry a path: the token and the request are for its origin
    const c = client({ endpoint: `${arm.peer.url}/some/base/` });
    const answer = await c.acknowledge(web1(), [E(1)]);
    expect(answer).toEqual({
      status: 200,
      json: { value: 'Successfully Approved' },
      error: '{"value":"Successfully Approved"}',
      code: null,
      retryAfter: null,
    });
    expect(arm.peer.requests.map((q) => [q.method, q.url, q.body, q.headers['content-type']])).toEqual([
      ['POST', ACK('web-1', E(1)), '', 'application/json'],
    ]);
    expect(arm.acknowledged.at(-1)).toMatchObject({ resourceId: vmId('web-1').toLowerCase(), eventId: E(1) });
  });

  it('close drops the connections it keeps to Resource Manager, which would otherwise stay open for half a minute', async () => {
    arm.rows = [scheduledEventOf({ resourceId: vmId('web-1'), eventId: E(1) })];
    const c = client();
    // the stand-in would keep an idle connection for a minute; the client, for 30 s
    arm.peer.keepIdle(60_000);
    expect((await c.acknowledge(web1(), [E(1)])).status).toBe(200);
    // the answered request's connection is kept for the next one
    expect(arm.peer.openConnections).toBeGreaterThan(0);
    c.close();
    await waitFor(() => arm.peer.openConnections === 0, 'the connections to Resource Manager closed');
    arm.peer.keepIdle(5000);
  });

  it('several events of one resource in one call of the list form; no EventId, or one that is not a GUID, sends nothing', async () => {
    arm.rows = [E(2), E(3)].map((eventId) => scheduledEventOf({ resourceId: vmId('web-1'), eventId }));
    const c = client();
    expect(await c.acknowledge(web1(), [E(2), E(3)])).toMatchObject({ status: 200 });
    expect(arm.peer.requests.map((q) => `${q.url} ${q.body}`)).toEqual([
      `${vmId('web-1')}/providers/Microsoft.Maintenance/scheduledevents?api-version=2025-11-01 {"value":["${E(2)}","${E(3)}"]}`,
    ]);
    expect(() => c.acknowledge(web1(), [])).toThrow(/GUID/);
    expect(() => c.acknowledge(web1(), [E(2), '../restart'])).toThrow(/GUID/);
    expect(() => c.acknowledge(web1(), ['../restart', E(2)])).toThrow(/GUID/);
    expect(arm.peer.requests).toHaveLength(1);
  });

  it('a path that would leave the origin, or is not the one given, is refused before a token is asked for', async () => {
    const c = client({ clientId: '33333333-3333-4333-8333-333333333333' });
    const tokens = () => identity.requests.filter((q) => q.path.includes('/identity/')).length;
    const before = tokens();
    const port = new URL(trap.url).port;
    for (const path of [`//127.0.0.1:${port}/x`, `${trap.url}/x`, 'relative', '/a/../../b', '/x#y', '/a/./b', '/x?a b'])
      await expect(c.post(path, '{}'), path).rejects.toThrow(/refused to send a request to .*not a path of Resource Manager's origin/);
    expect(trap.requests).toEqual([]);
    expect(arm.peer.requests).toEqual([]);
    expect(tokens()).toBe(before);
  });
});

describe('ArmClient: what Resource Manager says when it refuses', () => {
  it('each refusal read as its status, its error code and message, and Retry-After in whole seconds (at most an hour)', async () => {
    const c = client();
    const table = [
      [{ status: 400 }, 'BadRequest', null],
      [{ status: 401 }, 'InvalidAuthenticationToken', null],
      [{ status: 403 }, 'AuthorizationFailed', null],
      [{ status: 409 }, 'Conflict', null],
      [{ status: 429, retryAfter: 7 }, 'TooManyRequests', 7],
      [{ status: 429, retryAfter: 0 }, 'TooManyRequests', 0],
      [{ status: 429, retryAfter: 86_400 }, 'TooManyRequests', 3600],
      [{ status: 429, retryAfter: -5 }, 'TooManyRequests', null],
      [{ status: 429, retryAfter: '1.5' }, 'TooManyRequests', null],
      [{ status: 429, retryAfter: 'soon' }, 'TooManyRequests', null],
      [{ status: 500 }, 'InternalServerError', null],
      [{ status: 503, retryAfter: 30 }, 'ServiceUnavailable', 30],
    ] as const;
    for (const [refusal, code, retryAfter] of table) {
      arm.refusals.push(refusal);
      const a = await c.acknowledge(web1(), [E(4)]);
      const want = { status: refusal.status, code, error: `${code} refused with ${refusal.status}`, retryAfter };
      expect({ refusal, ...a, json: undefined }).toEqual({ refusal, ...want, json: undefined });
      expect(a.json).toEqual({ error: { code, message: `refused with ${refusal.status}` } });
    }
    // an event it does not list: 404 ResourceNotFound
    expect(await c.acknowledge(web1(), [E(5)])).toMatchObject({ status: 404, code: 'ResourceNotFound', retryAfter: null });
  });

  it("a body that is not Resource Manager's JSON (a gateway's page) is said by its start", async () => {
    const c = client();
    const page = `<html><body>${'Bad Gateway '.repeat(40)}</body></html>`;
    arm.refusals.push({ status: 502, text: page });
    expect(await c.acknowledge(web1(), [E(6)])).toEqual({
      status: 502,
      json: null,
      error: page.slice(0, 200),
      code: null,
      retryAfter: null,
    });
  });

  it('an error body without a code is said by its message, one without a message by its code', async () => {
    const c = client();
    arm.refusals.push(
      { status: 400, text: '{"error":{"message":"the body is not valid"}}' },
      { status: 400, text: '{"error":{"code":"Gone","message":42}}' },
    );
    expect(await c.acknowledge(web1(), [E(6)])).toMatchObject({ status: 400, code: null, error: 'the body is not valid' });
    expect(await c.acknowledge(web1(), [E(6)])).toMatchObject({ status: 400, code: 'Gone', error: 'Gone' });
  });

  it("Resource Manager is reached through the environment's proxy (HTTPS_PROXY, a CONNECT tunnel), as the relay's other calls", async () => {
    const proxy = await new ForwardProxy().start();
    const saved = {
      HTTPS_PROXY: process.env.HTTPS_PROXY,
      NO_PROXY: process.env.NO_PROXY,
      https_proxy: process.env.https_proxy,
      no_proxy: process.env.no_proxy,
    };
    try {
      Object.assign(process.env, { HTTPS_PROXY: proxy.url, NO_PROXY: '' });
      delete process.env.https_proxy;
      delete process.env.no_proxy;
      // the token endpoint (127.0.0.1) is never reached through a proxy: Resource Manager is named by another host name here
      const port = new URL(arm.peer.url).port;
      const c = client({ endpoint: `https://localhost:${port}` });
      // the stand-in's certificate names 127.0.0.1 alone: refused by TLS, after the tunnel was asked for
      await expect(c.acknowledge(web1(), [E(9)])).rejects.toThrow();
      expect(proxy.tunnels()).toEqual([`localhost:${port}`]);
    } finally {
      for (const [k, v] of Object.entries(saved))
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      await proxy.close();
    }
  });
});

describe('ArmClient: every call has a deadline', () => {
  it('Resource Manager that never answers: the request is abandoned at timeoutMs, and a caller may abandon it sooner', async () => {
    const c = client({ timeoutMs: 2000 });
    arm.refusals.push('hang');
    await expect(c.acknowledge(web1(), [E(7)])).rejects.toThrow(/abort|timeout|time/i);
    expect(arm.peer.requests).toHaveLength(1);
    arm.refusals.push('hang');
    const caller = new AbortController();
    const slow = client({ timeoutMs: 60_000 });
    const pending = slow.acknowledge(web1(), [E(7)], caller.signal);
    await expect.poll(() => arm.peer.requests.length, { timeout: 15_000 }).toBe(2);
    caller.abort(new Error('the caller gave up'));
    await expect(pending).rejects.toThrow(/the caller gave up|abort/i);
  });

  it("a token endpoint that refuses: no token, said with the credential's reason, and nothing is sent", async () => {
    identity.injectFault({ kind: 'status', status: 400, target: 'token', count: 100 });
    try {
      const c = client({ clientId: '55555555-5555-4555-8555-555555555555' });
      await expect(c.acknowledge(web1(), [E(8)])).rejects.toThrow(/^no token for Resource Manager: ./);
      expect(arm.peer.requests).toEqual([]);
    } finally {
      identity.clearFaults();
    }
  });

  it('a token endpoint that never answers: the token is abandoned at timeoutMs and nothing is sent', async () => {
    identity.injectFault({ kind: 'hang', target: 'token', count: 100 });
    try {
      // a user-assigned identity of its own: no token of the other tests' identity is at hand
      const c = client({ timeoutMs: 500, clientId: '22222222-2222-4222-8222-222222222222' });
      await expect(c.acknowledge(web1(), [E(8)])).rejects.toThrow(/no token for Resource Manager within 500 ms/);
      expect(arm.peer.requests).toEqual([]);
    } finally {
      identity.clearFaults();
    }
  });
});
