/**
 * The console approves a VM no bridge watches through Resource Manager: the relay in this process
 * (Service Bus played by the AMQP peer), its store Azurite, Resource Graph and Resource Manager an
 * HTTPS stand-in written from their REST reference, the relay's token from the IMDS simulator's
 * managed identity endpoint. No Azure service runs here. The person's click, as the page sends it
 * (its session cookie, its own Origin), is acknowledged at Resource Manager by the person's name;
 * the VM's row says unwatched; a read key is refused.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRelay, type RunningRelay } from '../../src/relay/relay.ts';
import { scheduledEventOf, SUBSCRIPTION, vmId } from '../../testkit/azure-feed.ts';
import { fleetKeys, relayConfig } from '../../testkit/fleet.ts';
import { ArmRelayPeers } from '../../testkit/hostile-fleet.ts';
import { ROOT } from '../helpers.ts';

const TLS = {
  key: readFileSync(join(ROOT, 'test/fixtures/tls/key.pem'), 'utf8'),
  cert: readFileSync(join(ROOT, 'test/fixtures/tls/cert.pem'), 'utf8'),
};
const APPROVE_KEY = 'console-arm-approve-key-0123';
const READ_KEY = 'console-arm-read-key-0123456';
const EVENT = '00000000-0000-4000-c000-000000000501';

let peers: ArmRelayPeers;
const relays: RunningRelay[] = [];

beforeAll(async () => {
  peers = await ArmRelayPeers.start(TLS);
}, 60_000);
afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.close()));
});
afterAll(async () => {
  await peers?.stop();
});

async function relay(): Promise<RunningRelay> {
  const config = relayConfig(peers.peer, fleetKeys(), {
    fleet: { store: { ...peers.stores.config('blob'), container: 'console-arm' }, cacheMs: 0 },
    console: {
      listen: '127.0.0.1:0',
      keys: [
        { name: 'Ada Lovelace', key: APPROVE_KEY, role: 'approve' },
        { name: 'Reader', key: READ_KEY, role: 'read' },
      ],
    },
    azure: {
      subscriptions: [SUBSCRIPTION],
      checkSeconds: 3600,
      resourceGraph: { intervalSeconds: 3600 },
      arm: { endpoint: peers.arm.peer.url, caFile: join(ROOT, 'test/fixtures/tls/cert.pem'), timeoutMs: 5000 },
    },
  });
  const r = await startRelay(config, pino({ level: 'silent' }), { host: '127.0.0.1', port: 0 });
  relays.push(r);
  return r;
}

/** session: the cookie of a sign-in with `key`, as the console's form sends it. */
async function session(r: RunningRelay, key: string): Promise<string> {
  const res = await fetch(`${r.consoleUrl}/console/sign-in`, {
    method: 'POST',
    body: new URLSearchParams({ key }),
    headers: { origin: r.consoleUrl!, 'content-type': 'application/x-www-form-urlencoded' },
    redirect: 'manual',
    signal: AbortSignal.timeout(10_000),
  });
  expect(res.status).toBe(303);
  return /^(se_console=[^;]+)/.exec(res.headers.get('set-cookie') ?? '')![1]!;
}

const approve = (r: RunningRelay, cookie: string, force: Record<string, string> = {}) =>
  fetch(`${r.consoleUrl}/console/approve`, {
    method: 'POST',
    body: new URLSearchParams({ vm: 'ghost-1', eventId: EVENT, ...force }),
    headers: { origin: r.consoleUrl!, cookie, accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
    signal: AbortSignal.timeout(20_000),
  });

describe('the console and a VM no bridge watches', () => {
  it('shows its row unwatched, and approves it through Resource Manager by the person who clicked', async () => {
    peers.arm.rows = [scheduledEventOf({ resourceId: vmId('ghost-1'), eventId: EVENT })];
    const r = await relay();
    await r.graph!.poll();
    const ada = await session(r, APPROVE_KEY);
    const page = await (await fetch(`${r.consoleUrl}/console`, { headers: { cookie: ada }, signal: AbortSignal.timeout(10_000) })).text();
    expect(page).toContain('<h2 id="g-none">No member record</h2>');
    expect(page).toMatch(/ghost-1 <span class="tag warn">unwatched<\/span>/);
    expect(page).toContain('<button type="submit">Approve ghost-1</button>');

    // a read key: refused, nothing acknowledged
    const read = await approve(r, await session(r, READ_KEY));
    expect(read.status).toBe(403);
    expect(peers.arm.acknowledged).toEqual([]);

    // a VM no member record names has no group, so no budget to go through: only a forced approval goes on
    const unforced = await approve(r, ada);
    expect(unforced.status).toBe(409);
    expect(((await unforced.json()) as { message: string }).message).toMatch(/forc/);
    expect(peers.arm.acknowledged).toEqual([]);

    const ok = await approve(r, ada, { force: 'on', reason: 'no bridge on it yet; patch night' });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ heading: 'Approved through Resource Manager' });
    expect(peers.arm.acknowledged.map((a) => a.eventId)).toEqual([EVENT]);
    // recorded in Azure's record of the event, by the person's name
    const events = await r.reader!.read();
    expect(events.azure.find((a) => a.record.eventId === EVENT)?.record.acknowledged).toMatchObject({
      by: 'Ada Lovelace',
      reason: 'no bridge on it yet; patch night',
    });
  }, 60_000);
});
