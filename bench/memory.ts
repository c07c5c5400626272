/**
 * Benchmark phase M: what each shipped profile of the daemon holds in memory, one process at a
 * time (so that no other process shares its pages and PSS means what it says), after it has
 * carried one event to every sink. For each: VmRSS (resident, shared pages counted whole),
 * RssAnon (private memory: the heap, code compiled at run time, buffers), RssFile (the mapped
 * files: the node binary, mostly) and PSS (shared pages divided among the processes sharing
 * them), from /proc/PID/status and /proc/PID/smaps_rollup. Linux only.
 *
 * Each profile of the daemon runs as users run it: a YAML configuration, logging at `info`, with
 * the environment the systemd unit and the image give it (glibc's allocator settings:
 * scripts/launch.ts), and once more by hand, without them. And twice: the first start after an install, with no compile cache (an empty CACHE_DIRECTORY), and
 * the next start, which finds the bytecode the first one left there.
 *
 *   node bench/memory.ts [--quick]
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ImdsSimulator } from '../src/simulator/server.ts';
import { FleetStores } from '../testkit/fleet-stores.ts';
import { HttpPeer } from '../testkit/http-peer.ts';
import { bridgeConfig, dir, log, PACKAGE_ENV, PACKAGE_V8_FLAGS, quick, ROOT, sleep, spawnProcess, stop } from './common.ts';

export interface Memory {
  vmRssMiB: number;
  rssAnonMiB: number;
  rssFileMiB: number;
  pssMiB: number;
}

const kib = (text: string, key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
const mib = (k: number) => Math.round((k / 1024) * 10) / 10;

/** memoryOf: the four figures of a running process. */
export function memoryOf(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  return {
    vmRssMiB: mib(kib(status, 'VmRSS')),
    rssAnonMiB: mib(kib(status, 'RssAnon')),
    rssFileMiB: mib(kib(status, 'RssFile')),
    pssMiB: mib(kib(rollup, 'Pss')),
  };
}

const PACKAGE_BIN = join(ROOT, 'bin', 'se-bridge.js');
const BINARY = join(ROOT, 'build', 'se-bridge-linux-x64');
const NODE = process.execPath;

type Sinks = 'webhook+file' | 'aks';
interface Profile {
  name: string;
  cmd: string[];
  sinks?: Sinks;
  fleet?: 'blob' | 'kubernetes';
  /** true: without the allocator settings the systemd unit and the image give it (run by hand). */
  byHand?: boolean;
}

/**
 * coldCopy: the executable copied, written to disk and dropped from the page cache, so it is
 * mapped from disk as it is on a VM after a reboot, not from the pages its build just wrote.
 */
function coldCopy(): string | null {
  if (!existsSync(BINARY)) return null;
  const copy = join(dir, 'se-bridge-linux-x64');
  copyFileSync(BINARY, copy);
  chmodSync(copy, 0o755);
  execFileSync('sync', [copy]);
  // GNU dd: advise the kernel to drop the whole file's cached pages (no root needed)
  execFileSync('dd', [`if=${copy}`, 'iflag=nocache', 'count=0', 'status=none']);
  return copy;
}

export const PROFILES = (binary: string | null): Profile[] => [
  { name: 'bare node', cmd: [NODE, '-e', 'setInterval(() => {}, 1000)'], byHand: true },
  {
    name: "floor: node with the package's flags and node:http, idle",
    cmd: [NODE, ...PACKAGE_V8_FLAGS, '-e', "require('node:http').createServer().listen(0, '127.0.0.1'); setInterval(() => {}, 1000)"],
  },
  { name: 'package, webhook+file', cmd: [PACKAGE_BIN], sinks: 'webhook+file' },
  {
    name: "package, webhook+file, run by hand (no allocator settings: the unit's, the image's)",
    cmd: [PACKAGE_BIN],
    sinks: 'webhook+file',
    byHand: true,
  },
  { name: 'package, webhook+file, fleet budget on Blob Storage', cmd: [PACKAGE_BIN], sinks: 'webhook+file', fleet: 'blob' },
  { name: 'package, webhook+file, fleet budget on Leases', cmd: [PACKAGE_BIN], sinks: 'webhook+file', fleet: 'kubernetes' },
  {
    name: 'package, AKS DaemonSet (kubernetes, probe, webhook, file, Lease budget)',
    cmd: [PACKAGE_BIN],
    sinks: 'aks',
    fleet: 'kubernetes',
  },
  ...(binary === null
    ? []
    : [
        { name: 'single executable, webhook+file (read from disk)', cmd: [binary], sinks: 'webhook+file' as const },
        {
          // the image's DaemonSet (config/kubernetes/daemonset.yaml) runs the executable
          name: 'single executable, AKS DaemonSet (read from disk)',
          cmd: [binary],
          sinks: 'aks' as const,
          fleet: 'kubernetes' as const,
        },
      ]),
];

