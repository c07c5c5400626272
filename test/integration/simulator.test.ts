import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { SCENARIOS } from '../../src/simulator/scenarios.ts';
import { WireDocument } from '../../src/imds/wire.ts';
import { readJwt } from '../../src/simulator/identity.ts';
import { waitFor } from '../helpers.ts';

const SE = '/metadata/scheduledevents?api-version=2020-07-01';
let sim: ImdsSimulator;
let url: string;

beforeEach(async () => {
  sim = new ImdsSimulator({ vmName: 'vm0', peers: ['vm1', 'vm2'], tickMs: 10 });
  url = await sim.listen(0);
});
afterEach(() => sim.close());

const get = (path: string, headers: Record<string, string> = { metadata: 'true' }) => fetch(`${url}${path}`, { headers });
const post = (path: string, body: unknown, headers: Record<string, string> = { metadata: 'true' }) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('IMDS simulator: the documented endpoint', () => {
  it('answers a valid, empty document', async () => {
    const res = await get(SE);
    expect(res.status).toBe(200);
    expect(WireDocument.parse(await res.json())).toEqual({ DocumentIncarnation: 1, Events: [] });
  });

  it.each([
    ['without Metadata: true', SE, {}],
    ['with Metadata: false', SE, { metadata: 'false' }],
    ['without api-version', '/metadata/scheduledevents', { metadata: 'true' }],
    ['with an unknown api-version', '/metadata/scheduledevents?api-version=latest', { metadata: 'true' }],
    ['with X-Forwarded-For', SE, { metadata: 'true', 'x-forwarded-for': '10.0.0.1' }],
  ])('answers 400 %s', async (_n, path, headers) => {
    expect((await get(path, headers as Record<string, string>)).status).toBe(400);
  });

  it('answers 404 for unknown paths and 405 for other methods', async () => {
    expect((await get('/metadata/nothing?api-version=2020-07-01')).status).toBe(404);
    const put = await fetch(`${url}${SE}`, { method: 'PUT', headers: { metadata: 'true' } });
    expect(put.status).toBe(405);
  });

  it('offers an ETag and answers 304 to a matching If-None-Match until the document changes', async () => {
    const first = await get(SE);
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^".+"$/);
    expect((await get(SE, { metadata: 'true', 'if-none-match': etag })).status).toBe(304);
    sim.addEvent({});
    const changed = await get(SE, { metadata: 'true', 'if-none-match': etag });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
  });

  it('increases DocumentIncarnation on every change and moves events through their lifecycle', async () => {
    // on a clock the test moves, so a Started window of 150 ms is read whatever the machine's load
    let clock = Date.parse('2026-12-01T08:00:00.000Z');
    const timed = new ImdsSimulator({ vmName: 'vm0', peers: ['vm1', 'vm2'], tickMs: 10, now: () => clock });
    const base = await timed.listen(0);
    try {
      const e = timed.addEvent({ EventType: 'Freeze', noticeMs: 150, startedMs: 150, DurationInSeconds: 5 });
      const doc = async () => WireDocument.parse(await (await fetch(`${base}${SE}`, { headers: { metadata: 'true' } })).json());
      const d1 = await doc();
      expect(d1.DocumentIncarnation).toBe(2);
      expect(d1.Events[0]).toMatchObject({ EventId: e.eventId, EventStatus: 'Scheduled', Resources: ['vm0'] });
      expect(d1.Events[0]!.NotBefore).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
      // NotBefore reached: Started
      clock += 150;
      timed.tick();
      const started = await doc();
      expect(started.Events[0]?.EventStatus).toBe('Started');
      expect(started.DocumentIncarnation).toBe(3);
      expect(started.Events[0]!.NotBefore).toBe('');
      // its Started time over: gone
      clock += 150;
      timed.tick();
      const gone = await doc();
      expect(gone.Events).toEqual([]);
      expect(gone.DocumentIncarnation).toBe(4);
    } finally {
      await timed.close();
    }
  });

  it('starts a Scheduled event on POST StartRequests, and refuses malformed or unknown requests', async () => {
    const e = sim.addEvent({ noticeMs: 600_000 });
    for (const bad of ['not json', {}, { StartRequests: [] }, { StartRequests: [{ EventId: 'NOPE' }] }, { StartRequests: [{}] }]) {
      expect((await post(SE, bad)).status).toBe(400);
    }
    expect(sim.events[0]!.status).toBe('Scheduled');
    expect((await post(SE, { StartRequests: [{ EventId: e.eventId }] }, {})).status).toBe(400);
    const ok = await post(SE, { StartRequests: [{ EventId: e.eventId }] });
    expect(ok.status).toBe(200);
    expect(sim.events[0]!.status).toBe('Started');
    expect(sim.startRequests).toHaveLength(1);
    expect((await post(SE, { StartRequests: [{ EventId: e.eventId }] })).status).toBe(200);
  });

  it('answers who the VM is', async () => {
    const res = await get('/metadata/instance/compute?api-version=2021-02-01');
    expect(await res.json()).toMatchObject({ name: 'vm0', resourceGroupName: 'demo-rg' });
  });

  it.each(SCENARIOS.map((s) => [s.name, s] as const))('plays scenario %s', (_name, scenario) => {
    const ids = sim.playScenario(scenario.name);
    expect(ids).toHaveLength(scenario.events.length);
    const doc = sim.document();
    const spec = scenario.events[0]!;
    const e = doc.Events[0]!;
    expect(e).toMatchObject({ EventType: spec.type, EventSource: spec.source, EventStatus: spec.appearsStarted ? 'Started' : 'Scheduled' });
    const resources = e.Resources as string[];
    const refs = spec.resources.map((r) => (r === 'self' ? 'vm0' : r === 'peer' ? 'vm1' : r === 'other' ? 'vm2' : r.name));
    expect(resources).toEqual(refs);
  });

  it('plays the canceled and rescheduled scenarios over time', async () => {
    sim.addEvent({ EventId: 'CANCEL-ME', noticeMs: 60_000 });
    sim.events[0]!.cancelAt = Date.now() + 100;
    sim.events[0]!.rescheduleAt = null;
    await waitFor(() => sim.events.length === 0, 'the cancellation');
    const [id] = sim.playScenario('degraded-hardware');
    const before = sim.events.find((e) => e.eventId === id)!.notBefore!;
    sim.events.find((e) => e.eventId === id)!.rescheduleAt = Date.now() + 50;
    await waitFor(() => sim.events.find((e) => e.eventId === id)!.notBefore! < before, 'NotBefore to move earlier');
  });
});

