import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { SCENARIOS } from '../../src/simulator/scenarios.ts';
import { WireDocument } from '../../src/imds/wire.ts';
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
  fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });

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
    const e = sim.addEvent({ EventType: 'Freeze', noticeMs: 150, startedMs: 150, DurationInSeconds: 5 });
    const doc = async () => WireDocument.parse(await (await get(SE)).json());
    const d1 = await doc();
    expect(d1.DocumentIncarnation).toBe(2);
    expect(d1.Events[0]).toMatchObject({ EventId: e.eventId, EventStatus: 'Scheduled', Resources: ['vm0'] });
    expect(d1.Events[0]!.NotBefore).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
    const started = await waitFor(async () => {
      const d = await doc();
      return d.Events[0]?.EventStatus === 'Started' ? d : null;
    }, 'the event to start at NotBefore');
    expect(started.DocumentIncarnation).toBe(3);
    expect(started.Events[0]!.NotBefore).toBe('');
    const gone = await waitFor(async () => {
      const d = await doc();
      return d.Events.length === 0 ? d : null;
    }, 'the started event to disappear');
    expect(gone.DocumentIncarnation).toBe(4);
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
