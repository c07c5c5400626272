/**
 * Benchmark phase F2: what a fleet budget costs its store as the group grows. Members in this
 * process, over the real store clients (@azure/storage-blob against Azurite behind a counting
 * proxy; the project's Kubernetes client (src/kube) against the Lease stand-in, which records every request), at
 * 10, 100 and 300 members with maxUnavailable 3, on a simulated clock (so a minute of the group
 * takes seconds):
 *   - idle: two heartbeats of every member, nothing scheduled;
 *   - a wave: every member's Reboot appears at once (NotBefore an hour away, staggered by a
 *     second so the queue's order is known), each policy asks for a slot every retryMs as the
 *     daemon does, a holder's maintenance takes 6 s, and one simulated minute is counted.
 * Printed: requests per member per minute by operation, lost conditional writes per hand-off,
 * and whether the members were served in the queue's order. `node bench/fleet-cost.ts` runs it alone.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { HealthMonitor } from '../src/health/monitor.ts';
import { FleetBudget } from '../src/fleet/budget/budget.ts';
import { asBudget, FleetConfig } from '../src/fleet/budget/config.ts';
import { openFleetStore } from '../src/fleet/budget/stores/open.ts';
import type { EventsDocument } from '../src/imds/wire.ts';
import { DEV_ACCOUNT } from '../src/simulator/azurite.ts';
import { CountingProxy } from '../testkit/counting-proxy.ts';
import { FleetStores, memberVm, type StoreKind } from '../testkit/fleet-stores.ts';
import { inChunks, outOfOrder, runWave, type WaveMember } from '../testkit/fleet-wave.ts';
import { LeaseMeter } from '../testkit/kube-lease-meter.ts';
import { log, silent, sizesOf } from './common.ts';

const K = 3;
const HEARTBEAT_S = 30;
const RETRY_MS = 2000;
const HOLD_MS = 6000;

/** Counts of one store's requests by operation, taken since the last call. */
export type Counter = () => { counts: Record<string, number>; lost: number | null; bytes?: number };

/** The Lease verbs under the names of the Blob operations that do the same, so the two stores read alike. */
const AS_BLOB: Record<string, string> = { get: 'read', update: 'write' };

export function leaseCounter(stores: FleetStores): Counter {
  // the stand-in's own records of its requests, and its answers to writes: 409, another writer came first
  const meter = new LeaseMeter(stores.kube);
  return () => {
    const { counts, lost } = meter.take();
    const seen = Object.entries(counts).filter(([verb, count]) => count > 0 && verb !== 'other');
    return { counts: Object.fromEntries(seen.map(([verb, count]) => [AS_BLOB[verb] ?? verb, count])), lost };
  };
}

export const perMemberMinute = (counts: Record<string, number>, n: number, minutes: number) =>
  Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, Math.round((v / n / minutes) * 100) / 100]));
export const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

