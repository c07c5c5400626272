/**
 * Runs the health block's Prometheus check against a real Prometheus server (Debian's
 * `prometheus` package, or PROMETHEUS_BIN), started here on 127.0.0.1 with an empty scrape
 * configuration: outside `npm test`, since Prometheus does not come from `npm ci`. It checks what
 * `npm test` checks against the stand-in (testkit/prometheus-standin.ts): no sample is healthy,
 * a sample is not, a query Prometheus refuses is not. Prints each answer; exits 1 on a mismatch.
 *
 *   node scripts/check-prometheus-health.ts
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { HealthConfig } from '../src/health/config.ts';
import { HealthMonitor } from '../src/health/monitor.ts';

const bin = process.env.PROMETHEUS_BIN ?? '/usr/bin/prometheus';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const dir = mkdtempSync(join(tmpdir(), 'se-bridge-prometheus-'));
const port = await freePort();
writeFileSync(join(dir, 'prometheus.yml'), 'global: { scrape_interval: 15s }\nscrape_configs: []\n');
const server = spawn(
  bin,
  [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
  { stdio: 'ignore' },
);
const url = `http://127.0.0.1:${port}`;
let failed = 0;
try {
  // bounded: 60 tries, 250 ms apart
  for (let i = 0; i < 60; i++) {
    const ready = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(1000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (i === 59) throw new Error(`${bin} did not get ready on ${url}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const version = (await (await fetch(`${url}/api/v1/status/buildinfo`)).json()) as { data?: { version?: string } };
  console.log(`Prometheus ${version.data?.version ?? '?'} on ${url}`);
  const cases: [string, boolean, RegExp | null][] = [
    ['vector(1) > 2', true, null],
    ['vector(1) > 0', false, /^vector\(1\) > 0: 1 sample$/],
    ['up{job="kafka"} == 0', true, null],
    ['sum(', false, /^Prometheus answered 400: /],
  ];
  for (const [query, healthy, detail] of cases) {
    const monitor = new HealthMonitor(HealthConfig.parse({ prometheus: { url, query }, intervalSeconds: 5 }), pino({ level: 'silent' }));
    const state = await monitor.check();
    monitor.close();
    const ok = state.healthy === healthy && (detail === null || detail.test(state.detail ?? ''));
    if (!ok) failed++;
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${query}: ${state.healthy ? 'healthy' : `not healthy (${state.detail})`}`);
  }
} finally {
  server.kill();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failed === 0 ? 0 : 1);
