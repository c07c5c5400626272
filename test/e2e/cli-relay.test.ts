/**
 * The relay's file and the fleet's reads through the command line, as real processes. Every verb
 * that reads a configuration takes --env-file (and $SE_BRIDGE_ENV_FILE); a read of the fleet
 * store (`fleet status --relay-config`, `fleet status --config`) resolves only the store's
 * secrets, so it works on a host that holds none of the relay's keys; `validate --relay` and
 * `relay` resolve everything they use. The store is Azurite; Service Bus is the local AMQP peer.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { fleetKeys, fleetPeer, INBOX, REPLIES } from '../../testkit/fleet.ts';
import { fleetStoresPerFile } from '../../testkit/fleet-stores.ts';
import { tempDir, waitFor } from '../helpers.ts';
import { cli, start, stopProcesses } from './process.ts';

const stores = fleetStoresPerFile();
let dir: ReturnType<typeof tempDir>;
let peer: AmqpPeer;
let relayFile: string;
let memberFile: string;
/** Only the store's secret (and the relay's public key, which a read does not check against a key it does not have). */
let storeEnv: string;
/** Every secret the relay uses. */
let fullEnv: string;
const keys = fleetKeys();
const NAMES = [
  'FLEET_STORE',
  'RELAY_SB',
  'RELAY_SIGNING_KEY',
  'RELAY_PUBLIC_KEY',
  'RELAY_FLEET_KEY',
  'RELAY_API_SECRET',
  'RELAY_READ_KEY',
  'SLACK_BOT_TOKEN',
  'APPROVAL_SECRET',
];
// none of the secrets is in the caller's environment, and no installed environment file is read
const clean: NodeJS.ProcessEnv = {
  ...Object.fromEntries(NAMES.map((n) => [n, undefined])),
  SE_BRIDGE_ENV_FILE: join('/nonexistent', 'se-bridge.env'),
  SE_BRIDGE_RELAY_CONFIG: '',
};

beforeAll(async () => {
  dir = tempDir();
  peer = await fleetPeer();
  relayFile = join(dir.path, 'relay.yaml');
  writeFileSync(
    relayFile,
    [
      'listen: 127.0.0.1:0',
      'observability: { listen: 127.0.0.1:0 }',
      `serviceBus: { connectionString: "\${RELAY_SB}", queue: ${INBOX}, replies: ${REPLIES} }`,
      'signingKey: ${RELAY_SIGNING_KEY}',
      'publicKey: ${RELAY_PUBLIC_KEY}',
      'fleetKey: ${RELAY_FLEET_KEY}',
      'apiSecrets: ["${RELAY_API_SECRET}"]',
      'readKeys: ["${RELAY_READ_KEY}"]',
      'fleet: { store: { type: blob, connectionString: "${FLEET_STORE}", container: fleet } }',
      'sinks: [ { name: chat, type: slack, botToken: "${SLACK_BOT_TOKEN}", channel: C0123456789 } ]',
      'log: { level: info }',
      '',
    ].join('\n'),
  );
  memberFile = join(dir.path, 'bridge.yaml');
  writeFileSync(
    memberFile,
    [
      `state: { path: ${JSON.stringify(join(dir.path, 'state.db'))} }`,
      'sinks: [ { name: chat, type: slack, botToken: "${SLACK_BOT_TOKEN}", channel: C0123456789 } ]',
      'approval: { secret: "${APPROVAL_SECRET}", publicUrl: "https://vm0.example.com" }',
      'fleet: { group: web, maxUnavailable: 1, store: { type: blob, connectionString: "${FLEET_STORE}", container: fleet } }',
      '',
    ].join('\n'),
  );
  const store = String(stores().config('blob').connectionString);
  storeEnv = join(dir.path, 'store.env');
  writeFileSync(storeEnv, `FLEET_STORE="${store}"\nRELAY_PUBLIC_KEY=${keys.publicKey}\n`);
  fullEnv = join(dir.path, 'full.env');
  writeFileSync(
    fullEnv,
    [
      `FLEET_STORE="${store}"`,
      `RELAY_SB="${peer.connectionString()}"`,
      `RELAY_SIGNING_KEY=${keys.signingKey}`,
      `RELAY_PUBLIC_KEY=${keys.publicKey}`,
      `RELAY_FLEET_KEY=${keys.fleetKey}`,
      `RELAY_API_SECRET=whsec_${Buffer.alloc(32, 9).toString('base64')}`,
      `RELAY_READ_KEY=${'r'.repeat(24)}`,
      'SLACK_BOT_TOKEN=xoxb-1-2-three',
      '',
    ].join('\n'),
  );
}, 60_000);
afterAll(async () => {
  await peer?.close();
  dir?.cleanup();
});

