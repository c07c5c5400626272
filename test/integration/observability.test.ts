/**
 * Metrics and health after a simulated scenario, against the real endpoints.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.ts';
import { startBridge } from '../../testkit/harness.ts';
import { Bridge } from '../../src/daemon/bridge.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { silentLogger, tempDir, waitFor } from '../helpers.ts';
import { getFrom, openFrom } from '../../testkit/sockets.ts';

let sim: ImdsSimulator;
let dir: ReturnType<typeof tempDir>;
let bridge: Bridge | null = null;
let peer: HttpPeer;
beforeEach(async () => {
  sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
  await sim.listen(0);
  peer = new HttpPeer();
  await peer.listen();
  dir = tempDir();
});
afterEach(async () => {
  await bridge?.stop(500);
  bridge = null;
  await peer.close();
  await sim.close();
  dir.cleanup();
});

async function run(extra: Record<string, unknown> = {}) {
  const h = await startBridge({
    sim,
    dir: dir.path,
    sinks: [
      { name: 'ops', type: 'webhook', url: peer.url },
      { name: 'broken', type: 'webhook', url: peer.url + '/broken', delivery: { initialBackoffMs: 20, maxBackoffMs: 40, maxAttempts: 2 } },
    ],
    config: { imds: { requestTimeoutMs: 300 }, observability: { listen: '127.0.0.1:0', readyFailureThreshold: 2 }, ...extra },
  });
  bridge = h.bridge;
  return bridge.observabilityUrl!;
}
const get = async (url: string) => {
  const r = await fetch(url);
  return { status: r.status, text: await r.text() };
};
function metric(text: string, name: string, labels = ''): number | undefined {
  const line = text
    .split('\n')
    .find(
      (l) =>
        l.startsWith(`${name}${labels ? `{${labels}}` : ''} `) ||
        (labels === '' && l.startsWith(`${name}{`) === false && l.startsWith(`${name} `)),
    );
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

describe('metrics and health', () => {
  it('reports polls, IMDS durations, incarnation, events, transitions, deliveries, outbox and dead letters', async () => {
    peer.answer = (r) => (r.url === '/broken' ? { status: 500 } : { status: 204 });
    const url = await run();
    const e = sim.addEvent({ EventType: 'Freeze', noticeMs: 300, startedMs: 600_000, DurationInSeconds: 5 });
    await waitFor(() => peer.requests.filter((r) => r.url === '/').length === 2, 'scheduled and started delivered');
    await waitFor(() => bridge!.store.outbox.deadLetters().length === 2, 'the broken sink to dead-letter both');
    // a read after the event Started finds nothing new (on a busy machine it may come after the dead letters)
    const unchanged = async () => metric((await get(`${url}/metrics`)).text, 'sebridge_polls_total', 'result="unchanged",code=""') ?? 0;
    await waitFor(async () => (await unchanged()) >= 1, 'a read that found nothing new', 30_000, 100);
    const { status, text } = await get(`${url}/metrics`);
    expect(status).toBe(200);
    expect(metric(text, 'sebridge_polls_total', 'result="changed",code=""')).toBeGreaterThanOrEqual(2);
    expect(metric(text, 'sebridge_polls_total', 'result="unchanged",code=""')).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/sebridge_imds_request_duration_seconds_count\{request="scheduledevents",outcome="200"\} \d+/);
    expect(text).toMatch(/sebridge_imds_request_duration_seconds_count\{request="compute",outcome="200"\} 1/);
    expect(metric(text, 'sebridge_document_incarnation')).toBe(sim.incarnation);
    expect(metric(text, 'sebridge_events', 'type="Freeze",status="Started"')).toBe(1);
    expect(metric(text, 'sebridge_transitions_total', 'transition="scheduled",drill="false"')).toBe(1);
    expect(metric(text, 'sebridge_transitions_total', 'transition="started",drill="false"')).toBe(1);
    expect(metric(text, 'sebridge_deliveries_total', 'sink="ops",outcome="delivered"')).toBe(2);
    expect(metric(text, 'sebridge_deliveries_total', 'sink="broken",outcome="dead-letter"')).toBe(2);
    expect(metric(text, 'sebridge_dead_letters', 'sink="broken"')).toBe(2);
    expect(text).toMatch(/sebridge_change_to_delivery_seconds_count\{sink="ops"\} 2/);
    expect(text).toMatch(/sebridge_delivery_duration_seconds_count\{sink="ops"\} 2/);
    expect(text).toMatch(/sebridge_build_info\{version="[\d.]+",node="v24/);
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
    expect(text).not.toMatch(/sebridge_(process|nodejs)_/);
    expect(text).not.toMatch(/sebridge_outbox_depth\{sink="ops"\} [1-9]/);
    expect(e.eventId).toBeTruthy();
  });

  it('counts approvals by path and result', async () => {
    const url = await run({ approval: { rules: [{ match: {}, action: 'approve' }] } });
    sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => sim.startRequests.length === 1, 'the policy approval');
    await waitFor(
      async () => metric((await get(`${url}/metrics`)).text, 'sebridge_approvals_total', 'via="policy",result="approved"') === 1,
      'the approval counter',
    );
    expect(metric((await get(`${url}/metrics`)).text, 'sebridge_transitions_total', 'transition="approved",drill="false"')).toBe(1);
  });

  it('flips /readyz with IMDS faults, and /livez stays up', async () => {
    sim.injectFault({ kind: 'status', status: 500, count: 1_000_000 });
    const url = await run();
    expect((await get(`${url}/readyz`)).status).toBe(503);
    expect(JSON.parse((await get(`${url}/readyz`)).text)).toMatchObject({ status: 'not-ready', reason: 'no good IMDS read yet' });
    expect((await get(`${url}/livez`)).status).toBe(200);
    sim.clearFaults();
    await waitFor(async () => (await get(`${url}/readyz`)).status === 200, 'ready after recovery', 20_000);
    sim.injectFault({ kind: 'hang', count: 1_000_000 });
    await waitFor(async () => (await get(`${url}/readyz`)).status === 503, 'not ready while reads time out', 20_000);
    const body = JSON.parse((await get(`${url}/readyz`)).text) as { reason: string };
    expect(body.reason).toMatch(/IMDS reads failed in a row \(IMDS_TIMEOUT\)/);
    const text = (await get(`${url}/metrics`)).text;
    expect(metric(text, 'sebridge_polls_total', 'result="error",code="IMDS_TIMEOUT"')).toBeGreaterThanOrEqual(2);
    expect(metric(text, 'sebridge_imds_consecutive_failures')).toBeGreaterThanOrEqual(2);
    sim.clearFaults();
    await waitFor(async () => (await get(`${url}/readyz`)).status === 200, 'ready again', 20_000);
    expect((await get(`${url}/nope`)).status).toBe(404);
  });

  it('one address holds at most 16 connections: the 17th is answered 429 with Retry-After and closed; everyone else is served', async () => {
    const url = await run();
    const held = await Promise.all(Array.from({ length: 16 }, () => openFrom(url, '127.0.0.1')));
    const over = await getFrom(url, '127.0.0.1', '/livez');
    expect(over).toMatch(/^HTTP\/1\.1 429 /);
    expect(over).toMatch(/\r\nretry-after: 1\r\n/i);
    expect(over).toContain('"code":"TOO_MANY_CONNECTIONS"');
    expect(await getFrom(url, '127.0.0.3', '/livez')).toMatch(/^HTTP\/1\.1 200 /);
    for (const h of held) h.socket.destroy();
  });

  it('goes on without the endpoints when the port is taken', async () => {
    const blocker = new HttpPeer();
    await blocker.listen();
    try {
      const port = new URL(blocker.url).port;
      const config = validateConfig(
        {
          imds: { endpoint: sim.url, pollIntervalMs: 200 },
          state: { path: join(dir.path, 'b.db') },
          observability: { listen: `127.0.0.1:${port}` },
        },
        't',
        {},
      );
      bridge = await Bridge.create({ config, logger: silentLogger });
      await bridge.start();
      expect(bridge.observabilityUrl).toBeNull();
      sim.addEvent({ noticeMs: 600_000 });
      await waitFor(() => bridge!.store.journal.all().length === 1, 'the bridge still works');
    } finally {
      await blocker.close();
    }
  });
});