async function group(
  kind: StoreKind,
  n: number,
  store: Record<string, unknown>,
  counter: Counter,
  healthUrl?: string,
  rate?: { approvals: number; perSeconds: number },
) {
  let now = Date.now();
  const config = asBudget(
    FleetConfig.parse({
      group: `cost-${kind}-${n}${healthUrl === undefined ? '' : '-health'}${rate === undefined ? '' : `-rate-${rate.approvals}`}`,
      ...(rate === undefined ? {} : { rate }),
      maxUnavailable: K,
      store,
      heartbeatSeconds: HEARTBEAT_S,
      retryMs: RETRY_MS,
      ...(healthUrl === undefined ? {} : { health: { http: { url: healthUrl }, settleSeconds: 0 } }),
    }),
  );
  const members: WaveMember[] = [];
  for (let i = 0; i < n; i++) {
    const vm = `m${String(i).padStart(4, '0')}`;
    const view = {
      vm: memberVm(vm),
      document: { incarnation: 1, events: [] } as EventsDocument | null,
      goodReads: 1,
      approvalServerUrl: null,
    };
    // with health checks, each member's record carries its health (checked once here: a local GET, no store request)
    const health = config.health === undefined ? undefined : new HealthMonitor(config.health, silent, () => now);
    await health?.check();
    const budget = new FleetBudget({
      config,
      store: await openFleetStore(config.store, config.group, config.storeTimeoutMs),
      view,
      logger: silent,
      givenBack: () => true,
      now: () => now,
      ...(health === undefined ? {} : { health }),
    });
    members.push({ vm, view, budget });
  }
  await inChunks(members, (m) => m.budget.heartbeat());
  counter();
  // idle: two heartbeats each
  for (let round = 0; round < 2; round++) {
    now += HEARTBEAT_S * 1000;
    await inChunks(members, (m) => m.budget.heartbeat());
  }
  const idle = counter();
  const grants = await runWave(members, {
    retryMs: RETRY_MS,
    heartbeatSeconds: HEARTBEAT_S,
    holdMs: HOLD_MS,
    forMs: 60_000,
    start: now,
    setNow: (t) => (now = t),
  });
  const wave = counter();
  const handOffs = Math.max(0, grants.length - K);
  return {
    kind,
    members: n,
    withHealth: healthUrl !== undefined,
    ...(rate === undefined ? {} : { rate }),
    idlePerMemberPerMinute: perMemberMinute(idle.counts, n, 2 * (HEARTBEAT_S / 60)),
    idleTotalPerMemberPerMinute: Math.round((sum(idle.counts) / n / ((2 * HEARTBEAT_S) / 60)) * 100) / 100,
    wavePerMemberPerMinute: perMemberMinute(wave.counts, n, 1),
    idleKiBPerMemberPerMinute: idle.bytes === undefined ? null : Math.round(idle.bytes / 1024 / n / ((2 * HEARTBEAT_S) / 60)),
    waveKiBPerMemberPerMinute: wave.bytes === undefined ? null : Math.round(wave.bytes / 1024 / n),
    waveTotalPerMemberPerMinute: Math.round((sum(wave.counts) / n) * 100) / 100,
    granted: grants.length,
    handOffs,
    lostWritesPerHandOff: wave.lost === null || handOffs === 0 ? null : Math.round((wave.lost / handOffs) * 100) / 100,
    servedOutOfOrder: outOfOrder(grants),
  };
}

export async function phaseFleetCost(sizes: readonly number[] = [10, 100, 300]) {
  const stores = await FleetStores.start();
  const proxy = await new CountingProxy(stores.azurite.url).start();
  const health = createServer((_req, res) => res.writeHead(200).end());
  await new Promise<void>((resolve) => health.listen(0, '127.0.0.1', resolve));
  const out = [];
  try {
    for (const n of sizes) {
      log(`F2: ${n} members, blob`);
      out.push(
        await group(
          'blob',
          n,
          { type: 'blob', connectionString: stores.azurite.connectionString(`${proxy.url}/${DEV_ACCOUNT}`), container: 'cost' },
          () => proxy.take(),
        ),
      );
      log(`F2: ${n} members, kubernetes`);
      out.push(await group('kubernetes', n, stores.config('kubernetes'), leaseCounter(stores)));
    }
    // the same with health checks, whose state every record carries: idle, no request more
    const n = sizes.includes(100) ? 100 : sizes[0]!;
    log(`F2: ${n} members, blob, with health checks`);
    out.push(
      await group(
        'blob',
        n,
        { type: 'blob', connectionString: stores.azurite.connectionString(`${proxy.url}/${DEV_ACCOUNT}`), container: 'cost' },
        () => proxy.take(),
        `http://127.0.0.1:${(health.address() as AddressInfo).port}/healthz`,
      ),
    );
    // the same with a rate (fleet.rate): its stamps ride on the slot writes and lists there are, no request more;
    // one that never binds shows what the stamps cost, one that binds what a held wave asks
    for (const rate of [
      { approvals: 100, perSeconds: 600 },
      { approvals: 1, perSeconds: 15 },
    ]) {
      log(`F2: ${n} members, blob, with a rate of ${rate.approvals} per ${rate.perSeconds} s`);
      const blob = { type: 'blob', connectionString: stores.azurite.connectionString(`${proxy.url}/${DEV_ACCOUNT}`), container: 'cost' };
      out.push(await group('blob', n, blob, () => proxy.take(), undefined, rate));
    }
  } finally {
    await new Promise((resolve) => health.close(resolve));
    await proxy.stop();
    await stores.stop();
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const runs = await phaseFleetCost(sizesOf(process.argv.slice(2)));
  for (const r of runs) console.log(JSON.stringify(r));
}
