/**
 * se-bridge demo --fleet: fleet approvals on one machine. A local AMQP peer stands in for
 * Service Bus (the inbox and replies queues, with sessions and duplicate detection), three
 * simulated VMs each run a bridge with an approval inbox and no approval server, and two relay
 * replicas take the requests. It approves one VM by the API, another by its link, shows that a
 * VM's key cannot approve another VM, sends one request to both replicas, and ends with a table
 * of what each VM's IMDS was told. Then, with the fleet's store in Azurite: a fleet budget
 * (demo-budget.ts), health gates (demo-health.ts), calendars (demo-calendar.ts), and the fleet
 * view the relays read from the store, with Azure's feed beside it (demo-view.ts).
 */
import { mkdtempSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { linkKeyFor, newFleetKeys, sessionIdOf } from '../fleet/keys.ts';
import { startRelay, type RunningRelay } from '../relay/relay.ts';
import { issueToken } from '../approval/signatures.ts';
import { pino } from 'pino';
import { createLogger } from '../lib/log.ts';
import { signatureHeaders, secretKey } from '../lib/standard-webhooks.ts';
import type { BridgeEvent } from '../pipeline/cloudevent.ts';
import { Azurite, DEV_ACCOUNT } from '../simulator/azurite.ts';
import { INBOX, localInbox, localRelayConfig, localServiceBus, REPLIES } from './local-fleet.ts';
import { must } from '../lib/must.ts';
import { EXIT, table } from './common.ts';
import { budgetDemo } from './demo-budget.ts';
import { healthDemo } from './demo-health.ts';
import { calendarDemo } from './demo-calendar.ts';
import { RelayLines, relayView, viewDemo, type ViewKeys } from './demo-view.ts';
import type { ImdsSimulator } from '../simulator/server.ts';
import { ask, Closers, demoHttp, say, startMember, until, type DemoContext, type Member } from './demo-kit.ts';

const VMS = ['web-0', 'web-1', 'web-2'];

/** eventOf: the Scheduled event the VM saw first. */
const eventOf = (v: Vm): BridgeEvent => must(v.scheduled[0], `${v.name}'s scheduled event`);

interface Vm extends Member {
  readonly session: string;
  readonly scheduled: BridgeEvent[];
}

export async function fleetDemo(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'se-bridge-fleet-demo-'));
  // the story is what the demo prints; the daemons' own log lines go to a file beside their state
  const logFile = join(dir, 'demo.log');
  const logger = createLogger({ level: process.env.LOG_LEVEL || 'info', destination: pino.destination({ dest: logFile, sync: true }) });
  const closers = new Closers();
  const http = demoHttp();
  closers.add(async () => http.close());
  try {
    const peer = await localServiceBus();
    closers.add(() => peer.close());
    // the fleet's store, for the budget, the health gates, the calendars and the fleet view: Azurite, from a checkout
    const azurite = Azurite.available() ? await Azurite.start() : null;
    if (azurite !== null) closers.add(() => azurite.stop());
    const store =
      azurite === null
        ? null
        : { type: 'blob', connectionString: azurite.connectionString(`${azurite.url}/${DEV_ACCOUNT}`), container: 'demo' };
    const key = () => randomBytes(24).toString('base64url');
    const viewKeys: ViewKeys = { read: key(), eventGrid: key(), console: key() };
    const relayOut = new RelayLines();
    const keys = newFleetKeys();
    const apiSecret = `whsec_${Buffer.from(keys.fleetKey, 'base64').subarray(0, 24).toString('base64')}`;
    const relays: RunningRelay[] = [];
    for (let i = 0; i < 2; i++) {
      const over = { apiSecrets: [apiSecret], replyWaitMs: 5000, ...(store === null ? {} : relayView(store, viewKeys)) };
      const relay = await startRelay(localRelayConfig(peer, keys, over), logger, { host: '127.0.0.1', port: 0 }, relayOut);
      closers.add(() => relay.close());
      relays.push(relay);
    }
    say(`Service Bus stand-in (AMQP) on 127.0.0.1:${peer.port}: queues ${INBOX} and ${REPLIES}, with sessions`);
    say(`relay replicas: ${relays.map((r) => r.url).join(', ')}`);
    const [relayA, relayB] = [must(relays[0], 'the first relay'), must(relays[1], 'the second relay')];
    const approved = await approvalsThroughTheRelay({ dir, logger, closers, http }, peer, keys, apiSecret, relayA, relayB);
    say(`Events, state and the daemons' log: ${dir}`);
    if (azurite === null || store === null) {
      say(
        '\nFleet budgets, health gates, calendars and the fleet view: skipped, the azurite package is not installed (run the demo from a checkout after npm ci).',
      );
      return approved ? EXIT.ok : EXIT.failure;
    }
    const ctx: DemoContext = { dir, logger, store, closers, http };
    const budget = await budgetDemo(ctx, azurite.url);
    const health = await healthDemo(ctx);
    const calendar = await calendarDemo(ctx);
    const members = [...budget.members, ...health.members, ...calendar.members];
    const viewed = await viewDemo(ctx, { relay: relayA.url, console: relayA.consoleUrl, keys: viewKeys, relayOut, members });
    const ok = approved && budget.ok && health.ok && calendar.ok && viewed;
    // at a terminal, the fleet stays up with its console open until Ctrl-C
    if (process.stdin.isTTY && process.stdout.isTTY && process.env.CI === undefined) await untilInterrupted();
    return ok ? EXIT.ok : EXIT.failure;
  } finally {
    await closers.close();
  }
}

