/**
 * An IMDS outage at the default poll interval and pause cap: through a run of 500s long enough for
 * the backoff to reach its cap, every pause the bridge takes between two reads is at most the cap
 * (5 s: a Spot eviction gives only 30 s of notice), and after recovery the next read is good and
 * /readyz follows. The pauses are the ones the bridge chose and said, not times measured here.
 */
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.ts';
import { Bridge } from '../../src/daemon/bridge.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { captureLogger, tempDir, waitFor } from '../helpers.ts';

it('never pauses longer than the cap between two reads during an outage, and reads again at once after it', async () => {
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
  const { logger, lines } = captureLogger();
  const bridge = await Bridge.create({ config, logger });
  try {
    await bridge.start();
    await waitFor(() => bridge.status().ready, 'the first good read');
    const reads = () => sim.requests.filter((r) => r.path === '/metadata/scheduledevents' && r.method === 'GET');
    const mark = reads().length;
    sim.injectFault({ kind: 'status', status: 500, count: 1_000_000 });
    // the ceiling of the jittered backoff doubles from 1 s and meets the 5 s cap at the fourth failure
    await waitFor(
      () =>
        reads()
          .slice(mark)
          .filter((r) => r.status === 500).length >= 8,
      'eight failed reads',
      60_000,
      100,
    );
    sim.clearFaults();
    const recovered = reads().length;
    // good: 200, or 304 (the document unchanged since the ETag the bridge holds)
    await waitFor(
      () =>
        reads()
          .slice(recovered)
          .some((r) => r.status !== 500),
      'a good read after recovery',
      10_000,
    );
    await waitFor(async () => (await fetch(`${bridge.observabilityUrl}/readyz`)).status === 200, '/readyz 200', 10_000);

    // every read of the outage failed and was followed by one pause the bridge chose, never longer than the cap
    const failed = lines.filter((l) => l.msg === 'IMDS read failed; no transitions from this poll');
    expect(failed.length).toBeGreaterThanOrEqual(8);
    expect(failed.length).toBe(reads().filter((r) => r.status === 500).length);
    const pauses = failed.map((l) => l.retryInMs as number);
    expect(pauses.every((ms) => ms >= config.imds.pollIntervalMs && ms <= config.imds.maxRetryPauseMs)).toBe(true);
    // the reads went on through the outage: one after each pause, the first good one right after the last
    expect(
      reads()
        .slice(mark, recovered)
        .every((r) => r.status === 500),
    ).toBe(true);
    expect(lines.some((l) => l.msg === 'polls recovered' && (l.failures as number) === failed.length)).toBe(true);
  } finally {
    await bridge.stop(1000);
    await sim.close();
    dir.cleanup();
  }
}, 90_000);