describe('IMDS simulator: control API', () => {
  it.each([
    ['POST', '/_sim/scenario', '{"name": "no-such"}', /unknown scenario/],
    ['POST', '/_sim/scenario', 'not json', /not JSON/],
    ['POST', '/_sim/scenario', '{"name": 7}', /expected/],
    ['POST', '/_sim/faults', '{"kind": "explode"}', /kind/],
    ['POST', '/_sim/faults', '{"kind": "status", "count": 0}', /count/],
    ['POST', '/_sim/events', '{"EventStatus": "Finished"}', /EventStatus/],
    ['POST', '/_sim/incarnation', '{"value": "x"}', /expected/],
    ['POST', '/_sim/document', '[]', /expected/],
  ])('%s %s %s -> JSON 400', async (method, path, body, message) => {
    const res = await fetch(`${url}${path}`, { method, body });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    const json = (await res.json()) as { error: { code: string; message: string } };
    expect(json.error.code).toBe('SIM_BAD_REQUEST');
    expect(json.error.message).toMatch(message);
  });

  it('loads scenarios, edits events, sets raw documents and incarnations', async () => {
    const played = (await (await post('/_sim/scenario', { name: 'user-reboot' }, {})).json()) as { eventIds: string[] };
    expect(played.eventIds).toHaveLength(1);
    const added = (await (await post('/_sim/events', { EventId: 'E1', EventType: 'Freeze' }, {})).json()) as { eventId: string };
    expect(added.eventId).toBe('E1');
    expect((await post('/_sim/events/E1/start', {}, {})).status).toBe(200);
    expect(sim.events.find((e) => e.eventId === 'E1')!.status).toBe('Started');
    expect((await fetch(`${url}/_sim/events/E1`, { method: 'DELETE' })).status).toBe(200);
    expect((await fetch(`${url}/_sim/events/E1`, { method: 'DELETE' })).status).toBe(404);
    await post('/_sim/incarnation', { value: 1 }, {});
    expect(((await (await get(SE)).json()) as { DocumentIncarnation: number }).DocumentIncarnation).toBe(1);
    await post('/_sim/document', { body: '{"DocumentIncarnation": 5, "Events": [' }, {});
    expect(await (await get(SE)).text()).toBe('{"DocumentIncarnation": 5, "Events": [');
    const state = (await (await get('/_sim/state', {})).json()) as { requestCount: number };
    expect(state.requestCount).toBeGreaterThan(0);
    expect((await fetch(`${url}/_sim/nowhere`)).status).toBe(404);
  });

  it('injects N faults, then answers normally', async () => {
    await post('/_sim/faults', { kind: 'status', status: 429, count: 2, retryAfterSec: 1 }, {});
    const a = await get(SE);
    expect(a.status).toBe(429);
    expect(a.headers.get('retry-after')).toBe('1');
    expect((await get(SE)).status).toBe(429);
    expect((await get(SE)).status).toBe(200);
    await post('/_sim/faults', { kind: 'garbage' }, {});
    expect(await (await get(SE)).text()).toMatch(/not json/);
    await post('/_sim/faults', { kind: 'reset' }, {});
    await expect(get(SE)).rejects.toThrow();
    await post('/_sim/faults', { kind: 'status', status: 500, target: 'compute' }, {});
    expect((await get(SE)).status).toBe(200);
    expect((await get('/metadata/instance/compute?api-version=2021-02-01')).status).toBe(500);
  });
});

