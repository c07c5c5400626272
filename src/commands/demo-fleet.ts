/**
 * se-bridge demo --fleet: fleet approvals on one machine. A local AMQP peer stands in for
 * Service Bus (the inbox and replies queues, with sessions and duplicate detection), three
 * simulated VMs each run a bridge with an approval inbox and no approval server, and two relay
 * replicas take the requests. It approves one VM by the API, another by its link, shows that a
 * VM's key cannot approve another VM, sends one request to both replicas, and ends with a table
 * of what each VM's IMDS was told. Then a fleet budget (demo-budget.ts): three VMs in a group
 * that allows one down at once, approved in turn.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { linkKeyFor, newFleetKeys, sessionIdOf, type FleetKeys } from '../fleet/keys.ts';
import { startRelay, type RunningRelay } from '../relay/relay.ts';
import { issueToken } from '../approval/signatures.ts';
import { validateConfig } from '../config/load.ts';
import { Bridge } from '../daemon/bridge.ts';
import { pino } from 'pino';
import { createLogger } from '../lib/log.ts';
import { signatureHeaders, secretKey } from '../lib/standard-webhooks.ts';
import type { BridgeEvent } from '../pipeline/cloudevent.ts';
import type { AmqpPeer } from '../simulator/servicebus/amqp-peer.ts';
import { INBOX, localInbox, localRelayConfig, localServiceBus, REPLIES } from './local-fleet.ts';
import { ImdsSimulator } from '../simulator/server.ts';
import { must } from '../lib/must.ts';
import { EXIT, table } from './common.ts';
import { budgetDemo } from './demo-budget.ts';

const VMS = ['web-0', 'web-1', 'web-2'];

/** eventOf: the Scheduled event the VM saw first. */
const eventOf = (v: Vm): BridgeEvent => must(v.scheduled[0], `${v.name}'s scheduled event`);

interface Vm {
  readonly name: string;
  readonly sim: ImdsSimulator;
  readonly bridge: Bridge;
  readonly session: string;
  readonly scheduled: BridgeEvent[];
}

const say = (text: string) => process.stdout.write(`${text}\n`);

