/**
 * Delivery figures:
 * - isolation: change-to-delivery latency at a healthy webhook, alone and next to a webhook
 *   that never answers (both behind one bridge, polling every 200 ms);
 * - a 10-minute outage under the default delivery policy: attempts made and the wait between
 *   the peer's recovery and the delivery (Monte Carlo over the dispatcher's own backoff).
 */
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { pino } from 'pino';
import { validateConfig } from '../src/config/load.ts';
import { Bridge } from '../src/core/bridge.ts';
import { fullJitter } from '../src/core/backoff.ts';
import { ImdsSimulator } from '../src/imds/simulator/server.ts';
import { DeliveryConfig } from '../sinks/types.ts';
import { HttpPeer } from '../test/peers/http-peer.ts';

const quick = process.argv.includes('--quick');
const q = (s: number[], p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;

async function isolation(withStuck: boolean, changes: number) {
  const dir = mkdtempSync(join(tmpdir(), 'se-bridge-bench-'));
  const sim = new ImdsSimulator({ tickMs: 20 });
  await sim.listen(0);
  const healthy = new HttpPeer();
  await healthy.listen();
  const stuck = new HttpPeer();
  stuck.answer = () => ({ hang: true });
  await stuck.listen();
  const sinks: Record<string, unknown>[] = [{ name: 'healthy', type: 'webhook', url: healthy.url }];
  if (withStuck) sinks.push({ name: 'stuck', type: 'webhook', url: stuck.url, delivery: { timeoutMs: 600_000 } });
  const config = validateConfig({ imds: { endpoint: sim.url, pollIntervalMs: 200 }, state: { path: join(dir, 's.db') }, sinks }, 'bench', {});
  const bridge = await Bridge.create({ config, logger: pino({ level: 'silent' }) });
  await bridge.start();
  const samples: number[] = [];
  for (let i = 0; i < changes; i++) {
    await new Promise((r) => setTimeout(r, 20 + Math.random() * 300));
    const before = healthy.requests.length;
    const t = Date.now();
    sim.addEvent({ noticeMs: 3_600_000 });
    for (let k = 0; k < 200 && healthy.requests.length === before; k++) await new Promise((r) => setTimeout(r, 2));
    samples.push(healthy.requests[before]!.at - t);
  }
  await bridge.stop(200);
  await Promise.all([healthy.close(), stuck.close(), sim.close()]);
  rmSync(dir, { recursive: true, force: true });
  return samples.sort((a, b) => a - b);
}

function outage(outageMs: number, trials: number) {
  const d = DeliveryConfig.parse({});
  const attempts: number[] = [];
  const waits: number[] = [];
  let deadLettered = 0;
  for (let t = 0; t < trials; t++) {
    let now = 0;
    let n = 0;
    for (;;) {
      n += 1; // an attempt at `now`
      if (now >= outageMs) break; // the peer is back: delivered
      if (n >= d.maxAttempts || now > d.maxAgeMs) {
        deadLettered += 1;
        break;
      }
      now += Math.max(fullJitter(n - 1, d.initialBackoffMs, d.maxBackoffMs), 0) + 5; // +5 ms for the failed request
    }
    attempts.push(n);
    waits.push(now - outageMs);
  }
  attempts.sort((a, b) => a - b);
  waits.sort((a, b) => a - b);
  return { trials, deadLettered, attempts: { p50: q(attempts, 0.5), max: attempts.at(-1)! }, recoveryWaitMs: { p50: Math.round(q(waits, 0.5)), p90: Math.round(q(waits, 0.9)), max: Math.round(waits.at(-1)!) }, policy: d };
}

const n = quick ? 40 : 150;
const alone = await isolation(false, n);
const beside = await isolation(true, n);
const o = outage(10 * 60_000, quick ? 2000 : 20000);
const fmt = (s: number[]) => `p50 ${q(s, 0.5)} ms, p90 ${q(s, 0.9)} ms, p99 ${q(s, 0.99)} ms, max ${s.at(-1)} ms`;
process.stdout.write(
  `\n| measurement | figure |\n|---|---|\n` +
    `| change to healthy webhook, alone (${n} changes, poll 200 ms) | ${fmt(alone)} |\n` +
    `| change to healthy webhook, beside a webhook that never answers | ${fmt(beside)} |\n` +
    `| 10-minute outage, default policy (${o.trials} simulated runs): attempts | median ${o.attempts.p50}, max ${o.attempts.max}; dead-lettered: ${o.deadLettered} |\n` +
    `| 10-minute outage: wait from recovery to delivery | p50 ${o.recoveryWaitMs.p50} ms, p90 ${o.recoveryWaitMs.p90} ms, max ${o.recoveryWaitMs.max} ms |\n`,
);
