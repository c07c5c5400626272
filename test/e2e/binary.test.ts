/**
 * The single executable (npm run build:binary): built here, then run with an environment that
 * has no Node on its PATH at all. Its version, the demo, and `run` against the IMDS simulator
 * with a webhook and a file sink, then with the sinks whose client libraries the executable keeps
 * as assets compiled on first use: Event Hubs and Service Bus (against the AMQP peer) and Slack's
 * Web API (against an HTTP peer); managed identity tokens from the simulator's token endpoint
 * for Event Hubs (over TLS), Event Grid and a webhook behind Entra ID; and the relay with a
 * bridge that takes commands from its approval inbox (fleet approvals).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { EventGridPeer } from '../../testkit/eventgrid-peer.ts';
import { KubeStandIn } from '../../testkit/kube-apiserver.ts';
import { readJwt } from '../../src/simulator/identity.ts';
import { API_SECRET, fleetApproval, fleetKeys, fleetPeer, INBOX, sessionOf } from '../../testkit/fleet.ts';
import { secretKey, signatureHeaders } from '../../src/lib/standard-webhooks.ts';
import { freePort, readText, ROOT, tempDir } from '../helpers.ts';
import { awaitWhileRunning, command, stopProcesses, type Running } from './process.ts';

const BUILT = join(ROOT, 'build', 'se-bridge-linux-x64');
/** The executable is run from a copy outside the checkout, so nothing of node_modules is within its reach. */
let BINARY = BUILT;
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
let dir: ReturnType<typeof tempDir>;

/** binary runs the executable with no Node anywhere on PATH and nothing of the checkout around it. */
function binary(args: string[], timeoutMs = 60_000, env: Record<string, string> = {}): Running {
  return command(BINARY, args, { cwd: dir.path, env: { PATH: '/nonexistent', HOME: dir.path, TMPDIR: dir.path, ...env } }, timeoutMs);
}

/** daemonConfig writes a daemon's YAML configuration (its own state file, no metrics port) and returns its path. */
function daemonConfig(name: string, imds: string, sinks: string[]): string {
  const path = join(dir.path, `${name}.yaml`);
  const lines = [
    `imds: { endpoint: ${imds}, pollIntervalMs: 200 }`,
    `state: { path: ${JSON.stringify(join(dir.path, `${name}.db`))} }`,
    'observability: { listen: "off" }',
    'sinks:',
  ];
  writeFileSync(path, [...lines, ...sinks.map((s) => `  - ${s}`)].join('\n'));
  return path;
}

beforeAll(() => {
  dir = tempDir('se-bridge-binary-');
  // postject's notes about the ELF sections are noise; on a failure they are in the error
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-binary.ts'), 'linux-x64'], { cwd: ROOT, stdio: 'pipe' });
  BINARY = join(dir.path, 'se-bridge');
  copyFileSync(BUILT, BINARY);
  chmodSync(BINARY, 0o755);
}, 180_000);
afterAll(() => dir?.cleanup());

