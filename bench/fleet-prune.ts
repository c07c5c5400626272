/**
 * What forgetting members gone for good costs a group's store, as the group grows. Each member
 * looks for records to forget at its heartbeats (src/fleet/budget/forget.ts, `Pruner`): this runs
 * every member's pruner at every heartbeat (30 s) of two simulated days, over the real Blob store
 * client against Azurite behind a counting proxy, with one record in twenty gone for a month.
 * Printed per group size: the lists of the members' records pruning adds per member per minute,
 * the conditional deletes in all and those refused (two members forgetting one record at once),
 * the KiB answered per member per minute, and the whole group's lists per hour.
 * `node bench/fleet-prune.ts [N ...]` (default 10 100 300).
 */
import { pathToFileURL } from 'node:url';
import { Pruner } from '../src/fleet/budget/forget.ts';
import { memberKey } from '../src/fleet/budget/records.ts';
import { openFleetStore } from '../src/fleet/budget/stores/open.ts';
import { Azurite, DEV_ACCOUNT } from '../src/simulator/azurite.ts';
import { CountingProxy } from '../testkit/counting-proxy.ts';
import { memberVm } from '../testkit/fleet-stores.ts';
import { log, silent, sizesOf } from './common.ts';

const HEARTBEAT_MS = 30_000;
const DAYS = 2;
const DAY = 86_400_000;
const FORGET_AFTER_S = 7 * 86_400;

/** A member's record as a member with one maintenance ahead writes it (about the size of a real one). */
function recordOf(vm: string, heartbeatAt: number) {
  return {
    ...{ member: memberKey(memberVm(vm)), vm, resourceId: memberVm(vm).resourceId, heartbeatAt: new Date(heartbeatAt).toISOString() },
    ...{ heartbeatSeconds: 30, slot: null, version: '0.1.0', maxUnavailable: 3, unhealthyCountsForSeconds: 3600 },
    events: [
      {
        ...{ eventId: '5A1F0C2E-7A3B-4F5C-9E1D-2B3C4D5E6F70', eventType: 'Reboot', status: 'Scheduled' },
        ...{ notBefore: new Date(heartbeatAt + 900_000).toISOString(), durationInSeconds: -1, approved: false },
      },
    ],
    health: { healthy: true, since: new Date(heartbeatAt - DAY).toISOString() },
  };
}

async function group(azurite: Azurite, proxy: CountingProxy, n: number) {
  const name = `prune-${n}`;
  const config = { type: 'blob' as const, connectionString: azurite.connectionString(`${proxy.url}/${DEV_ACCOUNT}`), container: 'prune' };
  const store = await openFleetStore(config, name);
  const start = Date.now();
  const gone = Math.ceil(n / 20);
  try {
    for (let i = 0; i < n + gone; i++) {
      const vm = `${i < n ? 'm' : 'gone'}${String(i).padStart(4, '0')}`;
      const r = recordOf(vm, i < n ? start : start - 30 * DAY);
      await store.put(`member-${r.member}`, r, null);
    }
    const pruners = Array.from({ length: n }, (_, i) => ({
      me: memberKey(memberVm(`m${String(i).padStart(4, '0')}`)),
      pruner: new Pruner({ store, logger: silent, group: name, forgetAfterSeconds: FORGET_AFTER_S }),
    }));
    proxy.take();
    for (let t = start; t < start + DAYS * DAY; t += HEARTBEAT_MS)
      for (const p of pruners) await p.pruner.prune([], p.me, t + Math.floor(Math.random() * HEARTBEAT_MS));
    const { counts, lost, bytes } = proxy.take();
    const minutes = (DAYS * DAY) / 60_000;
    const left = (await store.list('member-')).length;
    return {
      members: n,
      gone,
      forgotten: n + gone - left,
      listsPerMemberPerMinute: round((counts.list ?? 0) / n / minutes, 4),
      deletes: counts.delete ?? 0,
      deletesRefused: lost,
      kibPerMemberPerMinute: round(bytes / 1024 / n / minutes, 2),
      groupListsPerHour: round((counts.list ?? 0) / (DAYS * 24), 1),
    };
  } finally {
    await store.close();
  }
}

const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;

export async function phaseFleetPrune(sizes: readonly number[] = [10, 100, 300]) {
  const azurite = await Azurite.start();
  const proxy = await new CountingProxy(azurite.url).start();
  const out = [];
  try {
    for (const n of sizes) {
      log(`prune: ${n} members`);
      out.push(await group(azurite, proxy, n));
    }
  } finally {
    await proxy.stop();
    await azurite.stop();
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const results = await phaseFleetPrune(sizesOf(process.argv.slice(2)));
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
}