/** untilInterrupted: waits for Ctrl-C (SIGINT) or SIGTERM, saying so. */
function untilInterrupted(): Promise<void> {
  say('The fleet keeps running with its console open: press Ctrl-C to end the demo.');
  return new Promise((resolve) => {
    const done = () => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      resolve();
    };
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
  });
}

/** approvalsThroughTheRelay: three VMs with inboxes, approved through the relay four ways; true when each was approved once. */
async function approvalsThroughTheRelay(
  ctx: Pick<DemoContext, 'dir' | 'logger' | 'closers' | 'http'>,
  peer: Awaited<ReturnType<typeof localServiceBus>>,
  keys: ReturnType<typeof newFleetKeys>,
  apiSecret: string,
  relayA: RunningRelay,
  relayB: RunningRelay,
): Promise<boolean> {
  const vms: Vm[] = [];
  for (const name of VMS) {
    const scheduled: BridgeEvent[] = [];
    // the VM's inbox session is its resource id, as its IMDS says it
    const sessionOf = (sim: ImdsSimulator) => sessionIdOf({ resourceId: sim.compute().resourceId ?? null, name });
    const member = await startMember(ctx, name, (sim) => ({ approval: localInbox(peer, keys, sessionOf(sim), relayA.url) }), {
      pollIntervalMs: 500,
      onCommitted: (events) => scheduled.push(...events.filter((e) => e.type.endsWith('.scheduled'))),
    });
    vms.push({ ...member, session: sessionOf(member.sim), scheduled });
  }
  await until(() => vms.every((v) => v.bridge.inbox?.connected) && [relayA, relayB].every((r) => r.bus?.listening), 'the inbox sessions');
  say(`${vms.length} VMs, each holding its own inbox session; no VM listens on any port\n`);

  for (const v of vms) v.sim.addEvent({ EventType: 'Reboot', noticeMs: 15 * 60_000 });
  await until(() => vms.every((v) => v.scheduled.length > 0), 'the scheduled events');
  const [a, b, c] = [must(vms[0], 'VM 0'), must(vms[1], 'VM 1'), must(vms[2], 'VM 2')];
  say('Each VM has a Reboot scheduled in 15 minutes.\n');

  // 1. the API, signed with the Standard Webhooks secret, naming the VM by its resource id
  const apiKey = must(secretKey(apiSecret), 'the API secret');
  const body = JSON.stringify({ vm: a.bridge.identity.resourceId, eventId: eventOf(a).subject, approver: 'change-pipeline' });
  let res = await ask(ctx.http, `${relayA.url}/v1/approvals`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...signatureHeaders([apiKey], 'demo-1', body) },
    body,
  });
  say(`1. POST /v1/approvals for ${a.name}: ${res.status} ${res.text}`);

  // 2. the link in the VM's chat message, answered by the relay
  const link = must(must(b.bridge.approvalLinks, 'the approval links').link(eventOf(b)), 'the approval link');
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  res = await ask(ctx.http, `${relayB.url}/v1/approve`, {
    method: 'POST',
    headers: form,
    body: `token=${new URL(link).searchParams.get('token')}`,
  });
  say(`2. the approval link of ${b.name}, posted to the other replica: ${res.status} ${res.text}`);

  // 3. a compromised VM: its own link key cannot sign for another VM
  const own = linkKeyFor(Buffer.from(keys.fleetKey, 'base64'), a.session);
  const forged = issueToken(own, { e: eventOf(c).subject, v: c.session, x: Math.floor(Date.now() / 1000) + 600 });
  res = await ask(ctx.http, `${relayA.url}/v1/approve`, { method: 'POST', headers: form, body: `token=${forged}` });
  say(`3. a token for ${c.name} signed with ${a.name}'s key: ${res.status} ${res.text}`);

  // 4. one request, both replicas: one command (duplicate detection), one approval
  const twice = JSON.stringify({ vm: c.bridge.identity.resourceId, eventId: eventOf(c).subject, approver: 'on-call' });
  const headers = { 'content-type': 'application/json', ...signatureHeaders([apiKey], 'demo-4', twice) };
  const answers = await Promise.all(
    [relayA, relayB].map((r) => ask(ctx.http, `${r.url}/v1/approvals`, { method: 'POST', headers, body: twice }).then((x) => x.status)),
  );
  say(
    `4. the same request to both replicas for ${c.name}: ${answers.join(' and ')} (duplicates dropped by the queue: ${peer.queues.queue(INBOX).duplicatesDropped})\n`,
  );

  await until(() => vms.every((v) => v.sim.startRequests.length > 0), 'the approvals');
  const rows = vms.map((v) => {
    const approval = v.bridge.store.approvals.of(eventOf(v).subject);
    return [
      v.name,
      eventOf(v).subject.slice(0, 8),
      approval ? `${approval.by} (${approval.via})` : '-',
      String(v.sim.startRequests.length),
    ];
  });
  say(table(['VM', 'EventId', 'approved by', 'StartRequests'], rows));
  const ok = vms.every((v) => v.sim.startRequests.length === 1) && peer.queues.queue(INBOX).deadLetters.length === 0;
  say(`\n${ok ? 'Every VM was approved exactly once, through Service Bus only.' : 'Something went wrong: see above.'}`);
  return ok;
}