describe("the relay's file and the fleet's reads", () => {
  it('fleet status --relay-config: reads the store with its secret from --env-file, without any of the relay keys', async () => {
    const r = await cli(['fleet', 'status', '--relay-config', relayFile, '--env-file', storeEnv], clean);
    expect(r.stderr).not.toMatch(/is not set|configuration problem/);
    expect(r.stderr).toContain(`se-bridge: read ${storeEnv}`);
    expect([r.code, r.stdout]).toEqual([0, expect.stringContaining('Unwatched: none')]);
    // $SE_BRIDGE_ENV_FILE as for every other verb
    const byVariable = await cli(['fleet', 'status', '--relay-config', relayFile, '--json'], { ...clean, SE_BRIDGE_ENV_FILE: storeEnv });
    expect(byVariable.code).toBe(0);
    expect(JSON.parse(byVariable.stdout)).toMatchObject({ groups: [], unwatched: [], unread: [] });
  });

  it("fleet status --config: a member's read resolves only the store's secret", async () => {
    const r = await cli(['fleet', 'status', '--config', memberFile, '--env-file', storeEnv, '--json'], clean);
    expect(r.stderr).not.toMatch(/is not set|configuration problem/);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ group: 'web', maxUnavailable: 1, members: [], slots: [] });
  });

  it("a read still needs the store's own secret, and names it", async () => {
    const r = await cli(['fleet', 'status', '--relay-config', relayFile], clean);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('fleet.store.connectionString: environment variable FLEET_STORE is not set');
    expect(r.stderr).not.toMatch(/RELAY_SIGNING_KEY|SLACK_BOT_TOKEN/);
  });

  it('validate --relay: resolves every secret, from --env-file; each one missing is named', async () => {
    const missing = await cli(['validate', '--relay', '--config', relayFile, '--env-file', storeEnv], clean);
    expect(missing.code).toBe(2);
    for (const line of [
      'serviceBus.connectionString: environment variable RELAY_SB is not set',
      'signingKey: environment variable RELAY_SIGNING_KEY is not set',
      'fleetKey: environment variable RELAY_FLEET_KEY is not set',
      'apiSecrets[0]: environment variable RELAY_API_SECRET is not set',
      'readKeys[0]: environment variable RELAY_READ_KEY is not set',
      'sinks[0].botToken: environment variable SLACK_BOT_TOKEN is not set',
    ])
      expect(missing.stderr).toContain(line);
    expect(missing.stderr).not.toMatch(/FLEET_STORE|publicKey/);
    const valid = await cli(['validate', '--relay', '--config', relayFile, '--env-file', fullEnv], clean);
    expect(valid.stderr).toContain(`se-bridge: read ${fullEnv}`);
    expect([valid.code, valid.stdout]).toEqual([0, expect.stringContaining('valid relay configuration')]);
  });

  it('relay: takes its secrets from --env-file, and names the one missing', async () => {
    const missing = await cli(['relay', '--config', relayFile, '--env-file', storeEnv], clean);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('signingKey: environment variable RELAY_SIGNING_KEY is not set');
    const relay = start(['relay', '--config', relayFile, '--env-file', fullEnv], clean);
    try {
      await waitFor(() => relay.out.stdout.includes('"relay listening"') || relay.exitCode !== null, 'the relay to listen', 30_000);
      expect(relay.out.stderr).toContain(`se-bridge: read ${fullEnv}`);
      expect(relay.out.stdout).toContain('"relay listening"');
    } finally {
      await stopProcesses([relay]);
    }
    // SIGTERM: a clean stop
    expect(relay.exitCode).toBe(0);
  });
});
