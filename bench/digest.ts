/**
 * Benchmark phase D: the chat digest. N member records (10 groups, one pending event each) in
 * Blob Storage (Azurite); three relay replicas' digest posters, each with its own reader of the
 * store, reached through a counting proxy; a Slack Web API stand-in behind the relay's real slack
 * sink. An hour is played on the posters' clock, a look a minute by every replica at once, with a
 * member's record changed every ten minutes and a new period every 30 minutes. Measured: the
 * store's requests per replica per minute (the digest's own record apart from the reads of the
 * fleet that every relay part shares), the bytes a look lists, the time a look takes, and what
 * reached Slack (one message a period, one update a change). Members pay nothing: they never read
 * the digest. `node bench/digest.ts [N ...]` runs it alone (default 10, 100 and 1,000).
 */
import { pathToFileURL } from 'node:url';
import { AZURE_GROUP } from '../src/fleet/budget/config.ts';
import { memberKey } from '../src/fleet/budget/records.ts';
import { openFleetStore } from '../src/fleet/budget/stores/open.ts';
import type { FleetStoreConfig } from '../src/fleet/budget/stores/config.ts';
import { RecordSeal } from '../src/fleet/view/seal.ts';
import { FleetReader } from '../src/fleet/view/snapshot.ts';
import { DigestPoster } from '../src/relay/digest.ts';
import { RelaySinks } from '../src/relay/sinks.ts';
import { DEV_ACCOUNT } from '../src/simulator/azurite.ts';
import { CountingProxy } from '../testkit/counting-proxy.ts';
import { fleetKeys, fleetPeer, relayConfig } from '../testkit/fleet.ts';
import { FleetStores } from '../testkit/fleet-stores.ts';
import { SlackStandIn } from '../testkit/slack-web-api.ts';
import { dist, log, silent, sizesOf } from './common.ts';

const REPLICAS = 3;
const MINUTES = 60;
const TOKEN = 'xoxb-bench-digest';

/** record: member `i`'s record: its one event, and one more when `more` (a change the digest says: a count). */
function record(i: number, start: number, more = false) {
  const vm = `d${String(i).padStart(4, '0')}`;
  const member = memberKey({ name: vm, resourceId: null });
  return {
    ...{ member, vm, resourceId: null, heartbeatAt: new Date(start).toISOString(), heartbeatSeconds: 3600, slot: null },
    events: [0, ...(more ? [1] : [])].map((k) => ({
      ...{
        eventId: `E${i}-${k}`,
        eventType: i % 4 === 0 ? 'Freeze' : 'Reboot',
        status: 'Scheduled',
        durationInSeconds: -1,
        approved: false,
      },
      notBefore: new Date(start + ((i * 37 + k * 60) % 420) * 60_000).toISOString(),
    })),
  };
}

export interface DigestRun {
  readonly members: number;
  readonly replicas: number;
  /** The store's requests per replica per minute: all, the fleet's listings, and the digest record's reads and writes. */
  readonly perReplicaPerMinute: { readonly all: number; readonly list: number; readonly digestRecord: number };
  readonly perMemberPerMinute: number;
  readonly listedKiBPerLook: number;
  readonly lookMs: ReturnType<typeof dist>;
  readonly slack: { readonly posted: number; readonly updated: number; readonly changes: number; readonly periods: number };
}

