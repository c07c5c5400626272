/**
 * Benchmark phase F2b: what a group's brakes cost its store, beside what an idle group costs.
 * Members in this process, over the real store clients (Blob Storage in Azurite behind a counting
 * proxy; Leases at the API stand-in, which records every request), with maxUnavailable 3 and a
 * heartbeat of 30 s and an IMDS read every second, on a simulated clock, two simulated minutes each:
 *   - idle: every member beats, nothing scheduled;
 *   - idle, with the circuit breaker on (`fleet.breaker`);
 *   - scheduled: every member with a maintenance Scheduled an hour ahead and no approval asked
 *     (what a member with a maintenance ahead costs today: it reads the group for the forecast);
 *   - paused: the group paused by a person, every member with a maintenance Scheduled whose
 *     policy approval asks at every IMDS read as the daemon does, and is held by the pause;
 *   - paused, with the breaker on.
 * Printed: requests to the store per member per minute, by operation, in the first minute (a held
 * member's first look included) and in the second. `node bench/fleet-brakes.ts 10 100` runs it alone.
 */
import { pathToFileURL } from 'node:url';
import { randomUUID } from 'node:crypto';
import { FleetBudget } from '../src/fleet/budget/budget.ts';
import { asBudget, FleetConfig } from '../src/fleet/budget/config.ts';
import { pauseGroup } from '../src/fleet/budget/pause-store.ts';
import { openFleetStore } from '../src/fleet/budget/stores/open.ts';
import type { EventsDocument, ScheduledEvent } from '../src/imds/wire.ts';
import { DEV_ACCOUNT } from '../src/simulator/azurite.ts';
import { CountingProxy } from '../testkit/counting-proxy.ts';
import { FleetStores, memberVm, type StoreKind } from '../testkit/fleet-stores.ts';
import { inChunks } from '../testkit/fleet-wave.ts';
import { log, silent, sizesOf } from './common.ts';
import { leaseCounter, perMemberMinute, sum, type Counter } from './fleet-cost.ts';

const K = 3;
const HEARTBEAT_S = 30;
const READ_MS = 1000;

type Mode = 'idle' | 'scheduled' | 'paused';

async function minute(kind: StoreKind, n: number, store: Record<string, unknown>, counter: Counter, mode: Mode, breaker: boolean) {
  let now = Date.now();
  const config = asBudget(
    FleetConfig.parse({
      group: `brakes-${kind}-${n}-${mode}${breaker ? '-breaker' : ''}`,
      ...{ maxUnavailable: K, store, heartbeatSeconds: HEARTBEAT_S },
      ...(breaker ? { breaker: { failures: 2, withinSeconds: 3600 } } : {}),
    }),
  );
  const writer = await openFleetStore(config.store, config.group, config.storeTimeoutMs);
  if (mode === 'paused') await pauseGroup(writer, { who: 'bench', why: 'a release' }, now);
  await writer.close();
  const members = [];
  for (let i = 0; i < n; i++) {
    const vm = `m${String(i).padStart(4, '0')}`;
    const event: ScheduledEvent = {
      ...{ eventId: randomUUID().toUpperCase(), eventType: 'Reboot', resourceType: 'VirtualMachine', resources: [vm] },
      ...{ eventStatus: 'Scheduled', notBefore: new Date(now + 3600_000 + i * 1000).toISOString(), description: '' },
      ...{ eventSource: 'Platform', durationInSeconds: 5, raw: {} },
    };
    const document: EventsDocument = { incarnation: 1, events: mode === 'idle' ? [] : [event] };
    const view = { vm: memberVm(vm), document, goodReads: 1, approvalServerUrl: null };
    const budget = new FleetBudget({
      ...{ config, view, logger: silent, givenBack: () => true, now: () => now },
      store: await openFleetStore(config.store, config.group, config.storeTimeoutMs),
    });
    // each member's heartbeat at its own moment in the period, as members started apart beat
    members.push({ budget, document, event, beatAt: now + Math.floor((i / n) * HEARTBEAT_S * 1000) });
  }
  await inChunks(members, (m) => m.budget.heartbeat());
  const start = now;
  counter();
  let first: ReturnType<Counter> | undefined;
  for (let t = 0; t < 120_000; t += READ_MS) {
    if (t === 60_000) first = counter();
    now = start + t;
    await inChunks(members, async (m) => {
      if (now >= m.beatAt + HEARTBEAT_S * 1000) {
        m.beatAt += HEARTBEAT_S * 1000;
        await m.budget.heartbeat();
      }
      // an IMDS read: the budget follows the document, and a held policy approval asks again
      await m.budget.onRead(m.document);
      if (mode === 'paused') await m.budget.take(m.event, { by: 'policy', via: 'policy' }).catch(() => undefined);
    });
  }
  const second = counter();
  const held = members.filter((m) => m.budget.state().held.length > 0).length;
  return {
    kind,
    members: n,
    mode,
    breaker,
    firstMinute: perMemberMinute(first!.counts, n, 1),
    firstMinuteTotal: Math.round((sum(first!.counts) / n) * 100) / 100,
    perMemberPerMinute: perMemberMinute(second.counts, n, 1),
    totalPerMemberPerMinute: Math.round((sum(second.counts) / n) * 100) / 100,
    held,
  };
}

export async function phaseFleetBrakes(sizes: readonly number[] = [10, 100]) {
  const stores = await FleetStores.start();
  const proxy = await new CountingProxy(stores.azurite.url).start();
  const out = [];
  try {
    for (const n of sizes)
      for (const [mode, breaker] of [
        ['idle', false],
        ['idle', true],
        ['scheduled', false],
        ['paused', false],
        ['paused', true],
      ] as const) {
        log(`F2b: ${n} members, ${mode}${breaker ? ', breaker on' : ''}`);
        const blob = {
          type: 'blob',
          connectionString: stores.azurite.connectionString(`${proxy.url}/${DEV_ACCOUNT}`),
          container: 'brakes',
        };
        out.push(await minute('blob', n, blob, () => proxy.take(), mode, breaker));
        out.push(await minute('kubernetes', n, stores.config('kubernetes'), leaseCounter(stores), mode, breaker));
      }
  } finally {
    await proxy.stop();
    await stores.stop();
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const runs = await phaseFleetBrakes(sizesOf(process.argv.slice(2)));
  for (const r of runs) console.log(JSON.stringify(r));
}