/** The peers every profile talks to: the Blob and Lease stores, the webhook's peer, a kubeconfig. */
interface Peers {
  stores: FleetStores;
  hook: HttpPeer;
  kubeconfig: string;
}

/** measure runs one profile once, carries one event to its sinks, and reads its memory after `seconds`. */
async function measure(
  peers: Peers,
  p: Profile,
  id: string,
  start: string | null,
  cache: string,
  seconds = quick ? 10 : 25,
): Promise<Memory & { name: string }> {
  const { stores, hook, kubeconfig } = peers;
  const sim = new ImdsSimulator({ vmName: 'mem-node', tickMs: 50 });
  await sim.listen(0);
  const file = { name: 'audit', type: 'file', path: join(dir, `mem-${id}.jsonl`) };
  const webhook = { name: 'hook', type: 'webhook', url: hook.url };
  const sinks =
    p.sinks === 'aks'
      ? [
          { name: 'node', type: 'kubernetes', kubeconfig, nodeName: 'mem-node' },
          { name: 'lb', type: 'probe', listen: '127.0.0.1:0', drainSeconds: 5 },
          webhook,
          file,
        ]
      : [webhook, file];
  const fleet = p.fleet === undefined ? {} : { fleet: { group: `mem-${id}`, maxUnavailable: 1, store: stores.config(p.fleet) } };
  const args =
    p.sinks === undefined
      ? p.cmd
      : [...p.cmd, 'run', '--config', bridgeConfig(`mem-${id}`, { imds: { endpoint: sim.url }, sinks, ...fleet }, true)];
  const child: ChildProcess = spawnProcess(args, { CACHE_DIRECTORY: cache, ...(p.byHand === true ? {} : PACKAGE_ENV) });
  try {
    await sleep(3000);
    if (p.sinks !== undefined) sim.addEvent({ noticeMs: 3_600_000 });
    await sleep(seconds * 1000 - 3000);
    const m = memoryOf(child.pid!);
    const name = start === null ? p.name : `${p.name}, ${start}`;
    log(`M: ${name}: VmRSS ${m.vmRssMiB} MiB, RssAnon ${m.rssAnonMiB}, RssFile ${m.rssFileMiB}, PSS ${m.pssMiB}`);
    return { name, ...m };
  } finally {
    await stop(child);
    await sim.close();
  }
}

/** The two starts each profile of the daemon is measured at. */
const STARTS = ['first start, no compile cache', 'warm compile cache'] as const;

export async function phaseMemory(seconds = quick ? 10 : 25): Promise<(Memory & { name: string })[]> {
  const stores = await FleetStores.start();
  const hook = new HttpPeer();
  await hook.listen();
  const kubeconfig = join(dir, 'kubeconfig-memory');
  writeFileSync(kubeconfig, stores.kube.kubeconfig());
  stores.kube.addNode('mem-node');
  const peers = { stores, hook, kubeconfig };
  const out: (Memory & { name: string })[] = [];
  try {
    for (const [i, p] of PROFILES(coldCopy()).entries()) {
      // one compile cache per profile: empty at its first start, as its first start left it at the next
      const cache = mkdtempSync(join(dir, `cache-${i}-`));
      for (const start of p.sinks === undefined ? [null] : STARTS) {
        out.push(await measure(peers, p, `${i}-${start === null ? 0 : STARTS.indexOf(start)}`, start, cache, seconds));
      }
    }
  } finally {
    await hook.close();
    await stores.stop();
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const r of await phaseMemory()) process.stdout.write(`${JSON.stringify(r)}\n`);
}