describe('the single executable (linux-x64)', () => {
  it('is one file that prints its version', async () => {
    expect(statSync(BINARY).size).toBeGreaterThan(50 * 2 ** 20);
    const r = await binary(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${VERSION}\n`);
  });

  it('runs the demo', async () => {
    const r = await binary(['demo', '--duration', '10'], 60_000);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/total\s+\d+/);
  }, 60_000);

  it('runs against IMDS and delivers to a webhook and a file', async () => {
    const sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
    await sim.listen(0);
    const hook = new HttpPeer();
    await hook.listen();
    try {
      const events = join(dir.path, 'events.jsonl');
      const cfg = daemonConfig('bridge', sim.url, [
        `{ name: hook, type: webhook, url: ${hook.url}/hook }`,
        `{ name: audit, type: file, path: ${JSON.stringify(events)} }`,
      ]);
      const run = binary(['run', '--config', cfg]);
      const e = sim.addEvent({ noticeMs: 600_000 });
      await awaitWhileRunning(run, () => readText(events).includes(e.eventId) && hook.requests.length >= 1, 'the event at both sinks');
      run.child.kill('SIGTERM');
      const r = await run;
      expect(r.code).toBe(0);
      expect(hook.requests.map((q) => q.headers['ce-id'])).toEqual([`${e.eventId}/scheduled`]);
      expect(JSON.parse(readText(events).trim()).id).toBe(`${e.eventId}/scheduled`);
    } finally {
      await hook.close();
      await sim.close();
    }
  }, 60_000);

  it('renders a webhook template with jsonata loaded from its assets, and `template test` works', async () => {
    const sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
    await sim.listen(0);
    const hook = new HttpPeer();
    await hook.listen();
    try {
      const cfg = daemonConfig('templated', sim.url, [
        `{ name: chat, type: webhook, url: ${hook.url}/hook, template: '{ "text": $headline(), "id": data.eventId }' }`,
      ]);
      const run = binary(['run', '--config', cfg]);
      const e = sim.addEvent({ noticeMs: 600_000 });
      await awaitWhileRunning(run, () => hook.requests.length >= 1, 'the templated request');
      run.child.kill('SIGTERM');
      expect((await run).code).toBe(0);
      expect(JSON.parse(hook.requests[0]!.body)).toEqual({ text: 'vm0 will be rebooted', id: e.eventId });
      const rendered = await binary(['template', 'test', '--config', cfg, '--sink', 'chat', '--scenario', 'user-reboot']);
      expect(rendered.code).toBe(0);
      expect(rendered.stdout).toContain('"text": "sim-vm-0 will be rebooted"');
    } finally {
      await hook.close();
      await sim.close();
    }
  }, 60_000);

  it("loads the Azure SDKs and Slack's Web API from its assets when a sink needs them, and delivers", async () => {
    const sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
    await sim.listen(0);
    const amqp = new AmqpPeer();
    await amqp.listen();
    const slack = new HttpPeer();
    await slack.listen();
    slack.answer = (r) =>
      r.url === '/api/chat.postMessage'
        ? {
            status: 200,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ ok: true, channel: 'C1', ts: '1700000000.000001' }),
          }
        : { status: 404 };
    try {
      const cfg = daemonConfig('azure', sim.url, [
        `{ name: hub, type: eventhubs, connectionString: ${JSON.stringify(amqp.connectionString('maintenance'))} }`,
        `{ name: queue, type: servicebus, connectionString: ${JSON.stringify(amqp.connectionString())}, entity: q }`,
        `{ name: chat, type: slack, botToken: xoxb-test, channel: "#ops", apiUrl: ${slack.url}/api/ }`,
      ]);
      const run = binary(['run', '--config', cfg]);
      const e = sim.addEvent({ noticeMs: 600_000 });
      const at = (address: string) => amqp.messages.filter((m) => m.address === address).length;
      await awaitWhileRunning(
        run,
        () => at('maintenance') >= 1 && at('q') >= 1 && slack.requests.length >= 1,
        'the event at Event Hubs, Service Bus and Slack',
      );
      run.child.kill('SIGTERM');
      const r = await run;
      expect(r.code).toBe(0);
      expect([at('maintenance'), at('q')]).toEqual([1, 1]);
      for (const address of ['maintenance', 'q']) {
        expect(amqp.messages.filter((m) => m.address === address).map((m) => m.message.application_properties?.cloudEvents_id)).toEqual([
          `${e.eventId}/scheduled`,
        ]);
      }
      expect(slack.requests.map((q) => q.url)).toEqual(['/api/chat.postMessage']);
      expect(slack.requests[0]!.headers.authorization).toBe('Bearer xoxb-test');
    } finally {
      await Promise.all([slack.close(), amqp.close(), sim.close()]);
    }
  }, 60_000);

  it('prepares the VM: a load balancer probe, and a Kubernetes node drained through the Kubernetes client (src/kube) inside the executable', async () => {
    const sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
    await sim.listen(0);
    const api = await new KubeStandIn().start();
    api.addNode('aks-node-0');
    api.addPod('web', 'web-0', 'aks-node-0', { owner: 'ReplicaSet' });
    const port = await freePort();
    try {
      const kubeconfig = join(dir.path, 'kubeconfig');
      writeFileSync(kubeconfig, api.kubeconfig());
      const cfg = daemonConfig('prepare', sim.url, [
        `{ name: lb, type: probe, listen: "127.0.0.1:${port}", drainSeconds: 0, prepare: true }`,
        `{ name: node, type: kubernetes, kubeconfig: ${JSON.stringify(kubeconfig)}, nodeName: aks-node-0, prepare: true, drain: { pollMs: 50 } }`,
      ]);
      writeFileSync(cfg, `${readFileSync(cfg, 'utf8')}\napproval: { rules: [{ match: {}, action: approveAfterHooks }] }\n`);
      const run = binary(['run', '--config', cfg]);
      const e = sim.addEvent({ noticeMs: 600_000, startedMs: 600_000 });
      await awaitWhileRunning(run, () => sim.startRequests.length === 1, 'the approval once the probe is out and the node drained');
      expect((await fetch(`http://127.0.0.1:${port}/probe`)).status).toBe(503);
      expect(api.nodes.get('aks-node-0')!.spec.unschedulable).toBe(true);
      expect(api.pods.has('web/web-0')).toBe(false);
      sim.removeEvent(e.eventId);
      await awaitWhileRunning(run, () => api.nodes.get('aks-node-0')!.spec.unschedulable === undefined, 'the node given back');
      expect((await fetch(`http://127.0.0.1:${port}/probe`)).status).toBe(200);
      run.child.kill('SIGTERM');
      expect((await run).code).toBe(0);
    } finally {
      await Promise.all([api.close(), sim.close()]);
    }
  }, 60_000);

  it('gets managed identity tokens from IMDS for Event Hubs over TLS, Event Grid and a webhook behind Entra ID', async () => {
    const tlsFiles = {
      key: readFileSync(join(ROOT, 'test/fixtures/tls/key.pem'), 'utf8'),
      cert: readFileSync(join(ROOT, 'test/fixtures/tls/cert.pem'), 'utf8'),
    };
    const sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
    await sim.listen(0);
    const ua = {
      clientId: '6c1f1e2a-3b4c-4d5e-8f60-718293a4b5c6',
      objectId: '0a9b8c7d-6e5f-4a3b-9c2d-1e0f2a3b4c5d',
      resourceId: '/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/ua',
    };
    sim.identities.configure({ userAssigned: [ua] });
    const amqp = new AmqpPeer();
    await amqp.listen({ tls: tlsFiles });
    amqp.auth = { kind: 'jwt', audience: 'https://eventhubs.azure.net/', principals: [sim.identities.system.objectId] };
    const grid = new EventGridPeer(tlsFiles);
    await grid.listen();
    const app = new HttpPeer();
    await app.listen();
    app.answer = (r) =>
      readJwt(String(r.headers.authorization ?? '').replace(/^Bearer /, ''))?.aud === 'api://bridge-test'
        ? { status: 204 }
        : { status: 401 };
    try {
      const cfg = daemonConfig('identity', sim.url, [
        `{ name: hub, type: eventhubs, fullyQualifiedNamespace: "${amqp.namespace}", eventHubName: maintenance, credential: { kind: managedIdentity } }`,
        `{ name: grid, type: eventgrid, endpoint: "${grid.url}", namespaceTopic: maintenance, credential: { kind: managedIdentity, clientId: ${ua.clientId} } }`,
        `{ name: app, type: webhook, url: "${app.url}/hook", auth: { kind: managedIdentity, scope: "api://bridge-test/.default" } }`,
      ]);
      // the simulator's token endpoint, and the peers' certificate, as a deployment would set them
      const run = binary(['run', '--config', cfg], 60_000, {
        AZURE_POD_IDENTITY_AUTHORITY_HOST: sim.url,
        NODE_EXTRA_CA_CERTS: join(ROOT, 'test/fixtures/tls/cert.pem'),
      });
      const e = sim.addEvent({ noticeMs: 600_000 });
      await awaitWhileRunning(
        run,
        () => amqp.messages.length >= 1 && grid.events('maintenance').length >= 1 && app.requests.some((r) => r.headers.authorization),
        'the event at all three',
      );
      run.child.kill('SIGTERM');
      expect((await run).code).toBe(0);
      expect(amqp.tokens.filter((t) => t.status === 202).map((t) => t.claims?.oid)).toContain(sim.identities.system.objectId);
      expect(grid.publishes.filter((p) => p.status === 200)).toEqual([{ topic: 'maintenance', auth: 'bearer', status: 200, events: 1 }]);
      expect(grid.events('maintenance')[0]).toMatchObject({ subject: e.eventId });
      expect(app.requests.at(-1)!.headers['ce-subject']).toBe(e.eventId);
      expect(new Set(sim.identities.requests.map((r) => `${r.resource} ${r.asked}`))).toEqual(
        new Set([
          'https://eventhubs.azure.net/ system',
          `https://eventgrid.azure.net client_id=${ua.clientId}`,
          'api://bridge-test system',
        ]),
      );
    } finally {
      await Promise.all([app.close(), grid.close(), amqp.close(), sim.close()]);
    }
  }, 60_000);

  it('runs the relay and a bridge with an approval inbox, and approves through them', async () => {
    const sim = new ImdsSimulator({ vmName: 'fleet-vm', peers: [], tickMs: 10 });
    await sim.listen(0);
    const peer = await fleetPeer();
    const keys = fleetKeys();
    const relayFile = join(dir.path, 'relay.yaml');
    writeFileSync(
      relayFile,
      JSON.stringify({
        listen: '127.0.0.1:0',
        // its probes on a port of its own: the default 9464 is taken by a second suite running beside this one
        observability: { listen: '127.0.0.1:0' },
        serviceBus: { connectionString: peer.connectionString() },
        signingKey: keys.signingKey,
        fleetKey: keys.fleetKey,
        apiSecrets: [API_SECRET],
      }),
    );
    const relay = binary(['relay', '--config', relayFile]);
    const bridgeFile = join(dir.path, 'fleet-bridge.yaml');
    writeFileSync(
      bridgeFile,
      JSON.stringify({
        imds: { endpoint: sim.url, pollIntervalMs: 200 },
        state: { path: join(dir.path, 'fleet.db') },
        observability: { listen: 'off' },
        approval: fleetApproval(peer, keys, sessionOf(sim)),
      }),
    );
    const bridge = binary(['run', '--config', bridgeFile]);
    try {
      let url = '';
      await awaitWhileRunning(
        relay,
        () => (url = /"url":"(http:[^"]+)","queue"/.exec(relay.child.out.stdout)?.[1] ?? '') !== '',
        'the relay to listen',
        60_000,
      );
      await awaitWhileRunning(bridge, () => peer.queues.queue(INBOX).liveSessions().length === 1, 'the inbox session', 60_000);
      const e = sim.addEvent({ noticeMs: 600_000 });
      const body = JSON.stringify({ vm: sessionOf(sim), eventId: e.eventId, approver: 'binary' });
      let status = 0;
      for (let i = 0; i < 100 && status !== 200; i++) {
        const res = await fetch(`${url}/v1/approvals`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...signatureHeaders([secretKey(API_SECRET)!], `msg_binary_${i}`, body) },
          body,
        }).catch((err: unknown) => {
          throw new Error(`the relay did not answer (${String(err)}); it said: ${relay.child.out.stdout} ${relay.child.out.stderr}`);
        });
        status = res.status;
        if (status !== 200) await new Promise((r) => setTimeout(r, 200));
      }
      expect(status).toBe(200);
      expect(sim.startRequests.map((s) => s.eventIds)).toEqual([[e.eventId]]);
      // a clean stop is part of the story; asserted here, so that a failure above is not hidden by it
      relay.child.kill('SIGTERM');
      bridge.child.kill('SIGTERM');
      expect((await relay).code).toBe(0);
      expect((await bridge).code).toBe(0);
    } finally {
      await stopProcesses([relay.child, bridge.child]);
      await Promise.all([peer.close(), sim.close()]);
    }
    // two executables, a Service Bus peer and an approval: on a loaded machine each start takes seconds
  }, 120_000);

  it('comes in a release archive with the installer and the files it installs, as the cloud-init and scale set examples expect', () => {
    const archive = join(ROOT, 'build', 'se-bridge-linux-x64.tar.gz');
    const files = execFileSync('tar', ['-tzf', archive], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map((f) => f.replace(/^\.\//, ''));
    expect(files).toEqual(
      expect.arrayContaining([
        'se-bridge-linux-x64',
        'scripts/install-linux.sh',
        'config/bridge.minimal.yaml',
        'config/bridge.example.yaml',
        'config/systemd/se-bridge.service',
        'config/systemd/se-bridge.env',
        'LICENSE',
      ]),
    );
    const cloudInit = readFileSync(join(ROOT, 'config', 'cloud-init.yaml'), 'utf8');
    expect(cloudInit.startsWith('#cloud-config\n')).toBe(true);
    const doc = parse(cloudInit) as { write_files: { path: string; content: string }[]; runcmd: (string | string[])[] };
    const commands = doc.runcmd.map((c) => (Array.isArray(c) ? c.join(' ') : c)).join('\n');
    for (const f of [
      'se-bridge-linux-x64.tar.gz',
      '/opt/se-bridge-release/scripts/install-linux.sh',
      '/opt/se-bridge-release/se-bridge-linux-x64',
    ])
      expect(commands).toContain(f);
    const config = doc.write_files.find((w) => w.path === '/etc/se-bridge/bridge.yaml')!;
    expect(
      validateConfig(parse(config.content), 'cloud-init', { OPS_WEBHOOK_URL: 'https://ops.example.com/hook' }).sinks.map((x) => x.type),
    ).toEqual(['webhook', 'file']);
    const extension = JSON.parse(readFileSync(join(ROOT, 'config', 'azure', 'vmss-custom-script.json'), 'utf8')) as {
      fileUris: string[];
      commandToExecute: string;
    };
    expect(extension.fileUris[0]).toMatch(/\/se-bridge-linux-x64\.tar\.gz$/);
    expect(extension.commandToExecute).toContain('scripts/install-linux.sh /opt/se-bridge-release/se-bridge-linux-x64');
  });
});
