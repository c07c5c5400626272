/**
 * Fleet approvals tried by hand, as docs/fleet-approvals.md tells it, every part through the CLI:
 * `se-bridge simulate --servicebus` (with the first VM's IMDS), a second `simulate` for the other
 * VM, `fleet keys` and `fleet link-key`, a relay and two bridges configured from the banner. A
 * signed API call to the relay approves the first VM's event, and only that one.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { secretKey, signatureHeaders } from '../../src/lib/standard-webhooks.ts';
import { tempDir, waitFor } from '../helpers.ts';
import { cli, start, stopProcesses } from './process.ts';

type Child = ReturnType<typeof start>;
const children: Child[] = [];
const dir = tempDir('se-bridge-sim-sb-');
const API_SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;

afterAll(async () => {
  // the bridges and the relay first, then the simulators they were connected to
  await stopProcesses(children.filter((c) => !c.spawnargs.includes('simulate')));
  await stopProcesses(children.filter((c) => c.spawnargs.includes('simulate')));
  dir.cleanup();
}, 30_000);

function run(args: string[], env: NodeJS.ProcessEnv = {}): Child {
  const child = start(args, env);
  children.push(child);
  return child;
}

/** The first line of a child's stdout that matches, once it is there. */
const lineOf = (child: Child, pattern: RegExp, what: string) =>
  waitFor(
    () =>
      child.out.stdout
        .split('\n')
        .map((l) => pattern.exec(l))
        .find((m) => m !== null) ?? undefined,
    what,
    30_000,
  );

async function imds(url: string, path: string, init: RequestInit = {}): Promise<unknown> {
  const res = await fetch(`${url}${path}`, { ...init, headers: { Metadata: 'true', 'content-type': 'application/json', ...init.headers } });
  return res.json();
}

describe('simulate --servicebus: fleet approvals by hand', () => {
  it('a relay and two bridges configured from the banner approve one VM through the stand-in', async () => {
    const first = run(['simulate', '--listen', '127.0.0.1:0', '--vm-name', 'web-0', '--servicebus', '127.0.0.1:0']);
    const second = run(['simulate', '--listen', '127.0.0.1:0', '--vm-name', 'web-1']);
    const connectionString = (await lineOf(first, /^ {2}connection string: (.+)$/, 'the Service Bus banner'))[1]!;
    expect(connectionString).toMatch(/^Endpoint=sb:\/\/127\.0\.0\.1:\d+;.*UseDevelopmentEmulator=true$/);
    const queues = await lineOf(first, /queue (\S+) \(sessions, duplicate detection.*queue (\S+) \(sessions\)/, 'the queue names');
    const imdsUrls = [
      (await lineOf(first, /^IMDS simulator on (\S+)/, 'the first IMDS'))[1]!,
      (await lineOf(second, /^IMDS simulator on (\S+)/, 'the second IMDS'))[1]!,
    ];

    const keys = JSON.parse((await cli(['fleet', 'keys'])).stdout) as { signingKey: string; publicKey: string; fleetKey: string };
    const resourceIds = await Promise.all(
      imdsUrls.map(
        async (u) => ((await imds(u, '/metadata/instance/compute?api-version=2021-02-01')) as { resourceId: string }).resourceId,
      ),
    );
    const linkKeys = await Promise.all(
      resourceIds.map(async (id) => (await cli(['fleet', 'link-key', '--vm', id], { SE_BRIDGE_FLEET_KEY: keys.fleetKey })).stdout.trim()),
    );
    expect(linkKeys[0]).not.toBe(linkKeys[1]);

    const serviceBus = { connectionString, queue: queues[1], replies: queues[2] };
    const relayFile = join(dir.path, 'relay.yaml');
    writeFileSync(
      relayFile,
      JSON.stringify({
        listen: '127.0.0.1:0',
        observability: { listen: 'off' },
        serviceBus,
        signingKey: keys.signingKey,
        publicKey: keys.publicKey,
        fleetKey: keys.fleetKey,
        apiSecrets: [API_SECRET],
        log: { level: 'info' },
      }),
    );
    const relay = run(['relay', '--config', relayFile]);
    const relayUrl = (JSON.parse((await lineOf(relay, /^(.*"relay listening".*)$/, 'the relay to listen'))[1]!) as { url: string }).url;
    await waitFor(async () => (await fetch(`${relayUrl}/readyz`)).status === 200, 'the relay to hold its replies session', 30_000);

    for (const [i, url] of imdsUrls.entries()) {
      const file = join(dir.path, `bridge-${i}.yaml`);
      const inbox = { connectionString, queue: queues[1], replies: queues[2], relayPublicKey: keys.publicKey, linkKey: linkKeys[i] };
      writeFileSync(
        file,
        JSON.stringify({
          imds: { endpoint: url, pollIntervalMs: 200 },
          state: { path: join(dir.path, `state-${i}.db`) },
          sinks: [{ name: 'out', type: 'stdout' }],
          approval: { relayUrl, inbox },
          observability: { listen: 'off' },
        }),
      );
      run(['run', '--config', file]);
    }

    // a maintenance for both VMs' simulators; only web-0 is approved
    for (const url of imdsUrls) await imds(url, '/_sim/scenario', { method: 'POST', body: JSON.stringify({ name: 'user-reboot' }) });
    const eventIdOf = async (url: string) => {
      const doc = (await imds(url, '/metadata/scheduledevents?api-version=2020-07-01')) as {
        Events: { EventId: string; EventStatus: string }[];
      };
      return doc.Events.find((e) => e.EventStatus === 'Scheduled')?.EventId;
    };
    const eventId = await waitFor(() => eventIdOf(imdsUrls[0]!), 'the scheduled event on web-0', 30_000);

    const body = JSON.stringify({ vm: resourceIds[0], eventId, approver: 'ops@example.com', reason: 'tried by hand' });
    const id = `msg_${Date.now()}`;
    const headers = signatureHeaders([secretKey(API_SECRET)!], id, body);
    // the bridges hold their sessions once they have read IMDS; until then the relay answers 202 and the command waits in the queue
    const res = await fetch(`${relayUrl}/v1/approvals`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    expect([200, 202]).toContain(res.status);

    const startRequests = async (url: string) =>
      ((await imds(url, '/_sim/state')) as { startRequests: { eventIds: string[] }[] }).startRequests;
    await waitFor(async () => (await startRequests(imdsUrls[0]!)).length > 0, 'web-0 to be approved', 30_000);
    expect((await startRequests(imdsUrls[0]!)).flatMap((r) => r.eventIds)).toEqual([eventId]);
    expect(await startRequests(imdsUrls[1]!)).toEqual([]);
  });
});
