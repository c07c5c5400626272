/**
 * Whole bridges in one group whose budget counts health (`fleet.health`), over Azurite: each VM
 * has its IMDS simulator and a health endpoint of its own on 127.0.0.1. A VM's service goes down
 * when Azure starts its maintenance and stays down for a random while after the maintenance is
 * over (5 to 20 s, times SE_BRIDGE_WAVE_SCALE: 0.1 here, so 0.5 to 2 s; run with 1 for the full
 * figures). A checker outside the bridges polls every VM's health endpoint and every simulator's
 * Scheduled Events document over HTTP, as an operator's monitor would: a VM is down while its
 * event is Started or its endpoint does not answer 200.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FleetStores } from '../../testkit/fleet-stores.ts';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { waitFor } from '../helpers.ts';
import { FleetConfig } from '../../src/fleet/budget/config.ts';
import { readGroup } from '../../src/fleet/budget/group.ts';

const SCALE = Number(process.env.SE_BRIDGE_WAVE_SCALE ?? '0.1');
let stores: FleetStores;
/** Each VM's health endpoint answers what the test set for it (200 unless set). */
const status = new Map<string, number>();
let service: Server;

beforeAll(async () => {
  stores = await FleetStores.start();
  service = createServer((req, res) => res.writeHead(status.get(req.url?.slice(1) ?? '') ?? 200).end());
  await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
}, 60_000);
afterEach(() => stopAll());
afterAll(async () => {
  service.closeAllConnections();
  await new Promise((resolve) => service.close(resolve));
  await stores?.stop();
});

const healthUrl = (vm: string) => `http://127.0.0.1:${(service.address() as AddressInfo).port}/${vm}`;

function member(group: string, vm: string, maxUnavailable: number) {
  return startBridge({
    sim: { vmName: vm, peers: [], tickMs: 10 },
    sinks: (dir) => [
      { name: 'audit', type: 'file', path: join(dir, 'events.jsonl') },
      { name: 'hook', type: 'exec', command: ['/bin/true'], prepare: true },
    ],
    config: {
      approval: { rules: [{ match: {}, action: 'approveAfterHooks' }] },
      fleet: {
        ...{ group, maxUnavailable, store: stores.config('blob'), retryMs: 200, heartbeatSeconds: 5 },
        health: { http: { url: healthUrl(vm) }, intervalSeconds: 1, settleSeconds: 1, timeoutSeconds: 600 },
      },
    },
  });
}

/**
 * Service plays each VM's application: down from its StartRequests (the VM reboots), up again a
 * random 5 to 20 s (scaled) after its event is gone from IMDS. Checker counts the VMs down, from
 * the outside, every 100 ms. Both loops are bounded by `stop()`, which every test calls.
 */
class Wave {
  readonly #hs: readonly Harness[];
  readonly #upAt = new Map<string, number>();
  readonly #timers: NodeJS.Timeout[] = [];
  most = 0;
  samples = 0;

  constructor(hs: readonly Harness[]) {
    this.#hs = hs;
    this.#timers.push(setInterval(() => this.#play(), 50));
    this.#timers.push(setInterval(() => void this.#check(), 100));
  }

  #play(): void {
    const now = Date.now();
    for (const h of this.#hs) {
      const vm = h.sim.vmName;
      if (h.sim.startRequests.length === 0 || this.#upAt.get(vm) === -1) continue;
      if (!this.#upAt.has(vm)) status.set(vm, 503);
      if (!this.#upAt.has(vm) || (this.#upAt.get(vm) === 0 && h.sim.events.length > 0)) {
        this.#upAt.set(vm, 0);
        continue;
      }
      if (this.#upAt.get(vm) === 0) this.#upAt.set(vm, now + (5000 + Math.random() * 15_000) * SCALE);
      else if (now >= this.#upAt.get(vm)!) {
        status.delete(vm);
        this.#upAt.set(vm, -1);
      }
    }
  }

  async #check(): Promise<void> {
    const down = await Promise.all(
      this.#hs.map(async (h) => {
        const [health, imds] = await Promise.all([
          fetch(healthUrl(h.sim.vmName), { signal: AbortSignal.timeout(2000) }).then((r) => r.status),
          fetch(`${h.sim.url}/metadata/scheduledevents?api-version=2020-07-01`, {
            headers: { Metadata: 'true' },
            signal: AbortSignal.timeout(2000),
          }).then((r) => r.json() as Promise<{ Events: { EventStatus: string }[] }>),
        ]);
        return health !== 200 || imds.Events.some((e) => e.EventStatus === 'Started');
      }),
    ).catch(() => null);
    if (down === null) return;
    this.samples++;
    this.most = Math.max(this.most, down.filter(Boolean).length);
  }

  stop(): void {
    this.#timers.forEach((t) => clearInterval(t));
  }
}

