/**
 * Fleet approvals with real processes: `se-bridge relay` and three `se-bridge run` bridges
 * (three VMs, one IMDS simulator each) share one AMQP peer standing in for Service Bus. A
 * signed API call, a link clicked in headless Chromium and a Slack button each approve exactly
 * the right VM's event once; a bridge killed with SIGKILL while it holds a command approves
 * once after its restart; a relay killed with SIGKILL loses nothing.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slackSignature } from '../../src/approval/signatures.ts';
import { secretKey, signatureHeaders } from '../../src/lib/standard-webhooks.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import type { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { launchChromium } from '../../testkit/browser.ts';
import { API_SECRET, fleetApproval, fleetKeys, fleetPeer, INBOX, relayInput, SLACK_SECRET, sessionOf } from '../../testkit/fleet.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { tempDir, waitFor } from '../helpers.ts';
import { start, stopProcesses } from './process.ts';

type Child = ReturnType<typeof start>;
let peer: AmqpPeer;
let chat: HttpPeer;
let browser: Browser;
let dir: ReturnType<typeof tempDir>;
const keys = fleetKeys();
const sims: ImdsSimulator[] = [];
const bridges: Child[] = [];
let relay: Child;
let relayUrl = '';

function writeRelayConfig(replyWaitMs: number): string {
  const file = join(dir.path, 'relay.yaml');
  writeFileSync(file, JSON.stringify(relayInput(peer, keys, { replyWaitMs, log: { level: 'info' } })));
  return file;
}

/** Every process this file started, for afterAll. */
const started: Child[] = [];

async function startRelayProcess(replyWaitMs: number): Promise<void> {
  relay = start(['relay', '--config', writeRelayConfig(replyWaitMs)]);
  started.push(relay);
  const line = await waitFor(
    () => relay.out.stdout.split('\n').find((l) => l.includes('"relay listening"')),
    'the relay to listen',
    30_000,
  );
  relayUrl = (JSON.parse(line) as { url: string }).url;
  await waitFor(async () => (await fetch(`${relayUrl}/readyz`)).status === 200, 'the relay to be ready');
  // the probes and metrics on their own listener too, which approval clients cannot crowd out
  const probes = await waitFor(
    () => relay.out.stdout.split('\n').find((l) => l.includes('"relay probes and metrics listening"')),
    'the probes listener',
  );
  const probesUrl = (JSON.parse(probes) as { url: string }).url;
  expect(probesUrl).not.toBe(relayUrl);
  expect(await (await fetch(`${probesUrl}/readyz`)).json()).toMatchObject({ status: 'ready' });
  expect(await (await fetch(`${probesUrl}/metrics`)).text()).toContain('sebridge_relay_requests_total');
}

function bridgeConfig(i: number): string {
  const file = join(dir.path, `bridge-${i}.yaml`);
  const config = {
    imds: { endpoint: sims[i]!.url, pollIntervalMs: 200 },
    state: { path: join(dir.path, `state-${i}.db`) },
    sinks: [
      { name: 'audit', type: 'file', path: join(dir.path, `events-${i}.jsonl`) },
      { name: 'chat', type: 'teams', webhookUrl: `${chat.url}/vm-${i}` },
    ],
    approval: fleetApproval(peer, keys, sessionOf(sims[i]!), relayUrl),
    observability: { listen: 'off' },
    log: { level: 'info' },
  };
  writeFileSync(file, JSON.stringify(config));
  return file;
}

function startBridgeProcess(i: number): Child {
  const child = start(['run', '--config', bridgeConfig(i)]);
  bridges[i] = child;
  started.push(child);
  return child;
}

const sessionsHeld = () => peer.queues.queue(INBOX).liveSessions().length;
const events = (i: number) => {
  try {
    return readFileSync(join(dir.path, `events-${i}.jsonl`), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; subject: string; data: { approval?: { by: string; via: string } } });
  } catch {
    return [];
  }
};
const approved = (i: number, eventId: string) => events(i).filter((e) => e.type.endsWith('.approved') && e.subject === eventId);
/** The approval link the Teams message of `eventId` carries. */
const linkOf = (i: number, eventId: string) =>
  chat.requests
    .filter((r) => r.url === `/vm-${i}` && r.body.includes(eventId))
    .map((r) => /"(https?:\/\/[^"]+\/v1\/approve\?token=[A-Za-z0-9_.-]+)"/.exec(r.body)?.[1])
    .find((l) => l !== undefined);

async function api(body: Record<string, unknown>, id: string) {
  const text = JSON.stringify(body);
  const res = await fetch(`${relayUrl}/v1/approvals`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...signatureHeaders([secretKey(API_SECRET)!], id, text) },
    body: text,
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  dir = tempDir();
  peer = await fleetPeer();
  chat = new HttpPeer();
  await chat.listen();
  browser = await launchChromium();
  for (let i = 0; i < 3; i++) {
    const sim = new ImdsSimulator({ vmName: `fleet-vm-${i}`, peers: [], tickMs: 10 });
    await sim.listen(0);
    sims.push(sim);
  }
  await startRelayProcess(10_000);
  for (let i = 0; i < 3; i++) startBridgeProcess(i);
  await waitFor(() => sessionsHeld() === 3, 'three inbox sessions', 60_000);
}, 120_000);

afterAll(async () => {
  // every process this file started, restarted ones too, stopped and waited for before their peers close
  await stopProcesses([relay, ...bridges, ...started]);
  await browser?.close();
  await Promise.all(sims.map((s) => s.close()));
  await chat?.close();
  await peer?.close();
  dir?.cleanup();
});