describe('IMDS simulator: the managed identity token endpoint', () => {
  const TOKEN = '/metadata/identity/oauth2/token?api-version=2018-02-01';
  const UA = {
    clientId: '6c1f1e2a-3b4c-4d5e-8f60-718293a4b5c6',
    objectId: '0a9b8c7d-6e5f-4a3b-9c2d-1e0f2a3b4c5d',
    resourceId: '/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/ua',
  };
  const UB = {
    clientId: '1b2c3d4e-5f60-4718-9a2b-3c4d5e6f7a8b',
    objectId: '2c3d4e5f-6071-4829-ab3c-4d5e6f7a8b9c',
    resourceId: '/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/ub',
  };
  const token = async (query: string, headers: Record<string, string> = { metadata: 'true' }) => {
    const res = await get(`${TOKEN}${query}`, headers);
    return { status: res.status, body: (await res.json()) as Record<string, string> };
  };

  it('answers the documented JSON with a JWT for the resource, from the system-assigned identity', async () => {
    const before = Math.floor(Date.now() / 1000);
    const { status, body } = await token('&resource=https%3A%2F%2Fmanagement.azure.com%2F');
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual([
      'access_token',
      'client_id',
      'expires_in',
      'expires_on',
      'ext_expires_in',
      'not_before',
      'resource',
      'token_type',
    ]);
    expect(body).toMatchObject({
      resource: 'https://management.azure.com/',
      token_type: 'Bearer',
      expires_in: '86399',
      client_id: sim.identities.system.clientId,
    });
    const claims = readJwt(body.access_token!)!;
    expect(claims).toMatchObject({
      aud: 'https://management.azure.com/',
      oid: sim.identities.system.objectId,
      appid: sim.identities.system.clientId,
      xms_mirid: sim.compute().resourceId,
    });
    expect(Number(body.expires_on)).toBe(claims.exp);
    expect(claims.exp as number).toBeGreaterThanOrEqual(before + 86_399);
    expect(body.access_token!.split('.')[2]).toBe('');
  });

  it('names a user-assigned identity by client_id, object_id or msi_res_id, and serves the path with a trailing slash', async () => {
    sim.identities.configure({ userAssigned: [UA, UB] });
    for (const q of [`client_id=${UA.clientId}`, `object_id=${UA.objectId}`, `msi_res_id=${encodeURIComponent(UA.resourceId)}`]) {
      const { status, body } = await token(`&resource=api://x&${q}`);
      expect(status, q).toBe(200);
      expect(readJwt(body.access_token!)).toMatchObject({ aud: 'api://x', oid: UA.objectId, appid: UA.clientId, xms_mirid: UA.resourceId });
    }
    const slash = await get(`/metadata/identity/oauth2/token/?api-version=2018-02-01&resource=api://x&client_id=${UB.clientId}`, {
      metadata: 'true',
    });
    expect(readJwt(((await slash.json()) as { access_token: string }).access_token)).toMatchObject({ oid: UB.objectId });
  });

  it.each([
    ['no resource', '', 'invalid_request', "Required query variable 'resource' is missing"],
    [
      'an identity not assigned',
      '&resource=api://x&client_id=9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a',
      'invalid_request',
      'Identity not found',
    ],
    [
      'two ids',
      `&resource=api://x&client_id=${UA.clientId}&object_id=${UA.objectId}`,
      'invalid_request',
      'Only one of client_id, object_id or msi_res_id may be specified',
    ],
  ])('answers 400 for %s, with the documented error', async (_n, query, error, description) => {
    sim.identities.configure({ userAssigned: [UA] });
    expect(await token(query)).toEqual({ status: 400, body: { error, error_description: description } });
  });

  it('without a system-assigned identity: the only user-assigned one, or 400 when there are several and none is named', async () => {
    sim.identities.configure({ systemAssigned: false, userAssigned: [UA] });
    expect(readJwt((await token('&resource=api://x')).body.access_token!)).toMatchObject({ oid: UA.objectId });
    sim.identities.configure({ userAssigned: [UA, UB] });
    expect((await token('&resource=api://x')).body.error_description).toMatch(/^Multiple user assigned identities exist/);
    sim.identities.configure({ userAssigned: [] });
    expect((await token('&resource=api://x')).body.error_description).toBe('Identity not found');
  });

  it('refuses a request without Metadata: true, with another api-version or method; injects faults; is configured through the control API', async () => {
    expect(await token('&resource=api://x', {})).toEqual({
      status: 400,
      body: { error: 'invalid_request', error_description: 'Required metadata header not specified' },
    });
    expect((await get('/metadata/identity/oauth2/token?api-version=2017-03-01&resource=api://x')).status).toBe(400);
    expect((await post(`${TOKEN}&resource=api://x`, {})).status).toBe(405);
    sim.injectFault({ kind: 'status', status: 500, target: 'token', count: 1 });
    expect((await token('&resource=api://x')).status).toBe(500);
    expect((await token('&resource=api://x')).status).toBe(200);
    // a token fault leaves Scheduled Events alone
    sim.injectFault({ kind: 'status', status: 503, target: 'token', count: 1 });
    expect((await get(SE)).status).toBe(200);
    const configured = await post('/_sim/identity', { systemAssigned: false, userAssigned: [UA], tokenLifetimeSec: 60 }, {});
    expect(configured.status).toBe(200);
    expect(await configured.json()).toMatchObject({ systemAssigned: null, userAssigned: [UA], tokenLifetimeSec: 60 });
    expect((await post('/_sim/identity', { tokenLifetimeSec: 0 }, {})).status).toBe(400);
    const state = (await (await get('/_sim/identity', {})).json()) as { tokenRequests: { asked: string; status: number }[] };
    expect(state.tokenRequests.map((r) => r.status)).toEqual([200]);
  });
});
