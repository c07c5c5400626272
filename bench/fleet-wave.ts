/**
 * Benchmark phase F4: what a wave's collision costs, with bridges as processes. One group of N
 * daemons of the package (20 with 2 slots, 100 with 10), each with its own IMDS simulator (in
 * this process) and every member's Reboot due at once (one NotBefore an hour ahead), approved by
 * policy, each maintenance Started for 4 s; the store is Azurite behind a proxy that counts
 * requests per blob and second and refused conditional writes, or with `--store kubernetes`
 * Leases on the Kubernetes API stand-in, counted from its own records of its requests
 * (bench/fleet-store.ts). Printed: the collision's CloudEvent ids and copies per wave (read from
 * every member's file sink), the words by what they say, lost writes per record, the busiest
 * second of the busiest blobs (Leases), and the bytes of the group's listings per member per
 * minute of waiting (on Leases also those of the members' lists alone, and the requests per member
 * per minute by the API server's verb). `node bench/fleet-wave.ts 20 100 [--store kubernetes] [--slots K]` runs it alone
 * (`--slots`: one budget for every size, else a tenth of each).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ImdsSimulator } from '../src/simulator/server.ts';
import type { StoreKind } from '../testkit/fleet-stores.ts';
import { bridgeConfig, dir, log, sizesOf, sleep, spawnProcess, stopEverything } from './common.ts';
import { busiestOf, startStore, storeOf } from './fleet-store.ts';
import { PACKAGE_BIN } from './processes.ts';

const STARTED_MS = 4000;
/** The group's slots: a tenth of its members, at least 2. */
export const slotsOf = (n: number): number => Math.max(2, Math.round(n / 10));

interface Word {
  readonly id: string;
  readonly vm: string;
  readonly wave: string;
  readonly state: string;
  readonly due: number;
}

/** wordsOf: the fleet.collision CloudEvents in the members' file sinks. */
function wordsOf(files: readonly string[]): Word[] {
  return files.flatMap((f) => {
    let text = '';
    try {
      text = readFileSync(f, 'utf8');
    } catch {
      return [];
    }
    return text
      .split('\n')
      .filter((l) => l.includes('fleet.collision'))
      .map(
        (l) => JSON.parse(l) as { id: string; data: { vm: { name: string }; collision: { id: string; state?: string; due: unknown[] } } },
      )
      .map((e) => ({
        id: e.id,
        vm: e.data.vm.name,
        wave: e.data.collision.id,
        state: e.data.collision.state ?? '-',
        due: e.data.collision.due.length,
      }));
  });
}

