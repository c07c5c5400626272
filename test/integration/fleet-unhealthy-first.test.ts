/**
 * Unhealthy first (fleet.unhealthyMembers) in whole bridges over the budget's real stores, with
 * real health checks (an HTTP endpoint on 127.0.0.1 whose answer the test sets for each VM): a
 * member the group counts as down for its health takes its own maintenance without a further
 * slot with alwaysAllow, and waits for a slot like any member with ifHealthyBudget.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FleetStores, STORE_KINDS, type StoreKind } from '../../testkit/fleet-stores.ts';
import { startBridge, stopAll } from '../../testkit/harness.ts';
import { laterReads, waitFor } from '../helpers.ts';
import { FleetConfig } from '../../src/fleet/budget/config.ts';
import { readGroup } from '../../src/fleet/budget/group.ts';

/** Each VM's health endpoint: /<vm> answers the status the test set for it (200 unless set). */
const statuses = new Map<string, number>();
let server: Server;
let stores: FleetStores;
beforeAll(async () => {
  server = createServer((req, res) => void res.writeHead(statuses.get(req.url?.slice(1) ?? '') ?? 200).end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  stores = await FleetStores.start();
}, 60_000);
afterEach(() => stopAll());
afterAll(async () => {
  await stores?.stop();
  await new Promise((resolve) => server.close(resolve));
});

function member(kind: StoreKind, group: string, vm: string, unhealthyMembers: string) {
  const health = {
    http: { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/${vm}` },
    intervalSeconds: 1,
    settleSeconds: 0,
  };
  return startBridge({
    sim: { vmName: vm, peers: [], tickMs: 10 },
    sinks: (dir) => [{ name: 'audit', type: 'file', path: join(dir, 'events.jsonl') }],
    config: {
      approval: { rules: [{ match: {}, action: 'approve' }] },
      fleet: { group, maxUnavailable: 1, store: stores.config(kind), retryMs: 200, heartbeatSeconds: 5, health, unhealthyMembers },
    },
  });
}

describe.each(STORE_KINDS)('a member not healthy, over the %s store', (kind) => {
  it.each([['alwaysAllow'], ['ifHealthyBudget']])(
    "unhealthyMembers: %s, the group's one slot held by another member",
    async (policy) => {
      const group = `first-${policy.toLowerCase()}-${kind}`;
      const [h, u] = [`${group}-h`, `${group}-u`];
      const config = FleetConfig.parse({ group, maxUnavailable: 1, store: stores.config(kind) });
      const [mh, mu] = await Promise.all([member(kind, group, h, policy), member(kind, group, u, policy)]);
      // the healthy member takes the group's one slot for a long maintenance
      mh.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 600_000, DurationInSeconds: 60 });
      await waitFor(() => mh.sim.startRequests.length === 1, 'the healthy member approved', 30_000, 50);
      // then the other stops being healthy, and its record says so: the group counts it as down
      statuses.set(u, 503);
      await waitFor(
        async () => (await readGroup(config)).members.find((m) => m.vm === u)?.health?.healthy === false,
        'its record says so',
        30_000,
        100,
      );
      const eu = mu.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 600_000, DurationInSeconds: 60 });
      if (policy === 'alwaysAllow') {
        await waitFor(() => mu.sim.startRequests.length === 1, 'the member not healthy approved', 30_000, 50);
        expect(mu.lines.find((l) => String(l.msg).includes('approved without a further slot'))).toMatchObject({
          eventId: eu.eventId,
          group,
        });
        expect(mu.events().filter((e) => e.type.endsWith('.approved'))).toHaveLength(1);
        // started, and still not healthy: it takes no slot, nor writes an overflow record; the healthy one holds the only slot
        await waitFor(() => mu.kinds().includes(`started:${eu.eventId}`), 'its maintenance Started', 30_000, 50);
        await laterReads(mu.sim, 5, 30_000);
        const g = await readGroup(config);
        expect(g.slots.map((s) => s.vm)).toEqual([h]);
        expect(g.members.find((m) => m.vm === u)).toMatchObject({ holdsSlot: false, unavailable: { counts: true } });
      } else {
        // it waits for the slot like any member: held by the healthy one, through ten more reads
        await waitFor(
          () => mu.lines.some((l) => String(l.msg).startsWith('approval held:') && String(l.msg).includes(`held by ${h}`)),
          'held',
          30_000,
          50,
        );
        await laterReads(mu.sim, 10, 30_000);
        expect(mu.sim.startRequests).toHaveLength(0);
        expect(mu.lines.some((l) => String(l.msg).includes('approved without a further slot'))).toBe(false);
      }
    },
    90_000,
  );
});
