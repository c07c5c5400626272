/**
 * What a large list costs the Kubernetes client: the API stand-in (testkit/kube-apiserver.ts) in
 * a process of its own holds nodes of about 20 KiB each (a Node's status, labels and images make
 * 10 to 20 KiB on AKS) until their list is `MiB` large; the kubernetes sink then looks for its
 * Node by providerID, the last one listed, so every node is read. Measured in the process that
 * reads, run with the package's V8 settings: VmRSS before the list, and the peak (VmHWM, its mark
 * reset through /proc/self/clear_refs just before) while it is read. Linux only.
 *
 *   node bench/kube-list.ts [MiB]      (default 40)
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dir, log, PACKAGE_V8_FLAGS } from './common.ts';

const SELF = fileURLToPath(import.meta.url);
const NODE_KIB = 20;

const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'))?.[1]);
const mib = (k: number) => Math.round((k / 1024) * 10) / 10;

/** serve: the stand-in with enough nodes for a list of `size` MiB; prints its kubeconfig's path, then waits. */
async function serve(size: number): Promise<void> {
  const { KubeStandIn } = await import('../testkit/kube-apiserver.ts');
  const api = await new KubeStandIn().start();
  const count = Math.ceil((size * 1024) / NODE_KIB);
  const padding = 'x'.repeat(NODE_KIB * 1024 - 600);
  for (let i = 0; i < count; i++)
    api.addNode(`node-${String(i).padStart(6, '0')}`, { providerID: `azure:///vm/${i}` }, { annotations: { 'bench/padding': padding } });
  const file = join(dir, 'kubeconfig');
  writeFileSync(file, api.kubeconfig());
  process.stdout.write(`${file} ${count}\n`);
}

/** measure: one look for the last Node by providerID, through the kubernetes sink's client. */
async function measure(kubeconfig: string, count: number): Promise<void> {
  const { connect } = await import('../sinks/kubernetes/api.ts');
  const kube = await connect(kubeconfig);
  // a first small call loads everything the list needs (TLS, the client), so the figures below are the list's
  await kube.readNode('node-000000');
  globalThis.gc?.();
  const before = kib('VmRSS');
  writeFileSync('/proc/self/clear_refs', '5');
  const found = await kube.nodeByProviderId(`azure:///vm/${count - 1}`);
  const peak = kib('VmHWM');
  process.stdout.write(
    `${JSON.stringify({ found: found?.name ?? null, beforeMiB: mib(before), peakMiB: mib(peak), growthMiB: mib(peak - before) })}\n`,
  );
  process.exit(0);
}

async function main(): Promise<void> {
  const size = Number(process.argv[2] ?? 40);
  const server = spawn(process.execPath, [SELF, 'serve', String(size)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [kubeconfig, count] = await new Promise<[string, string]>((resolve, reject) => {
    server.stdout.once('data', (d: Buffer) => resolve(d.toString().trim().split(' ') as [string, string]));
    server.once('exit', () => reject(new Error('the stand-in stopped')));
  });
  log(`${count} nodes of ${NODE_KIB} KiB (a list of ${size} MiB)`);
  const reader = spawn(process.execPath, [...PACKAGE_V8_FLAGS, '--expose-gc', SELF, 'measure', kubeconfig, count], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  reader.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((r) => reader.once('exit', r));
  server.kill();
  if (code !== 0) throw new Error(`the reader exited with ${code}`);
  process.stdout.write(out);
}

const [role, a, b] = process.argv.slice(2);
if (role === 'serve') await serve(Number(a));
else if (role === 'measure') await measure(a!, Number(b));
else await main();
