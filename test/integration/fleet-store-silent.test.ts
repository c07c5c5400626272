/**
 * A fleet store that accepts connections and never answers (a TCP listener on 127.0.0.1 that
 * reads nothing and writes nothing), behind the real clients of both stores (the project's Blob
 * REST client and its Kubernetes client): every call has a deadline on the client, so the budget fails closed
 * and says so, a forced approval goes through, `fleet status` answers, and the requests are
 * aborted rather than left open.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FleetBudget } from '../../src/fleet/budget/budget.ts';
import { asBudget, FleetConfig } from '../../src/fleet/budget/config.ts';
import { readGroup } from '../../src/fleet/budget/group.ts';
import { groupText } from '../../src/fleet/budget/group-text.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import { DEV_ACCOUNT, DEV_KEY } from '../../src/simulator/azurite.ts';
import { memberVm, outcome, scheduledFor, STORE_KINDS, type StoreKind } from '../../testkit/fleet-stores.ts';
import { startBridge, stopAll } from '../../testkit/harness.ts';
import { kubeconfigOf } from '../../testkit/kube-objects.ts';
import { captureLogger, waitFor } from '../helpers.ts';

let silent: Server;
const sockets = new Set<Socket>();
let dir: string;

beforeAll(async () => {
  silent = createServer((socket) => {
    sockets.add(socket);
    // what the client sends is read and dropped (so its closing is seen), and nothing is ever answered
    socket.resume();
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  dir = mkdtempSync(join(tmpdir(), 'se-bridge-test-silent-'));
});

afterEach(() => stopAll());

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((resolve) => silent.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

const url = () => `http://127.0.0.1:${(silent.address() as { port: number }).port}`;

function storeConfig(kind: StoreKind): Record<string, unknown> {
  if (kind === 'blob')
    return {
      type: 'blob',
      connectionString: `DefaultEndpointsProtocol=http;AccountName=${DEV_ACCOUNT};AccountKey=${DEV_KEY};BlobEndpoint=${url()}/${DEV_ACCOUNT};`,
      container: 'fleet',
    };
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, kubeconfigOf(url().replace('http:', 'https:')));
  return { type: 'kubernetes', namespace: 'se-bridge', kubeconfig };
}

describe.each(STORE_KINDS)('a %s store that never answers', (kind) => {
  it('fails closed within the deadline and says so; a forced approval goes on; fleet status answers; no request is left open', async () => {
    const group = `silent-${kind}`;
    const config = asBudget(FleetConfig.parse({ group, maxUnavailable: 1, store: storeConfig(kind), storeTimeoutMs: 1000 }));
    const { logger, lines } = captureLogger();
    const view = { vm: memberVm('vm-a'), document: null, goodReads: 1, approvalServerUrl: null };
    const budget = new FleetBudget({
      config,
      store: await openFleetStore(config.store, group, config.storeTimeoutMs),
      view,
      logger,
      givenBack: () => true,
    });
    await budget.heartbeat();
    expect(budget.state()).toMatchObject({ storeReachable: false, lastError: expect.stringMatching(/no answer within 1 s$/) });
    expect(lines.filter((l) => l.code === 'FLEET_STORE_UNAVAILABLE')).toHaveLength(1);
    const e = scheduledFor('vm-a');
    expect(await outcome(budget.take(e, { by: 'policy', via: 'policy' }))).toBe('FLEET_STORE_UNAVAILABLE');

    // a person's forced approval, while a heartbeat waits on the store ahead of it
    const beat = budget.heartbeat();
    const forced = await budget.take(e, { by: 'alice', via: 'api', force: true, reason: 'patch window' });
    expect(forced).toMatchObject({
      forced: true,
      slot: null,
      note: expect.stringMatching(/did not answer within 1 s|no answer within 1 s/),
    });
    await beat;

    const g = await readGroup(config);
    expect(g.unread.map((u) => u.what)).toEqual(['the slots', "the members' records"]);
    expect(g.unread.every((u) => /no answer within 1 s/.test(u.why))).toBe(true);
    expect(groupText(g, (h, rows) => [h, ...rows].map((r) => r.join(' | ')).join('\n'))).toContain('Could not read the slots:');

    // every request was aborted at its deadline: the connections it opened are closed, not left
    // waiting (a Lease request still in its TLS handshake too: undici gives it up at the signal)
    await waitFor(() => sockets.size === 0, 'the connections to the silent store to close', 25_000);
  }, 60_000);

  it('a whole bridge: /readyz says the store is unreachable, an early approval is refused (503), a forced one is approved', async () => {
    const h = await startBridge({
      sim: { vmName: 'vm-s', peers: [], tickMs: 10 },
      sinks: (d) => [{ name: 'audit', type: 'file', path: join(d, 'events.jsonl') }],
      config: {
        fleet: { group: `silent-bridge-${kind}`, maxUnavailable: 1, store: storeConfig(kind), storeTimeoutMs: 1000, heartbeatSeconds: 5 },
      },
    });
    await waitFor(() => h.bridge.fleet?.storeReachable === false, 'the budget to say the store is unreachable', 15_000);
    const e = h.sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => h.bridge.store.journal.knowsEvent(e.eventId), 'the event');
    expect(await outcome(h.bridge.approvals.approve(e.eventId, { by: 'ops', via: 'api' }))).toBe('FLEET_STORE_UNAVAILABLE');
    // a policy's attempt waits on the store; a person's forced approval does not wait behind it (it would share its failure)
    const policy = outcome(h.bridge.approvals.approve(e.eventId, { by: 'policy', via: 'policy' }));
    const r = await h.bridge.approvals.approve(e.eventId, { by: 'alice', via: 'api', force: true, reason: 'patch window' });
    expect(r).toMatchObject({ status: 'approved', forced: true });
    expect(await policy).toBe('FLEET_STORE_UNAVAILABLE');
    expect(h.sim.startRequests.map((s) => s.eventIds)).toEqual([[e.eventId]]);
  }, 60_000);
});