export async function phaseFleetWave(n: number, storeKind: StoreKind = 'blob', k = slotsOf(n)) {
  const store = await startStore(storeKind);
  const sims: ImdsSimulator[] = [];
  const children: ReturnType<typeof spawnProcess>[] = [];
  const files: string[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const sim = new ImdsSimulator({ vmName: `w${String(i).padStart(3, '0')}`, peers: [], tickMs: 50 });
      await sim.listen(0);
      sims.push(sim);
      files.push(join(dir, `fleet-wave-${n}-${i}.jsonl`));
      const config = bridgeConfig(`fleet-wave-${n}-${i}`, {
        imds: { endpoint: sim.url, pollIntervalMs: 1000 },
        sinks: [{ name: 'out', type: 'file', path: files[i] }],
        approval: { rules: [{ match: {}, action: 'approve' }] },
        fleet: {
          group: 'wave',
          maxUnavailable: k,
          store: store.config(`wave${n}`),
          retryMs: 2000,
          heartbeatSeconds: 30,
        },
      });
      children.push(spawnProcess([PACKAGE_BIN, 'run', '--config', config]));
    }
    // every daemon reads its IMDS, and writes its member record, before the wave
    const ready = () => sims.every((s) => s.requests.length >= 3) && store.writes() >= n;
    for (const deadline = Date.now() + 180_000; !ready() && Date.now() < deadline;) {
      if (children.some((c) => c.exitCode !== null))
        throw new Error('a bridge exited before the wave (is the package built? npm run build)');
      await sleep(200);
    }
    store.take();
    const t0 = Date.now();
    for (const sim of sims) sim.addEvent({ EventType: 'Reboot', noticeMs: 3_600_000, startedMs: STARTED_MS, DurationInSeconds: 5 });
    for (
      const deadline = Date.now() + 900_000;
      sims.some((s) => s.startRequests.length === 0 || s.events.length > 0) && Date.now() < deadline;
    )
      await sleep(250);
    const took = Date.now() - t0;
    // what the members say of the wave's end reaches their sinks within a heartbeat: read until nothing more comes for 10 s (at most a minute)
    let said = wordsOf(files).length;
    for (let quiet = 0, round = 0; quiet < 40 && round < 240; round++) {
      await sleep(250);
      const now = wordsOf(files).length;
      quiet = now === said ? quiet + 1 : 0;
      said = now;
    }
    const cost = store.take();
    const words = wordsOf(files);
    const waves = [...new Set(words.map((w) => w.wave))].map((wave) => {
      const of = words.filter((w) => w.wave === wave);
      const ids = [...new Set(of.map((w) => w.id))];
      const copies = ids.map((id) => of.filter((w) => w.id === id).length);
      return {
        ids: ids.length,
        copies: of.length,
        mostCopiesOfOneId: Math.max(...copies),
        byState: Object.fromEntries(
          [...new Set(of.map((w) => w.state))].map((s) => [s, new Set(of.filter((w) => w.state === s).map((w) => w.id)).size]),
        ),
        // one CloudEvent id with copies that say different numbers due (the copies differ)
        idsWithDifferingCopies: ids.filter((id) => new Set(of.filter((w) => w.id === id).map((w) => w.due)).size > 1).length,
      };
    });
    // each member waits from its event's appearance to its StartRequests
    const waitingMinutes = sims.reduce((m, s) => m + ((s.startRequests[0]?.at ?? t0 + took) - t0) / 60_000, 0);
    const handOffs = Math.max(1, n - k);
    return {
      members: n,
      maxUnavailable: k,
      approved: sims.filter((s) => s.startRequests.length > 0).length,
      waveSeconds: Math.round(took / 100) / 10,
      waves,
      lostWrites: cost.lostBy,
      lostWritesPerHandOff: Math.round((Object.values(cost.lostBy).reduce((a, b) => a + b, 0) / handOffs) * 100) / 100,
      // the busiest second of the busiest blobs or Leases (apart from the listings, all prefixes, and the container's creation)
      busiestSecond: busiestOf(cost.busiestSecond),
      busiestSecondOfListings: cost.busiestSecond.list ?? 0,
      listKiBPerWaitingMemberPerMinute: Math.round(((cost.bytesBy.list ?? 0) / 1024 / Math.max(waitingMinutes, 1 / 60)) * 10) / 10,
      listKiBPerMemberPerMinute: Math.round(((cost.bytesBy.list ?? 0) / 1024 / n / (took / 60_000)) * 10) / 10,
      // the same by what was listed: the members' records, the queue's head, the slots
      listKiBPerWaitingMemberPerMinuteByKind: Object.fromEntries(
        Object.entries(cost.listBytesBy).map(([kind, b]) => [kind, Math.round((b / 1024 / Math.max(waitingMinutes, 1 / 60)) * 10) / 10]),
      ),
      requests: cost.counts,
      // what the API server bore: the requests per member per minute by verb
      ...(storeKind === 'kubernetes'
        ? {
            store: storeKind,
            requestsPerMemberPerMinuteByVerb: Object.fromEntries(
              Object.entries(cost.counts).map(([verb, c]) => [verb, Math.round((c / n / (took / 60_000)) * 10) / 10]),
            ),
          }
        : {}),
    };
  } finally {
    await stopEverything(children, sims, [store]);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { store, rest } = storeOf(process.argv.slice(2));
  // `--slots K`: the same K for every size (a group that grows under one budget), else a tenth of each
  const at = rest.indexOf('--slots');
  const fixed = at < 0 ? undefined : Number(rest.splice(at, 2)[1]);
  for (const n of sizesOf(rest) ?? [20, 100]) {
    const k = fixed ?? slotsOf(n);
    log(`F4: a wave of ${n} bridges as processes, every member due at once, ${k} slots${store === 'blob' ? '' : ', over Leases'}`);
    console.log(JSON.stringify(await phaseFleetWave(n, store, k)));
  }
}
