/**
 * Benchmark phase V: the fleet view. N whole bridges in this process (each with its own IMDS
 * simulator, fleet members without a budget, heartbeat 30 s) write their records to Blob Storage
 * (Azurite); the relay runs as its own process (`se-bridge relay`, Service Bus played by the AMQP
 * peer), its store reached through a counting proxy. A reader asks GET /v1/fleet/events every
 * 100 ms, as a dashboard would. Each member's event appears in turn, 50 ms apart; measured:
 *   - from the event appearing at its VM's IMDS to its place in /v1/fleet/events (p50, p99), at
 *     the relay's default cacheMs (2 s) and at 0;
 *   - the store's requests per relay request, and per minute;
 *   - the relay process's memory (VmRSS) serving N members.
 * `node bench/fleet-view.ts [N ...]` runs it alone (default 20 and 100).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pino } from 'pino';
import { DEV_ACCOUNT } from '../src/simulator/azurite.ts';
import { CountingProxy } from '../testkit/counting-proxy.ts';
import { fleetKeys, fleetPeer, relayInput } from '../testkit/fleet.ts';
import { FleetStores } from '../testkit/fleet-stores.ts';
import { startBridge, stopAll } from '../testkit/harness.ts';
import { dir, dist, log, ROOT, sleep, spawnProcess, stop } from './common.ts';
import { memoryOf, type Memory } from './memory.ts';

const READ_KEY = 'bench-fleet-read-key-0123';

export interface ViewRun {
  readonly members: number;
  readonly cacheMs: number;
  readonly toListedMs: ReturnType<typeof dist>;
  readonly relayRequests: number;
  readonly storeRequests: number;
  readonly storeRequestsPerRelayRequest: number;
  readonly storeRequestsPerMinute: number;
  /** The relay's VmRSS, RssAnon, RssFile and PSS at the end of the run. */
  readonly relay: Memory;
}

async function run(stores: FleetStores, n: number, cacheMs: number): Promise<ViewRun> {
  const container = `view-${n}-${cacheMs}`;
  const proxy = await new CountingProxy(stores.azurite.url).start();
  const peer = await fleetPeer();
  const memberStore = { ...stores.config('blob'), container };
  const relayStore = { type: 'blob', connectionString: stores.azurite.connectionString(`${proxy.url}/${DEV_ACCOUNT}`), container };
  const bridges = [];
  for (let i = 0; i < n; i += 10)
    bridges.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(10, n - i) }, (_, j) =>
          startBridge({
            sim: { vmName: `v${i + j}`, peers: [], tickMs: 50 },
            config: { imds: { pollIntervalMs: 1000 }, fleet: { group: `g${(i + j) % 3}`, store: memberStore, heartbeatSeconds: 30 } },
            logger: () => pino({ level: 'silent' }),
          }),
        ),
      )),
    );
  const file = join(dir, `relay-${n}-${cacheMs}.json`);
  const port = 20000 + Math.floor(Math.random() * 20000);
  writeFileSync(
    file,
    JSON.stringify(
      relayInput(peer, fleetKeys(), {
        listen: `127.0.0.1:${port}`,
        observability: { listen: 'off' },
        fleet: { store: relayStore, cacheMs },
        readKeys: [READ_KEY],
        log: { level: 'warn' },
      }),
    ),
  );
  // the relay as the package runs it (its #! line's V8 settings), measured like every profile (memory.ts)
  const relay = spawnProcess([join(ROOT, 'bin', 'se-bridge.js'), 'relay', '--config', file]);
  const url = `http://127.0.0.1:${port}`;
  const get = async () => {
    const res = await fetch(`${url}/v1/fleet/events?limit=1000`, {
      headers: { authorization: `Bearer ${READ_KEY}` },
      signal: AbortSignal.timeout(10_000),
    });
    return ((await res.json()) as { events: { eventId: string }[] }).events;
  };
  try {
    for (let i = 0; i < 300; i++) {
      if (
        await get().then(
          () => true,
          () => false,
        )
      )
        break;
      await sleep(100);
    }
    // every member's record is written once before the clock starts
    await sleep(3000);
    const added = new Map<string, number>();
    proxy.counts.clear();
    const adding = (async () => {
      for (const b of bridges) {
        added.set(b.sim.addEvent({ noticeMs: 3_600_000 }).eventId, Date.now());
        await sleep(50);
      }
    })();
    const seen = new Map<string, number>();
    const started = Date.now();
    let requests = 0;
    for (let i = 0; i < 1200 && (seen.size < bridges.length || added.size < bridges.length); i++) {
      const events = await get();
      requests++;
      const now = Date.now();
      for (const e of events) if (added.has(e.eventId) && !seen.has(e.eventId)) seen.set(e.eventId, now - added.get(e.eventId)!);
      await sleep(100);
    }
    await adding;
    const minutes = (Date.now() - started) / 60_000;
    const storeRequests = [...proxy.counts.values()].reduce((a, b) => a + b, 0);
    return {
      members: n,
      cacheMs,
      toListedMs: dist([...seen.values()]),
      relayRequests: requests,
      storeRequests,
      storeRequestsPerRelayRequest: Math.round((storeRequests / requests) * 100) / 100,
      storeRequestsPerMinute: Math.round(storeRequests / minutes),
      relay: memoryOf(relay.pid!),
    };
  } finally {
    await stop(relay);
    await stopAll();
    await peer.close();
    await proxy.stop();
  }
}

export async function phaseFleetView(sizes: readonly number[]): Promise<ViewRun[]> {
  const stores = await FleetStores.start();
  try {
    const out: ViewRun[] = [];
    for (const n of sizes)
      for (const cacheMs of [2000, 0]) {
        const r = await run(stores, n, cacheMs);
        log(
          `V: ${n} members, cacheMs ${cacheMs}: event to /v1/fleet/events p50 ${Math.round(r.toListedMs.p50)} ms, p99 ${Math.round(r.toListedMs.p99)} ms; ` +
            `${r.storeRequestsPerRelayRequest} store requests per relay request (${r.storeRequestsPerMinute}/min at 10 requests/s); relay VmRSS ${r.relay.vmRssMiB} MiB, RssAnon ${r.relay.rssAnonMiB} MiB, PSS ${r.relay.pssMiB} MiB`,
        );
        out.push(r);
      }
    return out;
  } finally {
    await stores.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const sizes = process.argv
    .slice(2)
    .map(Number)
    .filter((x) => x > 0);
  const runs = await phaseFleetView(sizes.length > 0 ? sizes : [20, 100]);
  process.stdout.write(
    `${JSON.stringify(
      runs.map((r) => ({ ...r, toListedMs: { ...r.toListedMs, samples: undefined } })),
      null,
      2,
    )}\n`,
  );
}
