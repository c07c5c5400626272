/**
 * The shipped alerts against /metrics recorded from a running bridge: a real bridge (real
 * SQLite, the IMDS simulator, webhook peers on 127.0.0.1) is scraped as Prometheus would, each
 * scrape stamped one minute after the last, and every rule of config/prometheus/alerts.yaml is
 * evaluated over the recording (testkit/promql.ts): a sink whose endpoint answers 503 is stuck,
 * one whose endpoint refuses the event has dead letters, a healthy one has neither, and IMDS
 * failing makes the VM blind.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import parsePrometheus from 'parse-prometheus-text-format';
import { parse as yaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { startBridge, type Harness } from '../../testkit/harness.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { firingAt, type AlertRule, type Series } from '../../testkit/promql.ts';
import { ROOT, tempDir, waitFor } from '../helpers.ts';

const rules = (
  yaml(readFileSync(join(ROOT, 'config', 'prometheus', 'alerts.yaml'), 'utf8')) as { groups: { rules: AlertRule[] }[] }
).groups.flatMap((g) => g.rules);
const MINUTE = 60_000;

let sim: ImdsSimulator;
let down: HttpPeer;
let refusing: HttpPeer;
let h: Harness;
let dir: ReturnType<typeof tempDir>;
/** Every scrape so far, as series with job and instance labels, one minute apart. */
const recorded = new Map<string, { labels: Record<string, string>; samples: [number, number][] }>();
let scrapes = 0;

async function scrape(): Promise<void> {
  const at = scrapes++ * MINUTE;
  const text = await (await fetch(`${h.bridge.observabilityUrl}/metrics`)).text();
  const put = (labels: Record<string, string>, value: number) => {
    const key = JSON.stringify(Object.entries(labels).sort());
    const s = recorded.get(key) ?? { labels, samples: [] };
    s.samples.push([at, value]);
    recorded.set(key, s);
  };
  const target = { job: 'se-bridge', instance: 'vm0:9464' };
  put({ __name__: 'up', ...target }, 1);
  for (const f of parsePrometheus(text)) {
    if (f.type !== 'COUNTER' && f.type !== 'GAUGE') continue;
    for (const m of f.metrics) put({ __name__: f.name, ...target, ...m.labels }, Number(m.value));
  }
}

const series = (): Series[] => [...recorded.values()];
const firing = (name: string) =>
  firingAt(
    rules.find((r) => r.alert === name)!,
    series(),
    (scrapes - 1) * MINUTE,
    MINUTE,
  ).map((a) => a.labels.sink ?? a.labels.instance);

beforeAll(async () => {
  dir = tempDir();
  sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
  await sim.listen(0);
  down = new HttpPeer();
  await down.listen();
  down.answer = () => ({ status: 503, body: 'maintenance' });
  refusing = new HttpPeer();
  await refusing.listen();
  refusing.answer = () => ({ status: 400, body: 'bad event' });
  h = await startBridge({
    sim,
    dir: dir.path,
    config: { observability: { listen: '127.0.0.1:0' }, imds: { endpoint: sim.url, pollIntervalMs: 200, maxRetryPauseMs: 200 } },
    sinks: (d) => [
      { name: 'audit', type: 'file', path: join(d, 'events.jsonl') },
      { name: 'stuck', type: 'webhook', url: `${down.url}/hook`, delivery: { initialBackoffMs: 100, maxBackoffMs: 200 } },
      { name: 'refuses', type: 'webhook', url: `${refusing.url}/hook` },
    ],
  });
});
afterAll(async () => {
  await h?.stop();
  await Promise.all([sim?.close(), down?.close(), refusing?.close()]);
  dir?.cleanup();
});

describe('the shipped alerts over a recording of a real bridge', () => {
  it('a healthy sink fires nothing; a sink answering 503 is stuck after 10 minutes; a refused event is a dead letter at once', async () => {
    await scrape();
    expect(rules.map((r) => [r.alert, firing(r.alert)])).toEqual([
      ['SeBridgeBlind', []],
      ['SeBridgeDeliveryStuck', []],
      ['SeBridgeDeadLetters', []],
      ['SeBridgeFleetPaused', []],
      ['SeBridgeFleetApprovalHeld', []],
    ]);
    sim.addEvent({ noticeMs: 3_600_000 });
    await waitFor(
      () => h.bridge.store.outbox.deadLetters('refuses').length === 1 && down.requests.length >= 2,
      'a dead letter and retries',
    );
    await scrape();
    expect(firing('SeBridgeDeadLetters')).toEqual(['refuses']);
    expect(firing('SeBridgeDeliveryStuck')).toEqual([]); // pending: not yet 10 minutes
    for (let k = 0; k < 11; k++) await scrape();
    expect(firing('SeBridgeDeliveryStuck')).toEqual(['stuck']);
    expect(firing('SeBridgeDeadLetters')).toEqual(['refuses']);
    expect(firing('SeBridgeBlind')).toEqual([]);
  });

  it('IMDS failing ten times in a row makes the VM blind, two minutes later', async () => {
    sim.injectFault({ kind: 'status', status: 500, count: 1000 });
    await waitFor(
      async () =>
        /sebridge_imds_consecutive_failures (1\d|[2-9]\d)/.test(await (await fetch(`${h.bridge.observabilityUrl}/metrics`)).text()),
      '10 failed reads',
    );
    await scrape();
    expect(firing('SeBridgeBlind')).toEqual([]);
    await scrape();
    await scrape();
    expect(firing('SeBridgeBlind')).toEqual(['vm0:9464']);
    sim.clearFaults();
  });
});