describe('fleet approvals, processes apart', () => {
  it('approves the right VM once by API, by a link in Chromium and by a Slack button', async () => {
    const [e0, e1, e2] = sims.map((s) => s.addEvent({ noticeMs: 600_000 }));
    for (const [i, e] of [e0, e1, e2].entries()) await waitFor(() => linkOf(i, e!.eventId), `the Teams message of vm ${i}`, 30_000);

    // API, for vm 1
    const r = await api({ vm: sessionOf(sims[1]!), eventId: e1!.eventId, approver: 'ops-pipeline' }, 'fleet-api-1');
    expect(r).toMatchObject({ status: 200, json: { status: 'approved', approvedBy: 'ops-pipeline', via: 'api' } });

    // a link in Chromium, for vm 0
    const page = await browser.newPage();
    await page.goto(linkOf(0, e0!.eventId)!);
    expect(await page.textContent('body')).toContain(e0!.eventId);
    await Promise.all([page.waitForNavigation(), page.click('#approve')]);
    expect(await page.textContent('h1')).toBe('Approved');
    await page.close();

    // a Slack button, for vm 2: its token is the one the link carries
    const slack = new HttpPeer();
    await slack.listen();
    const token = new URL(linkOf(2, e2!.eventId)!).searchParams.get('token')!;
    const payload = JSON.stringify({
      type: 'block_actions',
      user: { id: 'U7', username: 'frank' },
      actions: [{ action_id: 'se_bridge_approve', value: token }],
      response_url: `${slack.url}/respond`,
    });
    const form = `payload=${encodeURIComponent(payload)}`;
    const ts = String(Math.floor(Date.now() / 1000));
    const sr = await fetch(`${relayUrl}/v1/slack/interactions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-slack-request-timestamp': ts,
        'x-slack-signature': slackSignature(SLACK_SECRET, ts, form),
      },
      body: form,
    });
    expect(sr.status).toBe(200);
    await waitFor(() => slack.requests.length === 1, 'the Slack message update', 30_000);
    expect(slack.requests[0]!.body).toContain('Approved by <@U7>');
    await slack.close();

    // each VM started exactly its own event, once, and reported one approval
    expect(sims.map((s) => s.startRequests.map((x) => x.eventIds))).toEqual([[[e0!.eventId]], [[e1!.eventId]], [[e2!.eventId]]]);
    await waitFor(() => [0, 1, 2].every((i) => approved(i, [e0, e1, e2][i]!.eventId).length === 1), 'three approved CloudEvents', 30_000);
    expect([
      approved(0, e0!.eventId)[0]!.data.approval,
      approved(1, e1!.eventId)[0]!.data.approval,
      approved(2, e2!.eventId)[0]!.data.approval,
    ]).toMatchObject([{ via: 'link' }, { by: 'ops-pipeline', via: 'api' }, { by: '@frank', via: 'slack' }]);
  });

  it('a bridge killed with SIGKILL while it holds a command approves once after its restart', async () => {
    const sim = sims[0]!;
    const e = sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => linkOf(0, e.eventId), 'the Teams message', 30_000);
    const before = sim.startRequests.length;
    // StartRequests hangs: the bridge holds the command, unsettled, when it is killed
    sim.injectFault({ kind: 'hang', count: 1, target: 'start' });
    const pending = api({ vm: sessionOf(sim), eventId: e.eventId, approver: 'grace' }, 'fleet-kill-1');
    await waitFor(() => sim.hung.size === 1, 'the hung StartRequests', 30_000);
    bridges[0]!.kill('SIGKILL');
    await waitFor(() => bridges[0]!.exitCode !== null || bridges[0]!.signalCode !== null, 'the kill');
    startBridgeProcess(0);
    const r = await pending;
    expect(r).toMatchObject({ status: 200, json: { status: 'approved', approvedBy: 'grace' } });
    expect(sim.startRequests.slice(before).map((x) => x.eventIds)).toEqual([[e.eventId]]);
    await waitFor(() => approved(0, e.eventId).length === 1, 'the approved CloudEvent', 30_000);
    await waitFor(() => peer.queues.queue(INBOX).completed.some((m) => m.deliveryCount === 1), 'the redelivered command completed');
    expect(approved(0, e.eventId)).toHaveLength(1);
  });

  it('a relay killed with SIGKILL loses nothing: the command waits in Service Bus and a new relay answers', async () => {
    const sim = sims[1]!;
    const e = sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => linkOf(1, e.eventId), 'the Teams message', 30_000);
    bridges[1]!.kill('SIGTERM');
    await waitFor(() => bridges[1]!.exitCode !== null, 'vm 1 to stop');
    // a relay that answers after 1.5 s: it passes the command on, answers 202, and is killed
    relay.kill('SIGKILL');
    await startRelayProcess(1500);
    const accepted = await api({ vm: sessionOf(sim), eventId: e.eventId, approver: 'heidi' }, 'fleet-relay-1');
    expect(accepted).toMatchObject({ status: 202, json: { status: 'accepted' } });
    relay.kill('SIGKILL');
    await startRelayProcess(10_000);
    startBridgeProcess(1);
    await waitFor(() => approved(1, e.eventId).length === 1, 'the approval once vm 1 is back', 60_000);
    expect(approved(1, e.eventId)[0]!.data.approval).toMatchObject({ by: 'heidi', via: 'api' });
    // the new relay sees the result: the same request again is the same message (a duplicate), a new one is answered
    const again = await api({ vm: sessionOf(sim), eventId: e.eventId, approver: 'ivan' }, 'fleet-relay-2');
    expect(again).toMatchObject({ status: 200, json: { status: 'already-approved', approvedBy: 'heidi' } });
    expect(sim.startRequests.filter((x) => x.eventIds.includes(e.eventId))).toHaveLength(1);
  });
});
