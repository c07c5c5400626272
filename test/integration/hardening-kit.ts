/** The harness of the hardening tests: a simulator and one or more bridges (one per VM name), each writing its own file; all cleaned up after each test. */
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { ImdsSimulator, type SimulatorOptions } from '../../src/simulator/server.ts';
import { startBridge } from '../../testkit/harness.ts';
import { tempDir } from '../helpers.ts';

export interface Delivered {
  id: string;
  type: string;
  subject: string;
  source: string;
  data: Record<string, unknown> & { notBefore: string | null; documentIncarnation: number };
}

export const cleanups: (() => Promise<void> | void)[] = [];

/** cleanUpAfterEach registers the cleanup of the calling test file. */
export function cleanUpAfterEach(): void {
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
}

/** simulator: a simulator and one or more bridges (one per VM name) writing to their own files. */
export async function simulator(options: SimulatorOptions = {}) {
  const sim = new ImdsSimulator({ vmName: 'vm0', peers: ['vm1'], tickMs: 10, ...options });
  await sim.listen(0);
  cleanups.push(() => sim.close());
  return sim;
}

export async function bridgeOn(sim: ImdsSimulator, config: Record<string, unknown> = {}, name = 'a', identityRetryMs?: number) {
  const dir = tempDir();
  cleanups.push(() => dir.cleanup());
  const h = await startBridge({
    sim,
    dir: dir.path,
    config: { ...config, imds: { requestTimeoutMs: 1000, firstRequestTimeoutMs: 2000 }, observability: { listen: '127.0.0.1:0' } },
    sinks: (config.sinks as Record<string, unknown>[] | undefined) ?? [
      { name: 'audit', type: 'file', path: join(dir.path, `${name}.jsonl`) },
    ],
    bridge: identityRetryMs === undefined ? {} : { identityRetryMs },
  });
  cleanups.push(() => h.stop());
  return { bridge: h.bridge, lines: h.lines, delivered: () => h.events(`${name}.jsonl`) as unknown as Delivered[] };
}