async function until<T>(check: () => T | undefined | null | false, what: string, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (let i = 0; Date.now() < end && i < 10_000; i++) {
    const v = check();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the demo timed out waiting for ${what}`);
}

export async function fleetDemo(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'se-bridge-fleet-demo-'));
  // the story is what the demo prints; the daemons' own log lines go to a file beside their state
  const logFile = join(dir, 'demo.log');
  const logger = createLogger({ level: process.env.LOG_LEVEL || 'info', destination: pino.destination({ dest: logFile, sync: true }) });
  const peer = await localServiceBus();
  const keys = newFleetKeys();
  const apiSecret = `whsec_${Buffer.from(keys.fleetKey, 'base64').subarray(0, 24).toString('base64')}`;
  const relays: RunningRelay[] = [];
  const vms: Vm[] = [];
  try {
    for (let i = 0; i < 2; i++)
      relays.push(
        await startRelay(localRelayConfig(peer, keys, { apiSecrets: [apiSecret], replyWaitMs: 5000 }), logger, {
          host: '127.0.0.1',
          port: 0,
        }),
      );
    say(`Service Bus stand-in (AMQP) on 127.0.0.1:${peer.port}: queues ${INBOX} and ${REPLIES}, with sessions`);
    say(`relay replicas: ${relays.map((r) => r.url).join(', ')}`);
    const [relayA, relayB] = [must(relays[0], 'the first relay'), must(relays[1], 'the second relay')];
    for (const name of VMS) vms.push(await startVm(name, peer, keys, relayA.url, dir, logger));
    await until(() => vms.every((v) => v.bridge.inbox?.connected) && relays.every((r) => r.bus.listening), 'the inbox sessions');
    say(`${vms.length} VMs, each holding its own inbox session; no VM listens on any port\n`);

    for (const v of vms) v.sim.addEvent({ EventType: 'Reboot', noticeMs: 15 * 60_000 });
    await until(() => vms.every((v) => v.scheduled.length > 0), 'the scheduled events');
    const [a, b, c] = [must(vms[0], 'VM 0'), must(vms[1], 'VM 1'), must(vms[2], 'VM 2')];
    say('Each VM has a Reboot scheduled in 15 minutes.\n');

    // 1. the API, signed with the Standard Webhooks secret, naming the VM by its resource id
    const apiKey = must(secretKey(apiSecret), 'the API secret');
    const body = JSON.stringify({ vm: a.bridge.identity.resourceId, eventId: eventOf(a).subject, approver: 'change-pipeline' });
    let res = await fetch(`${relayA.url}/v1/approvals`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signatureHeaders([apiKey], 'demo-1', body) },
      body,
    });
    say(`1. POST /v1/approvals for ${a.name}: ${res.status} ${await res.text()}`);

    // 2. the link in the VM's chat message, answered by the relay
    const link = must(must(b.bridge.approvalLinks, 'the approval links').link(eventOf(b)), 'the approval link');
    const form = `token=${new URL(link).searchParams.get('token')}`;
    res = await fetch(`${relayB.url}/v1/approve`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
    });
    say(`2. the approval link of ${b.name}, posted to the other replica: ${res.status} ${await res.text()}`);

    // 3. a compromised VM: its own link key cannot sign for another VM
    const own = linkKeyFor(Buffer.from(keys.fleetKey, 'base64'), a.session);
    const forged = issueToken(own, { e: eventOf(c).subject, v: c.session, x: Math.floor(Date.now() / 1000) + 600 });
    res = await fetch(`${relayA.url}/v1/approve`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${forged}`,
    });
    say(`3. a token for ${c.name} signed with ${a.name}'s key: ${res.status} ${await res.text()}`);

    // 4. one request, both replicas: one command (duplicate detection), one approval
    const twice = JSON.stringify({ vm: c.bridge.identity.resourceId, eventId: eventOf(c).subject, approver: 'on-call' });
    const headers = { 'content-type': 'application/json', ...signatureHeaders([apiKey], 'demo-4', twice) };
    const answers = await Promise.all(
      relays.map((r) => fetch(`${r.url}/v1/approvals`, { method: 'POST', headers, body: twice }).then((x) => x.status)),
    );
    say(
      `4. the same request to both replicas for ${c.name}: ${answers.join(' and ')} (duplicates dropped by the queue: ${peer.queues.queue(INBOX).duplicatesDropped})\n`,
    );

    await until(() => vms.every((v) => v.sim.startRequests.length > 0), 'the approvals');
    const rows = vms.map((v) => {
      const approved = v.bridge.store.approvals.of(eventOf(v).subject);
      return [
        v.name,
        eventOf(v).subject.slice(0, 8),
        approved ? `${approved.by} (${approved.via})` : '-',
        String(v.sim.startRequests.length),
      ];
    });
    say(table(['VM', 'EventId', 'approved by', 'StartRequests'], rows));
    const ok = vms.every((v) => v.sim.startRequests.length === 1) && peer.queues.queue(INBOX).deadLetters.length === 0;
    say(
      `\n${ok ? 'Every VM was approved exactly once, through Service Bus only.' : 'Something went wrong: see above.'} Events, state and the daemons' log: ${dir}`,
    );
    const budgeted = await budgetDemo(dir, logger);
    return ok && budgeted ? EXIT.ok : EXIT.failure;
  } finally {
    await Promise.all(relays.map((r) => r.close()));
    for (const v of vms) {
      await v.bridge.stop(1000);
      await v.sim.close();
    }
    await peer.close();
  }
}

async function startVm(
  name: string,
  peer: AmqpPeer,
  keys: FleetKeys,
  relayUrl: string,
  dir: string,
  logger: ReturnType<typeof createLogger>,
): Promise<Vm> {
  const sim = new ImdsSimulator({ vmName: name, peers: [], timing: 'dev' });
  const url = await sim.listen(0);
  const session = sessionIdOf({ resourceId: sim.compute().resourceId ?? null, name });
  const config = validateConfig(
    {
      imds: { endpoint: url, pollIntervalMs: 500 },
      state: { path: join(dir, `${name}.db`) },
      sinks: [{ name: 'audit', type: 'file', path: join(dir, `${name}.jsonl`) }],
      observability: { listen: 'off' },
      approval: localInbox(peer, keys, session, relayUrl),
    },
    'demo --fleet',
    {},
  );
  const scheduled: BridgeEvent[] = [];
  const bridge = await Bridge.create({
    config,
    logger,
    onCommitted: (events) => scheduled.push(...events.filter((e) => e.type.endsWith('.scheduled'))),
  });
  await bridge.start();
  return { name, sim, bridge, session, scheduled };
}