async function run(stores: FleetStores, n: number): Promise<DigestRun> {
  const container = `digest-${n}`;
  const direct = { ...stores.config('blob'), container } as FleetStoreConfig;
  const proxy = await new CountingProxy(stores.azurite.url).start();
  const viaProxy = {
    type: 'blob',
    connectionString: stores.azurite.connectionString(`${proxy.url}/${DEV_ACCOUNT}`),
    container,
  } as FleetStoreConfig;
  const slack = new SlackStandIn(TOKEN);
  const apiUrl = await slack.listen();
  const peer = await fleetPeer();
  const start = Date.parse('2026-11-30T08:00:00Z');
  const clock = { now: start };
  const groups = await Promise.all(Array.from({ length: 10 }, (_, g) => openFleetStore(direct, `g${g}`)));
  const versions: (string | null)[] = [];
  for (let i = 0; i < n; i += 50)
    versions.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(50, n - i) }, (_, j) =>
          groups[(i + j) % 10]!.put(`member-${record(i + j, start).member}`, record(i + j, start), null),
        ),
      )),
    );
  const sinkConfigs = relayConfig(peer, fleetKeys(), {
    sinks: [{ name: 'ops', type: 'slack', botToken: TOKEN, channel: '#ops', apiUrl }],
  }).sinks;
  const key = Buffer.alloc(32, 9);
  const replicas = await Promise.all(
    Array.from({ length: REPLICAS }, async (_, r) => {
      const reader = new FleetReader({ store: viaProxy, timeoutMs: 10_000, cacheMs: 2000, now: () => clock.now });
      await reader.open();
      const sinks = await RelaySinks.create(sinkConfigs, silent, process.stdout);
      const config = { sinks: ['ops'], hours: 8, everyMinutes: 30, checkSeconds: 60 };
      const poster = new DigestPoster({
        ...{ config, reader, store: await openFleetStore(viaProxy, AZURE_GROUP), seal: new RecordSeal(key), sinks: sinks.chat(['ops']) },
        ...{ rules: {}, logger: silent, by: `replica-${r}`, now: () => clock.now },
      });
      return { reader, sinks, poster };
    }),
  );
  try {
    proxy.take();
    const looks: number[] = [];
    let changes = 0;
    for (let minute = 0; minute < MINUTES; minute++) {
      clock.now = start + minute * 60_000 + 1000;
      if (minute % 10 === 5) {
        // a member not changed before: one more maintenance in its group
        const i = (changes * 7) % n;
        versions[i] = await groups[i % 10]!.put(`member-${record(i, start).member}`, record(i, start, true), versions[i]!);
        changes++;
      }
      await Promise.all(
        replicas.map(async (r) => {
          const t = performance.now();
          await r.poster.look('period');
          looks.push(performance.now() - t);
        }),
      );
    }
    const taken = proxy.take();
    const all = Object.values(taken.counts).reduce((a, b) => a + b, 0);
    const list = taken.counts.list ?? 0;
    const calls = slack.calls;
    const per = (x: number) => Math.round((x / REPLICAS / MINUTES) * 100) / 100;
    return {
      ...{ members: n, replicas: REPLICAS },
      perReplicaPerMinute: { all: per(all), list: per(list), digestRecord: per(all - list) },
      perMemberPerMinute: 0,
      listedKiBPerLook: Math.round(((taken.bytesBy.list ?? 0) / (REPLICAS * MINUTES) / 1024) * 10) / 10,
      lookMs: dist(looks),
      slack: {
        posted: calls.filter((c) => c.method === 'chat.postMessage').length,
        updated: calls.filter((c) => c.method === 'chat.update').length,
        changes,
        periods: MINUTES / 30,
      },
    };
  } finally {
    for (const r of replicas) {
      await r.poster.close();
      await r.sinks.close();
      await r.reader.close();
    }
    await Promise.all(groups.map((g) => g.close()));
    await slack.close();
    await peer.close();
    await proxy.stop();
  }
}

export async function phaseDigest(sizes: readonly number[] = [10, 100, 1000]): Promise<DigestRun[]> {
  const stores = await FleetStores.start();
  try {
    const out: DigestRun[] = [];
    for (const n of sizes) {
      log(`D: the chat digest, ${n} members, ${REPLICAS} replicas, an hour of looks`);
      out.push(await run(stores, n));
    }
    return out;
  } finally {
    await stores.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const r of await phaseDigest(sizesOf(process.argv.slice(2))))
    console.log(JSON.stringify({ ...r, lookMs: { p50: Math.round(r.lookMs.p50), max: Math.round(r.lookMs.max) } }));
}
