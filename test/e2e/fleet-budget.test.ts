/**
 * Fleet budgets with real daemons (se-bridge run, one process per VM, each with its own IMDS
 * simulator) over Blob Storage served by Azurite (Microsoft's emulator): a slot holder killed
 * with SIGKILL keeps its slot until its recorded end, then another member takes it over;
 * `se-bridge approve` is held while the slot is taken and may force past it with a reason;
 * `se-bridge fleet status` and `se-bridge status` show the group.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Azurite, DEV_ACCOUNT } from '../../src/simulator/azurite.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { freePort, ROOT, tempDir, waitFor } from '../helpers.ts';
import { cli, start, stopProcesses } from './process.ts';
import { FleetConfig } from '../../src/fleet/budget/config.ts';
import { memberKey } from '../../src/fleet/budget/records.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import { memberVm } from '../../testkit/fleet-stores.ts';

const SECRET = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;
let azurite: Azurite;
let dir: ReturnType<typeof tempDir>;
const sims: ImdsSimulator[] = [];

beforeAll(async () => {
  azurite = await Azurite.start();
  dir = tempDir();
}, 60_000);

afterAll(async () => {
  await Promise.all(sims.map((s) => s.close()));
  await azurite?.stop();
  dir?.cleanup();
});

/** simulated: an IMDS simulator for the VM `name`, closed after the file's tests. */
async function simulated(name: string): Promise<ImdsSimulator> {
  const sim = new ImdsSimulator({ vmName: name, peers: [], tickMs: 20 });
  await sim.listen(0);
  sims.push(sim);
  return sim;
}

/** daemonFile writes the configuration `file` of a daemon of VM `vm` reading `sim` (its state and events named after the VM), with `more`. */
function daemonFile(file: string, vm: string, sim: ImdsSimulator, more: Record<string, unknown>): string {
  const path = join(dir.path, `${file}.json`);
  writeFileSync(
    path,
    JSON.stringify({
      imds: { endpoint: sim.url, pollIntervalMs: 200 },
      state: { path: join(dir.path, `${vm}.db`) },
      sinks: [{ name: 'audit', type: 'file', path: join(dir.path, `${vm}.jsonl`) }],
      observability: { listen: 'off' },
      ...more,
    }),
  );
  return path;
}

async function vm(name: string, rules: unknown[], marginSeconds: number): Promise<{ sim: ImdsSimulator; config: string }> {
  const sim = await simulated(name);
  const config = daemonFile(name, name, sim, {
    approval: { secret: SECRET, rules },
    server: { listen: `127.0.0.1:${await freePort()}` },
    fleet: {
      group: 'e2e',
      maxUnavailable: 1,
      store: { type: 'blob', connectionString: azurite.connectionString(`${azurite.url}/${DEV_ACCOUNT}`), container: 'e2e' },
      marginSeconds,
      heartbeatSeconds: 5,
      retryMs: 200,
    },
  });
  return { sim, config };
}

