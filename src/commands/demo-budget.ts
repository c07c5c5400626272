/**
 * The fleet budget part of `se-bridge demo --fleet`: three VMs in one group with a budget of one,
 * their slots in Azure Blob Storage served by Azurite (Microsoft's emulator, a development
 * dependency: from a checkout after npm ci). Each VM's Reboot is approved by policy once its
 * preparation hook succeeds; the second and third approvals are held, then granted in turn as
 * each member completes. It ends with what each VM's IMDS was told, and when.
 */
import type { BridgeEvent } from '../pipeline/cloudevent.ts';
import { MEMBER_PREFIX } from '../fleet/budget/records.ts';
import { FleetStoreConfig } from '../fleet/budget/stores/config.ts';
import { openFleetStore } from '../fleet/budget/stores/open.ts';
import { table } from './common.ts';
import { say, startMember, stopwatch, type DemoContext, type Member } from './demo-kit.ts';

const VMS = ['db-0', 'db-1', 'db-2'];
/**
 * How long each maintenance stays Started at the simulated IMDS: the wave stays over the budget
 * (two still due) until the second member starts, so longer than the speaker lets a collision
 * settle before it says it (SETTLE_MS) and a few reads more, on a busy machine too.
 */
const MAINTENANCE_MS = 5000;

/** budgetDemo returns whether the group never had more than one member down and every one was approved; its members run on to the end. */
export async function budgetDemo(ctx: DemoContext, where: string): Promise<{ ok: boolean; members: Member[] }> {
  say('\nFleet budget: db-0, db-1 and db-2 in group "db", which allows one member down at once.');
  const at = stopwatch();
  const collisions = new Set<string>();
  say(`slots and member records: Azurite (Blob Storage) on ${where}`);
  const members: Member[] = [];
  for (const name of VMS) {
    // the collision three reboots at one time make is foretold to every sink: said here once
    const onCommitted = (events: readonly BridgeEvent[]) => {
      for (const e of events) {
        const c = e.data.collision;
        // each member that foretells it emits one (the first said stands for the rest)
        if (c === undefined || collisions.size > 0) continue;
        collisions.add(e.id);
        say(
          `  ${at()}  ${name}: fleet.collision: ${c.due.length} of ${c.group}'s ${c.members} members are due for maintenance at once; the group allows ${c.maxUnavailable} (each member due emits azure.scheduledevent.fleet.collision to its sinks)`,
        );
      }
    };
    const config = {
      sinks: [{ name: 'checkpoint', type: 'exec', command: [process.execPath, '-e', '0'], prepare: true }],
      approval: { rules: [{ match: {}, action: 'approveAfterHooks' }] },
      fleet: { group: 'db', maxUnavailable: 1, store: ctx.store, retryMs: 250, heartbeatSeconds: 5 },
    };
    members.push(await startMember(ctx, name, config, { tickMs: 20, onCommitted }));
  }
  // every member's record is in the store before the maintenance is scheduled, so the wave is foreseen among all three
  await recordsOf(ctx.store, VMS.length);
  for (const { sim } of members)
    sim.addEvent({ EventType: 'Reboot', noticeMs: 15 * 60_000, startedMs: MAINTENANCE_MS, DurationInSeconds: 10 });
  say('Each VM has a Reboot scheduled in 15 minutes, and a preparation hook; the policy approves once it succeeded.');
  const seen = new Map<string, string>();
  const back = new Map<string, number>();
  const end = Date.now() + 60_000;
  for (let i = 0; Date.now() < end && i < 2000; i++) {
    for (const { name, sim, bridge } of members) {
      const s = bridge.fleet;
      if (s == null) continue;
      // a member held stays held until it holds a slot (a moment with no holder is the queue's turn being decided)
      const line =
        s.slot !== null
          ? `holds ${s.slot.name}: approved, in maintenance`
          : sim.startRequests.length > 0
            ? 'maintenance over, slot given back'
            : s.holders.length > 0 || s.held.length > 0 || seen.get(name) === 'held'
              ? 'held'
              : 'preparing';
      if (line.startsWith('maintenance over') && !back.has(name)) back.set(name, Date.now());
      if (seen.get(name) !== line) {
        const holders = s.holders.map((h) => h.vm).join(', ');
        const why = holders !== '' ? ` (the slot is held by ${holders})` : " (waiting for its turn in the group's queue)";
        say(`  ${at()}  ${name}: ${line}${line === 'held' ? why : ''}`);
        seen.set(name, line);
      }
    }
    if (members.every((m) => m.sim.startRequests.length > 0 && m.bridge.fleet?.slot == null)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const starts = members.map((m) => m.sim.startRequests[0]?.at ?? null);
  say('');
  say(
    table(
      ['VM', 'StartRequests at', 'slot given back at'],
      VMS.map((name, i) => {
        const start = starts[i];
        const given = back.get(name);
        return [name, start == null ? '-' : at(start), given === undefined ? '-' : at(given)];
      }),
    ),
  );
  // never two down at once: each member's maintenance, from its StartRequests until IMDS no
  // longer lists it, overlaps no other's
  const spans = VMS.map((_, i) => ({ from: starts[i] ?? NaN, to: (starts[i] ?? NaN) + MAINTENANCE_MS }));
  const ok =
    spans.every((x) => Number.isFinite(x.from) && Number.isFinite(x.to)) &&
    spans.every((x) => spans.every((y) => x === y || y.to <= x.from || x.to <= y.from));
  say(
    ok
      ? '\nOne member at a time: each approval waited for the previous member to complete and give its slot back.'
      : '\nSomething went wrong: not every member was approved.',
  );
  return { ok, members };
}

/** recordsOf waits (at most 30 s) until the group's store lists a record for each of its `n` members. */
async function recordsOf(config: Record<string, unknown>, n: number): Promise<void> {
  const store = await openFleetStore(FleetStoreConfig.parse(config), 'db');
  try {
    for (const end = Date.now() + 30_000; Date.now() < end; await new Promise((r) => setTimeout(r, 100)))
      if ((await store.list(MEMBER_PREFIX)).length >= n) return;
  } finally {
    await store.close();
  }
}
