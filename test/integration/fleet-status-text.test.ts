/**
 * What `se-bridge fleet status --relay-config` prints of the store's records, whose text comes from
 * Azure's feed and from members that may write anything: shown as text on its line, never as
 * terminal control. The relay (in this process) keeps Azure's records from its Resource Graph
 * poll, a stand-in of the query API (no Azure service runs here) reached with the IMDS simulator's
 * managed identity token; the store is Blob Storage served by Azurite; the command runs as a process.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memberKey, memberName } from '../../src/fleet/budget/records.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import { startRelay } from '../../src/relay/relay.ts';
import type { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { ArmStandIn, scheduledEventOf, SUBSCRIPTION, vmId } from '../../testkit/azure-feed.ts';
import { fleetKeys, fleetPeer, relayConfig, relayInput } from '../../testkit/fleet.ts';
import { FleetStores } from '../../testkit/fleet-stores.ts';
import { cli } from '../e2e/process.ts';
import { ROOT, tempDir, waitFor } from '../helpers.ts';

const READ_KEY = 'fleet-read-key-0123456789';
const CA_FILE = join(ROOT, 'test/fixtures/tls/cert.pem');
const TLS = { key: readFileSync(join(ROOT, 'test/fixtures/tls/key.pem'), 'utf8'), cert: readFileSync(CA_FILE, 'utf8') };
const ESC = '\u001b';

let stores: FleetStores;
let peer: AmqpPeer;
let identity: ImdsSimulator;
let graph: ArmStandIn;
let dir: ReturnType<typeof tempDir>;

beforeAll(async () => {
  stores = await FleetStores.start();
  peer = await fleetPeer();
  identity = new ImdsSimulator({ vmName: 'relay-vm', tickMs: 10 });
  process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = await identity.listen();
  graph = new ArmStandIn(TLS, 10);
  await graph.peer.listen();
  dir = tempDir();
}, 60_000);
afterAll(async () => {
  delete process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST;
  await graph?.peer.close();
  await identity?.close();
  await peer?.close();
  await stores?.stop();
  dir?.cleanup();
});

describe('fleet status --relay-config', () => {
  it("shows what Azure's records and the members' records say as text: no escape sequence, carriage return or line of theirs reaches the terminal", async () => {
    const container = 'status-text';
    const keys = fleetKeys();
    const eventId = '00000000-0000-4000-8000-000000000990';
    graph.rows = [
      scheduledEventOf({
        resourceId: vmId('nobody-1'),
        eventId,
        resources: [`nobody-1${ESC}[2K\rFAKE-VM  all good`],
        eventType: `Reboot${ESC}[31m\nInjected line: run this`,
        notBefore: new Date(Date.now() + 600_000).toUTCString(),
      }),
    ];
    const azure = {
      subscriptions: [SUBSCRIPTION],
      checkSeconds: 3600,
      resourceGraph: { intervalSeconds: 3600 },
      arm: { endpoint: graph.peer.url, caFile: CA_FILE },
    };
    const fleet = { store: { ...stores.config('blob'), container }, cacheMs: 0 };
    const relay = await startRelay(relayConfig(peer, keys, { fleet, readKeys: [READ_KEY], azure }), pino({ level: 'silent' }), {
      host: '127.0.0.1',
      port: 0,
    });
    try {
      const events = async () =>
        (
          (await (await fetch(`${relay.url}/v1/fleet/events`, { headers: { authorization: `Bearer ${READ_KEY}` } })).json()) as {
            events: unknown[];
          }
        ).events;
      await waitFor(async () => (await events()).length === 1, "Azure's record kept", 20_000, 100);
    } finally {
      await relay.close();
    }
    // a member's record, as any member may write it
    const store = await openFleetStore(fleet.store as never, 'web');
    const vm = `web-1${ESC}]0;owned\u0007`;
    const key = memberKey({ name: 'web-1', resourceId: vmId('web-1') });
    const at = new Date().toISOString();
    await store.put(
      memberName(key),
      {
        ...{ member: key, vm, resourceId: vmId('web-1'), heartbeatAt: at, heartbeatSeconds: 30, slot: null, maxUnavailable: 1 },
        events: [
          { eventId: `E${ESC}[8m`, eventType: `Freeze\r\nx`, status: 'Scheduled', notBefore: at, durationInSeconds: 5, approved: false },
        ],
        health: { healthy: false, since: at, detail: `${ESC}[2J${ESC}[31mFAKE\nLINE` },
      },
      null,
    );
    await store.close();

    const file = join(dir.path, 'relay.json');
    writeFileSync(file, JSON.stringify(relayInput(peer, keys, { fleet, readKeys: [READ_KEY], azure })));
    const status = await cli(['fleet', 'status', '--relay-config', file]);
    expect(status.stderr).toBe('');
    expect(status.code).toBe(0);
    // every control character of a record is shown escaped, on the record's own line
    // eslint-disable-next-line no-control-regex -- control characters are what must not reach the terminal
    expect(status.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
    expect(status.stdout).toContain('Reboot\\u001b[31m\\nInjected line: run this');
    expect(status.stdout).toContain('web-1\\u001b]0;owned\\u0007');
    expect(status.stdout).toContain('\\u001b[2J\\u001b[31mFAKE\\nLINE');
    expect(status.stdout.split('\n').filter((l) => /^(Injected line|x|LINE)/.test(l))).toEqual([]);
  }, 60_000);
});
