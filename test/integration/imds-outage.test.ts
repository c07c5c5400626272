/**
 * An IMDS outage in real time, at the default poll interval and pause cap: during 20 s of 500s
 * the bridge keeps reading at least every 6 s (a Spot eviction gives only 30 s of notice), and
 * after recovery the first good read, and /readyz, follow within 6 s.
 */
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.ts';
import { Bridge } from '../../src/daemon/bridge.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { captureLogger, tempDir, waitFor } from '../helpers.ts';

it('never looks away from IMDS for more than 6 s during and after a 20 s outage', async () => {
  const sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 20 });
  await sim.listen(0);
  const dir = tempDir();
  const config = validateConfig(
    {
      imds: { endpoint: sim.url },
      state: { path: join(dir.path, 's.db') },
      observability: { listen: '127.0.0.1:0' },
      identity: { vmName: 'vm0' },
    },
    't',
    {},
  );
  expect(config.imds.pollIntervalMs).toBe(1000);
  expect(config.imds.maxRetryPauseMs).toBe(5000);
  const { logger } = captureLogger();
  const bridge = await Bridge.create({ config, logger });
  try {
    await bridge.start();
    await waitFor(() => bridge.status().ready, 'the first good read');
    const reads = () => sim.requests.filter((r) => r.path === '/metadata/scheduledevents' && r.method === 'GET');
    const outageStart = Date.now();
    sim.injectFault({ kind: 'status', status: 500, count: 1_000_000 });
    await new Promise((r) => setTimeout(r, 20_000));
    sim.clearFaults();
    const recovered = Date.now();
    const firstGood = await waitFor(() => reads().find((r) => r.at >= recovered && r.status !== 500), 'a good read after recovery', 10_000);
    await waitFor(async () => (await fetch(`${bridge.observabilityUrl}/readyz`)).status === 200, '/readyz 200', 10_000);

    const during = reads().filter((r) => r.at >= outageStart - 1500 && r.at <= firstGood.at);
    expect(during.filter((r) => r.status === 500).length).toBeGreaterThanOrEqual(4);
    const gaps = during.slice(1).map((r, i) => r.at - during[i]!.at);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(6000);
    expect(firstGood.at - recovered).toBeLessThanOrEqual(6000);
  } finally {
    await bridge.stop(1000);
    await sim.close();
    dir.cleanup();
  }
}, 60_000);