const approvedOnce = (h: Harness) => h.sim.startRequests.length === 1 && h.kinds().some((k) => k.startsWith('completed:'));

describe('a fleet budget that counts health, ten bridges over Azurite', () => {
  it('maxUnavailable 2, every event ready at once, each service down a while after its maintenance: never more than two down, all ten approved', async () => {
    status.clear();
    const hs = await Promise.all(Array.from({ length: 10 }, (_, i) => member('hw-ten', `hw${i}`, 2)));
    const wave = new Wave(hs);
    try {
      for (const h of hs) h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 1200, DurationInSeconds: 5 });
      await waitFor(() => hs.every(approvedOnce) && status.size === 0, 'every member approved, back and healthy', 240_000, 100);
      // the last member's slot goes back once it has settled; the checker has seen the wave through
      await waitFor(() => hs.every((h) => h.lines.some((l) => l.msg === 'fleet budget: slot given back')), 'every slot given back');
    } finally {
      wave.stop();
    }
    expect(wave.samples).toBeGreaterThan(20);
    expect(wave.most).toBeLessThanOrEqual(2);
    expect(wave.most).toBe(2); // the budget was used, not a queue of one
    for (const h of hs) expect(h.sim.startRequests).toHaveLength(1);
    // some were held because a member had not settled yet: its health named as the reason, or its slot
    const held = hs.flatMap((h) => h.lines.filter((l) => String(l.msg).startsWith('approval held:')));
    expect(held.length).toBeGreaterThan(0);
  }, 300_000);

  it('one member unhealthy from the start, never in maintenance, counts: at most one more is approved at a time', async () => {
    status.clear();
    status.set('hw-sick', 503);
    const sick = await member('hw-one', 'hw-sick', 2);
    const hs = await Promise.all([0, 1, 2].map((i) => member('hw-one', `hw-one${i}`, 2)));
    // the sick member's record says so before the wave starts
    await waitFor(() => sick.bridge.fleet !== null, 'the sick member in the group');
    const config = FleetConfig.parse({ group: 'hw-one', maxUnavailable: 2, store: stores.config('blob') });
    await waitFor(
      async () => (await readGroup(config)).members.find((m) => m.vm === 'hw-sick')?.health?.healthy === false,
      "the sick member's record saying it is not healthy",
    );
    const wave = new Wave([...hs, sick]);
    try {
      for (const h of hs) h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 1200, DurationInSeconds: 5 });
      await waitFor(
        () => hs.every(approvedOnce) && [...status.keys()].every((k) => k === 'hw-sick'),
        'the three approved and healthy',
        180_000,
        100,
      );
    } finally {
      wave.stop();
    }
    expect(wave.most).toBe(2); // the sick one and one in maintenance, never two in maintenance
    const starts = hs.map((h) => h.sim.startRequests[0]!.at).sort((a, b) => a - b);
    const ends = hs.map((h) => h.lines.find((l) => l.msg === 'fleet budget: slot given back')?.time as number).sort((a, b) => a - b);
    // each approval came after the one before it had given its slot back
    for (let i = 1; i < starts.length; i++) expect(starts[i]).toBeGreaterThanOrEqual(ends[i - 1]!);
    const held = hs.flatMap((h) => h.lines.filter((l) => String(l.msg).startsWith('approval held:')));
    expect(held.some((l) => /hw-sick is not healthy since/.test(String(l.msg)))).toBe(true);
  }, 240_000);
});
