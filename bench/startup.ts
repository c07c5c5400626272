/**
 * Start-up to the first Scheduled Events read, of this checkout's package against another
 * checkout's (an earlier commit, built with `npm run build`), started alternately so that both
 * meet the same machine: the median of `rounds` warm starts each (a compile cache already
 * written by a first start), and that first start. Each start is a webhook and file bridge as
 * users run it (YAML, `info`), with the unit's environment (scripts/launch.ts).
 *
 *   node bench/startup.ts [--against DIR] [--rounds N]     (default: 21 rounds; DIR: none)
 */
import { mkdtempSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ImdsSimulator } from '../src/simulator/server.ts';
import { HttpPeer } from '../testkit/http-peer.ts';
import { bridgeConfig, dir, log, PACKAGE_ENV, ROOT, sleep, spawnProcess, stop } from './common.ts';

const { values } = parseArgs({ options: { against: { type: 'string' }, rounds: { type: 'string', default: '21' } } });
const rounds = Number(values.rounds);
const checkouts = [{ name: 'this checkout', bin: join(ROOT, 'bin', 'se-bridge.js') }];
if (values.against !== undefined)
  checkouts.push({ name: resolve(values.against), bin: join(resolve(values.against), 'bin', 'se-bridge.js') });

/** startOnce: milliseconds from spawn to the first GET of /metadata/scheduledevents (NaN after 4 s). */
async function startOnce(bin: string, cache: string, hookUrl: string, id: string): Promise<number> {
  const sim = new ImdsSimulator({ vmName: 'startup-vm', tickMs: 50 });
  await sim.listen(0);
  const sinks = [
    { name: 'hook', type: 'webhook', url: hookUrl },
    { name: 'audit', type: 'file', path: join(dir, `startup-${id}.jsonl`) },
  ];
  const config = bridgeConfig(`startup-${id}`, { imds: { endpoint: sim.url }, sinks }, true);
  const t0 = performance.now();
  const child = spawnProcess([bin, 'run', '--config', config], { CACHE_DIRECTORY: cache, ...PACKAGE_ENV });
  let ms = NaN;
  for (let k = 0; k < 2000 && performance.now() - t0 < 4000; k++) {
    if (sim.requests.some((q) => q.path === '/metadata/scheduledevents')) {
      ms = performance.now() - t0;
      break;
    }
    await sleep(2);
  }
  await stop(child);
  await sim.close();
  return ms;
}

const hook = new HttpPeer();
await hook.listen();
const samples = checkouts.map(() => ({ first: NaN, warm: [] as number[] }));
const caches = checkouts.map((_, i) => mkdtempSync(join(dir, `startup-cache-${i}-`)));
for (let r = 0; r <= rounds; r++) {
  for (const [i, c] of checkouts.entries()) {
    const ms = await startOnce(c.bin, caches[i]!, hook.url, `${i}-${r}`);
    if (r === 0) samples[i]!.first = ms;
    else samples[i]!.warm.push(ms);
  }
}
await hook.close();
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
for (const [i, c] of checkouts.entries()) {
  const s = samples[i]!;
  log(
    `startup: ${c.name}: first start ${Math.round(s.first)} ms; warm, median of ${rounds}: ${Math.round(median(s.warm))} ms (min ${Math.round(Math.min(...s.warm))}, max ${Math.round(Math.max(...s.warm))})`,
  );
}