describe('fleet budget, real daemons', () => {
  it('a holder killed mid-maintenance keeps its slot until its recorded end; approve is held, then taken over, and --force passes', async () => {
    // the held steps below (a kill, an event, two commands) must come before vm-a's recorded end,
    // which the daemons keep on their own clocks: a margin a loaded machine does not use up
    const a = await vm('vm-a', [{ match: {}, action: 'approve' }], 45);
    const b = await vm('vm-b', [], 45);
    const c = await vm('vm-c', [], 45);
    const daemons = [a, b, c].map((v) => start(['run', '--config', v.config]));
    try {
      await waitFor(() => daemons.every((d) => d.out.stdout.includes('approval server listening')), 'three daemons', 30_000);
      // vm-a's Reboot: NotBefore in 3 s, approved at once by policy; it stays Started long after
      const ea = a.sim.addEvent({ EventType: 'Reboot', noticeMs: 3000, startedMs: 600_000, DurationInSeconds: 0 });
      // NotBefore as IMDS says it, to the second (the simulator forgets it once the event starts)
      const notBeforeA = Math.floor(a.sim.events.find((x) => x.eventId === ea.eventId)!.notBefore! / 1000) * 1000;
      await waitFor(() => a.sim.startRequests.length === 1, "vm-a's early approval", 15_000);
      const group = await waitFor(async () => {
        const r = await cli(['fleet', 'status', '--json', '--config', b.config]);
        const g = JSON.parse(r.stdout) as { slots: { vm: string; eventId: string; until: string }[] };
        return g.slots.length === 1 ? g : null;
      }, 'the slot in the store');
      expect(group.slots[0]).toMatchObject({ vm: 'vm-a', eventId: ea.eventId });
      const until = Date.parse(group.slots[0]!.until);
      // the recorded end: NotBefore (or later, once approved) + 0 s + 45 s of margin
      expect(until).toBeGreaterThanOrEqual(notBeforeA + 45_000);

      daemons[0]!.kill('SIGKILL');
      const eb = b.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
      await waitFor(() => daemons[1]!.out.stdout.includes(eb.eventId), "vm-b's event", 15_000);
      const held = await cli(['approve', eb.eventId, '--config', b.config]);
      expect(held.code).toBe(1);
      expect(held.stderr).toMatch(new RegExp(`held: group e2e allows 1 member in maintenance at once; held by vm-a \\(${ea.eventId}\\)`));
      expect(b.sim.startRequests).toHaveLength(0);
      // the text status of vm-b shows the group and who holds its slot
      const status = await cli(['status', '--config', b.config]);
      expect(status.stdout).toMatch(/Group e2e: 1 of 1 slot held; \d members/);
      expect(status.stdout).toMatch(/slot-0\s+vm-a\s+/);

      // past the dead holder's recorded end, the slot is taken over
      await waitFor(() => Date.now() > until + 200, "vm-a's recorded end", 60_000, 100);
      const taken = await cli(['approve', eb.eventId, '--config', b.config, '--reason', 'after the window']);
      expect(taken.stderr).toBe('');
      expect(taken.stdout).toBe(`${eb.eventId}: approved\n`);
      expect(b.sim.startRequests[0]!.at).toBeGreaterThan(until);
      expect(daemons[1]!.out.stdout).toMatch(/"code":"FLEET_SLOT_TAKEN_OVER"[^\n]*"from":"vm-a"/);

      // vm-c: held by vm-b now; with --force and a reason it is approved past the budget, on the record
      const ec = c.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
      await waitFor(() => daemons[2]!.out.stdout.includes(ec.eventId), "vm-c's event", 15_000);
      expect((await cli(['approve', ec.eventId, '--config', c.config])).stderr).toMatch(/held by vm-b/);
      const noReason = await cli(['approve', ec.eventId, '--config', c.config, '--force']);
      expect(noReason.code).toBe(2);
      const forced = await cli(['approve', ec.eventId, '--config', c.config, '--force', '--reason', 'security patch']);
      expect(forced.stdout).toBe(`${ec.eventId}: approved past the fleet budget\n`);
      expect(c.sim.startRequests).toHaveLength(1);
      const g = JSON.parse((await cli(['fleet', 'status', '--json', '--config', c.config])).stdout) as {
        slots: { vm: string; mode: string }[];
        members: { vm: string }[];
      };
      expect(g.slots.map((s) => `${s.vm}:${s.mode}`).sort()).toEqual(['vm-b:early', 'vm-c:forced']);
      expect(g.members.map((m) => m.vm).sort()).toEqual(['vm-a', 'vm-b', 'vm-c']);
    } finally {
      await stopProcesses(daemons);
    }
  }, 180_000);

  it('fleet forget removes the record of a member gone for good, says what it removed, and refuses a live member, a slot holder or a name two members share', async () => {
    const group = 'forget';
    const config = join(dir.path, 'forget.json');
    const fleet = {
      group,
      maxUnavailable: 1,
      store: { type: 'blob', connectionString: azurite.connectionString(`${azurite.url}/${DEV_ACCOUNT}`), container: 'e2e' },
    };
    writeFileSync(config, JSON.stringify({ state: { path: join(dir.path, 'forget.db') }, observability: { listen: 'off' }, fleet }));
    const store = await openFleetStore(FleetConfig.parse(fleet).store, group);
    const now = Date.now();
    const record = (vm: string, heartbeatAt: number, resourceId = memberVm(vm).resourceId) => {
      const member = memberKey({ name: vm, resourceId });
      return { member, vm, resourceId, heartbeatAt: new Date(heartbeatAt).toISOString(), heartbeatSeconds: 30, events: [], slot: null };
    };
    const old = record('vm-old', now - 30 * 86_400_000);
    const live = record('vm-live', now);
    const holder = record('vm-slot', now - 30 * 86_400_000);
    const twins = [
      record(
        'twin',
        now - 86_400_000,
        '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/a/providers/Microsoft.Compute/virtualMachines/twin',
      ),
      record(
        'twin',
        now - 86_400_000,
        '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/b/providers/Microsoft.Compute/virtualMachines/twin',
      ),
    ];
    try {
      for (const r of [old, live, holder, ...twins]) await store.put(`member-${r.member}`, r, null);
      const until = new Date(now + 3_600_000).toISOString();
      await store.put(
        'slot-0',
        { member: holder.member, vm: 'vm-slot', eventIds: ['E'], since: new Date(now).toISOString(), until, mode: 'early' },
        null,
      );
      const members = async () => (await store.list('member-')).map((r) => (r.value as { vm: string }).vm).sort();
      const forget = (...args: string[]) => cli(['fleet', 'forget', ...args, '--config', config]);

      // by resource id, in another case: removed, and said
      const removed = await forget(old.resourceId!.toUpperCase());
      expect(removed).toMatchObject({ code: 0, stderr: '' });
      expect(removed.stdout).toBe(
        `Removed the record of vm-old (member-${old.member}) from group forget; it was last written ${old.heartbeatAt}.\n`,
      );
      expect(await members()).toEqual(['twin', 'twin', 'vm-live', 'vm-slot']);
      // refused, each saying why, and nothing removed
      const refused = await Promise.all([forget('vm-live'), forget('vm-slot'), forget('twin'), forget('nobody'), forget('vm-old')]);
      expect(refused.map((r) => r.code)).toEqual([1, 1, 1, 1, 1]);
      expect(refused[0].stderr).toMatch(
        /^se-bridge fleet forget: vm-live wrote its record \d+ s ago .*: it is alive, and writes it again at its next heartbeat; --force removes it all the same\n$/,
      );
      expect(refused[1].stderr).toContain(`vm-slot holds slot-0 until ${until}: it counts as down until then`);
      expect(refused[2].stderr).toMatch(
        /2 members of group forget are named twin \(\S+resourceGroups\/[ab]\/\S+, \S+resourceGroups\/[ab]\/\S+\): name one by its resource id/,
      );
      expect(refused[3].stderr).toContain('group forget has no member nobody (by VM name or resource id)');
      expect(await members()).toEqual(['twin', 'twin', 'vm-live', 'vm-slot']);
      // --force: the slot holder's record goes, its slot stays until its recorded end
      const forced = await forget('vm-slot', '--force');
      expect(forced.code).toBe(0);
      expect(forced.stdout).toContain(`Its slot slot-0 stays held until ${until}: the group counts it as down until then.`);
      expect((await store.get('slot-0'))?.value).toMatchObject({ member: holder.member });
      // hostile text is shown as text; no VM is no usage
      expect((await forget('\u001b[31mx')).stderr).toContain('no member \\u001b[31mx');
      expect((await cli(['fleet', 'forget', '--config', config])).code).toBe(2);
    } finally {
      await store.close();
    }
  }, 60_000);

  it('status and fleet status say what holds an approval: a member not healthy (by name, since when), the calendar, and why a collision is one', async () => {
    const group = 'words';
    const sim = await simulated('vm-w');
    const store = { type: 'blob', connectionString: azurite.connectionString(`${azurite.url}/${DEV_ACCOUNT}`), container: 'e2e' };
    const fleet = {
      ...{ group, maxUnavailable: 1, store, heartbeatSeconds: 5, marginSeconds: 15, retryMs: 200 },
      health: { exec: { command: [process.execPath, '-e', 'process.exit(0)'] }, intervalSeconds: 1, settleSeconds: 0 },
    };
    const file = (name: string, more: Record<string, unknown>) =>
      daemonFile(name, 'vm-w', sim, { approval: { rules: [{ match: {}, action: 'approve' }] }, fleet: { ...fleet, ...more } });
    const config = file('vm-w', {});
    // the rest of the group, as their records say: vm-h not healthy, vm-b due when vm-w is
    const e = sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
    // as IMDS says it (to the second), and as the records and the collision carry it
    const notBefore = new Date(Math.floor(e.notBefore! / 1000) * 1000).toISOString();
    const records = await openFleetStore(FleetConfig.parse(fleet).store, group);
    const record = (vm: string, more: Record<string, unknown>) => ({
      ...{ member: memberKey(memberVm(vm)), vm, resourceId: memberVm(vm).resourceId, heartbeatAt: new Date().toISOString() },
      ...{ heartbeatSeconds: 3600, events: [], slot: null, maxUnavailable: 1, ...more },
    });
    const sickSince = new Date(Date.now() - 60_000).toISOString();
    const vmB = { eventId: 'B-1', eventType: 'Reboot', status: 'Scheduled', notBefore, durationInSeconds: -1, approved: false };
    try {
      for (const r of [
        record('vm-h', { health: { healthy: false, since: sickSince, detail: 'answered 503, not 200' } }),
        record('vm-b', { events: [vmB], health: { healthy: true, since: sickSince } }),
      ])
        await records.put(`member-${r.member}`, r, null);
    } finally {
      await records.close();
    }
    const daemon = start(['run', '--config', config]);
    try {
      // its policy asks for a slot, and the budget holds it: vm-h, not healthy, counts as down
      const held = new RegExp(
        `held by the budget \\(vm-h not healthy since ${sickSince.replace(/\./g, '\\.')}, counted as down\\) since \\S+`,
      );
      const group_ = await waitFor(
        async () => {
          const r = await cli(['fleet', 'status', '--config', config]);
          return held.test(r.stdout) ? r : null;
        },
        "vm-w's approval held, in its record",
        30_000,
        500,
      ).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}; the daemon said: ${daemon.out.stdout.slice(-3000)} ${daemon.out.stderr.slice(-1000)}`);
      });
      expect(group_.stdout).toMatch(/^Group words: 0 of 1 slot held; 3 members /m);
      expect(group_.stdout).toMatch(
        new RegExp(
          `^Not healthy, so counted as down without a slot: vm-h \\(since ${sickSince.replace(/\./g, '\\.')}, until \\S+\\)\\.$`,
          'm',
        ),
      );
      expect(group_.stdout).toMatch(
        new RegExp(
          `^Collision foretold: 2 of words's 3 members are due for maintenance between ${notBefore.replace(/\./g, '\\.')} and \\S+ \\(vm-b: Reboot not before ${notBefore.replace(/\./g, '\\.')}; vm-w: Reboot not before ${notBefore.replace(/\./g, '\\.')}\\), while vm-h is not healthy and counted as down: 3 down at once, and the group allows 1\\.$`,
          'm',
        ),
      );
      const json = JSON.parse((await cli(['fleet', 'status', '--json', '--config', config])).stdout) as Record<string, any>;
      // the members due as a person reads them: the earliest first, then by VM
      expect(json.collision).toMatchObject({
        unhealthy: ['vm-h'],
        due: [
          { vm: 'vm-b', eventId: 'B-1' },
          { vm: 'vm-w', eventId: e.eventId },
        ],
      });
      expect([...json.collision.vms].sort()).toEqual(['vm-b', 'vm-w']);
      expect(json.members.find((m: { vm: string }) => m.vm === 'vm-h').unavailable).toMatchObject({ counts: true, since: sickSince });
      // status says it where it would say "not approved"
      expect((await cli(['status', '--config', config])).stdout).toMatch(new RegExp(`Reboot\\s+Scheduled\\s+vm-w\\*.*${held.source}`));
      expect(sim.startRequests).toHaveLength(0);
    } finally {
      await stopProcesses([daemon]);
    }
    // with the group's calendar in a blackout, the calendar holds it first, and says until when
    const frozen = file('vm-w-frozen', {
      calendar: { timeZone: 'UTC', blackouts: [{ name: 'change-freeze', days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] }] },
    });
    const status = await cli(['status', '--config', frozen]);
    expect(status.stdout).toMatch(
      /Reboot\s+Scheduled\s+vm-w\*.*held by the calendar \(inside the blackout change-freeze, none before NotBefore; only a forced approval goes through\)/,
    );
    expect(JSON.parse((await cli(['status', '--json', '--config', frozen])).stdout).events[0].held).toMatch(/^held by the calendar/);
  }, 90_000);

  it("the blob store reached with the VM's managed identity: a token from IMDS's endpoint, over HTTPS", async () => {
    const tls = { cert: join(ROOT, 'test/fixtures/tls/cert.pem'), key: join(ROOT, 'test/fixtures/tls/key.pem') };
    const secure = await Azurite.start({ tls, oauth: true });
    const sim = await simulated('vm-mi');
    const store = {
      type: 'blob',
      accountUrl: `${secure.url}/${DEV_ACCOUNT}`,
      credential: { kind: 'managedIdentity' },
      container: 'fleet-mi',
    };
    const config = daemonFile('vm-mi', 'vm-mi', sim, {
      approval: { rules: [{ match: {}, action: 'approve' }] },
      fleet: { group: 'mi', maxUnavailable: 1, store, heartbeatSeconds: 5 },
    });
    // the fixture's self-signed certificate, trusted as a private CA would be
    const env = { NODE_EXTRA_CA_CERTS: tls.cert };
    const daemon = start(['run', '--config', config], env);
    try {
      const e = sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
      await waitFor(() => sim.startRequests.length === 1, 'the approval, with a slot', 30_000).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}; the daemon said: ${daemon.out.stdout.slice(-3000)} ${daemon.out.stderr.slice(-2000)}`);
      });
      expect(sim.identities.requests.filter((r) => r.status === 200).map((r) => r.resource)).toContain('https://storage.azure.com');
      const status = await cli(['fleet', 'status', '--json', '--config', config], { ...env, AZURE_POD_IDENTITY_AUTHORITY_HOST: sim.url });
      expect(status.stderr).toBe('');
      expect((JSON.parse(status.stdout) as { slots: { vm: string; eventId: string }[] }).slots).toEqual([
        expect.objectContaining({ vm: 'vm-mi', eventId: e.eventId }),
      ]);
      // without a token, Azurite refuses: the credential is what let the bridge in
      const trusting = new Agent({ connect: { ca: readFileSync(tls.cert) } });
      const anonymous = await request(`${secure.url}/${DEV_ACCOUNT}/fleet-mi?restype=container&comp=list`, { dispatcher: trusting });
      expect(anonymous.statusCode).toBe(403);
      await anonymous.body.dump();
      await trusting.close();
    } finally {
      await stopProcesses([daemon]);
      await secure.stop();
    }
  }, 90_000);
});
