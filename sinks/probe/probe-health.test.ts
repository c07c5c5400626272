/**
 * The probe sink waiting for health (`health: true`), over the wire: a bridge with a health
 * block of its own (no fleet), whose HTTP check asks a server on 127.0.0.1 whose answer the test
 * sets; the IMDS simulator schedules and completes a maintenance. After it the probe answers 200
 * only once the health check passes, not once the event is over.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Metrics } from '../../src/observability/metrics.ts';
import { startBridge, stopAll } from '../../testkit/harness.ts';
import { configProblems, freePort, waitFor } from '../../test/helpers.ts';

afterEach(stopAll);

let status = 200;
let service: Server;
beforeAll(async () => {
  service = createServer((_req, res) => res.writeHead(status).end());
  await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  service.closeAllConnections();
  await new Promise((resolve) => service.close(resolve));
});

const ask = async (port: number) => {
  const res = await fetch(`http://127.0.0.1:${port}/probe`, { signal: AbortSignal.timeout(5000) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

describe('probe sink with health: true', () => {
  it('is out of the balancer while the health check fails, and after a maintenance until it passes again', async () => {
    status = 200;
    const port = await freePort();
    const healthUrl = `http://127.0.0.1:${(service.address() as AddressInfo).port}/healthz`;
    const h = await startBridge({
      config: {
        imds: { pollIntervalMs: 200 },
        observability: { listen: '127.0.0.1:0' },
        health: { http: { url: healthUrl }, intervalSeconds: 1, settleSeconds: 0 },
      },
      sinks: (dir) => [
        { name: 'audit', type: 'file', path: join(dir, 'events.jsonl') },
        { name: 'lb', type: 'probe', listen: `127.0.0.1:${port}`, drainSeconds: 0, health: true },
      ],
    });
    await waitFor(async () => (await ask(port)).status === 200, 'in service: nothing pending, healthy');
    const health = async () =>
      ((await (await fetch(`${h.bridge.observabilityUrl}/readyz`)).json()) as { health?: { healthy?: boolean } }).health;
    expect(await health()).toMatchObject({ healthy: true, since: expect.any(String) });

    // the service fails with nothing pending: out of the balancer, and says why
    status = 503;
    const sick = await waitFor(async () => {
      const a = await ask(port);
      return a.status === 503 ? a : null;
    }, 'out of service while unhealthy');
    expect(sick.body).toMatchObject({
      status: 'out-of-service',
      reason: expect.stringMatching(/health checks do not pass .*answered 503, not 200$/),
    });
    status = 200;
    await waitFor(async () => (await ask(port)).status === 200, 'in service again once healthy');

    // a maintenance: out for the event; the service is down through it and after it
    const e = h.sim.addEvent({ EventType: 'Freeze', noticeMs: 600_000, startedMs: 600_000 });
    await waitFor(async () => (await ask(port)).body.eventId === e.eventId, 'out of service for the event');
    status = 503;
    await waitFor(async () => (await health())?.healthy === false, 'the check sees the service down');
    h.sim.startEvent(e.eventId);
    await waitFor(() => h.kinds().includes(`started:${e.eventId}`), 'the start');
    h.sim.removeEvent(e.eventId);
    await waitFor(() => h.kinds().includes(`completed:${e.eventId}`), 'the completion');
    // the event is over, the service is not up: still out of the balancer (the check stays 503 until the test says)
    const after = await ask(port);
    expect(after.status).toBe(503);
    expect(after.body.reason).toMatch(/health checks do not pass/);
    status = 200;
    await waitFor(async () => (await ask(port)).status === 200, 'back in service once healthy');
    const metrics = await h.bridge.metrics.registry.metrics();
    expect(metrics).toMatch(/^sebridge_probe_in_service\{sink="lb"\} 1$/m);
    expect(metrics).toMatch(/^sebridge_health_healthy 1$/m);
    expect(metrics).toMatch(/^sebridge_health_checks_total\{result="unhealthy"\} [1-9]\d*$/m);
    // without health checks the series are not there (a 0 would read as unhealthy)
    expect(await new Metrics().registry.metrics()).not.toMatch(/sebridge_health_/);
  });

  it('needs a health block to wait for, and one only', () => {
    const probe = { name: 'lb', type: 'probe', listen: '127.0.0.1:9000', health: true };
    const check = { http: { url: 'http://127.0.0.1:1/h' } };
    const problems = configProblems;
    expect(problems({ sinks: [probe] })).toEqual([
      'sinks[0].health: true needs health checks to wait for: a health block at the top, or fleet.health',
    ]);
    expect(problems({ sinks: [probe], health: check })).toEqual([]);
    const fleet = { group: 'g', maxUnavailable: 1, store: { type: 'kubernetes', namespace: 'n' } };
    expect(problems({ sinks: [probe], fleet: { ...fleet, health: check } })).toEqual([]);
    expect(problems({ sinks: [probe], health: check, fleet: { ...fleet, health: check } })).toEqual([
      'health: is given twice, here and as fleet.health; keep one (the fleet budget and the probe share it)',
    ]);
    expect(problems({ health: { intervalSeconds: 5 } })).toEqual([expect.stringMatching(/^health: needs at least one check/)]);
  });
});
