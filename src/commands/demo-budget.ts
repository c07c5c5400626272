/**
 * The fleet budget part of `se-bridge demo --fleet`: three VMs in one group with a budget of one,
 * their slots in Azure Blob Storage served by Azurite (Microsoft's emulator, a development
 * dependency: from a checkout after npm ci). Each VM's Reboot is approved by policy once its
 * preparation hook succeeds; the second and third approvals are held, then granted in turn as
 * each member completes. It ends with what each VM's IMDS was told, and when.
 */
import { join } from 'node:path';
import { validateConfig } from '../config/load.ts';
import { Bridge } from '../daemon/bridge.ts';
import type { BridgeEvent } from '../pipeline/cloudevent.ts';
import type { createLogger } from '../lib/log.ts';
import { Azurite, DEV_ACCOUNT } from '../simulator/azurite.ts';
import { ImdsSimulator } from '../simulator/server.ts';
import { table } from './common.ts';

const VMS = ['db-0', 'db-1', 'db-2'];
/** How long each maintenance stays Started at the simulated IMDS. */
const MAINTENANCE_MS = 2000;
const say = (text: string) => process.stdout.write(`${text}\n`);

/** budgetDemo returns whether the group never had more than one member down and every one was approved. */
export async function budgetDemo(dir: string, logger: ReturnType<typeof createLogger>): Promise<boolean> {
  if (!Azurite.available()) {
    say('\nFleet budgets: skipped, the azurite package is not installed (run the demo from a checkout after npm ci).');
    return true;
  }
  say('\nFleet budget: db-0, db-1 and db-2 in group "db", which allows one member down at once.');
  const azurite = await Azurite.start();
  const sims: ImdsSimulator[] = [];
  const bridges: Bridge[] = [];
  const t0 = Date.now();
  const at = (t: number) => `+${((t - t0) / 1000).toFixed(1)} s`;
  const collisions = new Set<string>();
  try {
    say(`slots and member records: Azurite (Blob Storage) on ${azurite.url}`);
    for (const name of VMS) {
      const sim = new ImdsSimulator({ vmName: name, peers: [], timing: 'dev', tickMs: 20 });
      const url = await sim.listen(0);
      sims.push(sim);
      const config = validateConfig(
        {
          imds: { endpoint: url, pollIntervalMs: 250 },
          state: { path: join(dir, `${name}.db`) },
          sinks: [
            { name: 'audit', type: 'file', path: join(dir, `${name}.jsonl`) },
            { name: 'checkpoint', type: 'exec', command: [process.execPath, '-e', '0'], prepare: true },
          ],
          observability: { listen: 'off' },
          approval: { rules: [{ match: {}, action: 'approveAfterHooks' }] },
          fleet: {
            group: 'db',
            maxUnavailable: 1,
            store: { type: 'blob', connectionString: azurite.connectionString(`${azurite.url}/${DEV_ACCOUNT}`), container: 'demo' },
            retryMs: 250,
            heartbeatSeconds: 5,
          },
        },
        'demo --fleet',
        {},
      );
      // the collision three reboots at one time make is foretold to every sink: said here once
      const onCommitted = (events: readonly BridgeEvent[]) => {
        for (const e of events) {
          const c = e.data.collision;
          // each member that foretells it emits one (the first said stands for the rest)
          if (c === undefined || collisions.size > 0) continue;
          collisions.add(e.id);
          say(
            `  ${at(Date.now())}  ${name}: fleet.collision: ${c.due.length} of ${c.group}'s ${c.members} members are due for maintenance at once; the group allows ${c.maxUnavailable} (each member due emits azure.scheduledevent.fleet.collision to its sinks)`,
          );
        }
      };
      const bridge = await Bridge.create({ config, logger, onCommitted });
      await bridge.start();
      bridges.push(bridge);
    }
    for (const sim of sims) sim.addEvent({ EventType: 'Reboot', noticeMs: 15 * 60_000, startedMs: MAINTENANCE_MS, DurationInSeconds: 10 });
    say('Each VM has a Reboot scheduled in 15 minutes, and a preparation hook; the policy approves once it succeeded.');
    const seen = new Map<string, string>();
    const back = new Map<string, number>();
    const end = Date.now() + 60_000;
    const members = VMS.map((name, i) => ({ name, sim: sims[i], bridge: bridges[i] }));
    for (let i = 0; Date.now() < end && i < 2000; i++) {
      for (const { name, sim, bridge } of members) {
        const s = bridge?.fleet;
        if (s == null || sim === undefined) continue;
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
          say(`  ${at(Date.now())}  ${name}: ${line}${line === 'held' ? why : ''}`);
          seen.set(name, line);
        }
      }
      if (sims.every((s) => s.startRequests.length > 0) && bridges.every((b) => b.fleet?.slot == null)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const starts = sims.map((s) => s.startRequests[0]?.at ?? null);
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
    return ok;
  } finally {
    for (const b of bridges) await b.stop(1000);
    for (const s of sims) await s.close();
    await azurite.stop();
  }
}
