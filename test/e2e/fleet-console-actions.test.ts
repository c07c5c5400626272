/**
 * Acting from the fleet console, in a real headless Chromium (playwright-core): the real relay,
 * Service Bus played by the AMQP peer, whole bridges with their inbox and a fleet budget over
 * Blob Storage (Azurite), each with its IMDS simulator. One click approves (the button named
 * "Approve" and the VM), through the member's bridge and its budget: the maintenance starts at
 * the simulator, and the open page shows it with no reload; a second approval in the group at its
 * budget is held, said why, and reaches no VM; forcing it needs a reason and records it with the
 * person's name. A read key offers no action, and a hand-made POST with it is refused; a person
 * the trusted proxy names is the one recorded. Nothing is mocked.
 */
import { pino } from 'pino';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRelay, type RunningRelay } from '../../src/relay/relay.ts';
import type { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { fleetApproval, fleetKeys, fleetPeer, relayConfig, sessionOf } from '../../testkit/fleet.ts';
import { FleetStores } from '../../testkit/fleet-stores.ts';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { launchChromium } from '../../testkit/browser.ts';
import { waitFor } from '../helpers.ts';

const APPROVE_KEY = 'console-approve-key-0123456789';
const READ_KEY = 'console-read-key-0123456789';

let browser: Browser;
// one page for the file: the packaged Chromium runs as one process, which closing its last page ends, and whose
// contexts share one cookie store; the first test signs out before the next signs in
let page: Page;
let stores: FleetStores;
let peer: AmqpPeer;
let keys: ReturnType<typeof fleetKeys>;
let relay: RunningRelay;
const sims: ImdsSimulator[] = [];

beforeAll(async () => {
  [browser, stores, peer] = await Promise.all([launchChromium(), FleetStores.start(), fleetPeer()]);
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  keys = fleetKeys();
  const config = relayConfig(peer, keys, {
    replyWaitMs: 8000,
    trustedProxies: ['127.0.0.1'],
    fleet: { store: { ...stores.config('blob'), container: 'console-actions' }, cacheMs: 0 },
    console: {
      listen: '127.0.0.1:0',
      keys: [
        { name: 'Ada Lovelace', key: APPROVE_KEY, role: 'approve' },
        { name: 'Reader', key: READ_KEY, role: 'read' },
      ],
      proxy: { userHeader: 'X-Forwarded-User', role: 'approve' },
    },
  });
  relay = await startRelay(config, pino({ level: 'silent' }), { host: '127.0.0.1', port: 0 });
  await waitFor(() => relay.bus?.listening, 'the relay replies session');
}, 60_000);
afterAll(async () => {
  await stopAll();
  await Promise.all(sims.map((s) => s.close()));
  await relay?.close();
  await browser?.close();
  await peer?.close();
  await stores?.stop();
});

/** A bridge of group `group` (one slot), approved by people through the relay's inbox. */
async function member(vm: string, group: string): Promise<Harness> {
  const sim = new ImdsSimulator({ vmName: vm, peers: [], tickMs: 10 });
  sims.push(sim);
  await sim.listen(0);
  return startBridge({
    sim,
    config: {
      approval: fleetApproval(peer, keys, sessionOf(sim)),
      fleet: {
        group,
        maxUnavailable: 1,
        store: { ...stores.config('blob'), container: 'console-actions' },
        heartbeatSeconds: 5,
        retryMs: 200,
      },
    },
  });
}

async function signIn(page: Page, key: string): Promise<void> {
  await page.goto(`${relay.consoleUrl}/console`);
  await page.getByLabel('Key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Fleet console' }).waitFor();
}

/** The words of `vm`'s bars on the open page. */
const barsOf = (page: Page, vm: string) =>
  page
    .locator('tbody tr', { has: page.locator('th', { hasText: new RegExp(`^${vm}\\b`) }) })
    .locator('a.bar .words')
    .allInnerTexts();

/** `vm`'s approved CloudEvent, as its file sink wrote it. */
const approvedOf = (h: Harness, eventId: string) => h.events().find((e) => e.type.endsWith('.approved') && e.data.eventId === eventId);

describe('acting from the fleet console', () => {
  it('approves with one click, holds the second at the budget and says why, forces with a reason on the record', async () => {
    const [a, b] = [await member('act-0', 'act'), await member('act-1', 'act')];
    await waitFor(() => a.bridge.inbox?.connected && b.bridge.inbox?.connected, 'the inbox sessions', 20_000);
    const ea = a.sim.addEvent({ noticeMs: 3_600_000, startedMs: 600_000 });
    const eb = b.sim.addEvent({ noticeMs: 3_600_000 });

    await signIn(page, APPROVE_KEY);
    await page.getByRole('button', { name: 'Approve act-0' }).waitFor({ timeout: 30_000 });
    await page.evaluate(() => ((globalThis as unknown as { marker: number }).marker = 7));

    // one click: through act-0's bridge, its budget's one slot free: Azure is told, and the page shows it started
    await page.getByRole('button', { name: 'Approve act-0' }).click();
    await expect.poll(() => page.locator('#said').innerText(), { timeout: 20_000 }).toMatch(/^Approved: /);
    expect(a.sim.startRequests.map((s) => s.eventIds)).toEqual([[ea.eventId]]);
    await waitFor(async () => (await barsOf(page, 'act-0')).join() === 'Reboot: started', 'act-0 started on the open page', 20_000);
    expect(await page.evaluate(() => (globalThis as unknown as { marker?: number }).marker)).toBe(7);
    expect(approvedOf(a, ea.eventId)?.data.approval).toMatchObject({ by: 'Ada Lovelace', via: 'console' });

    // the second of the group: held by the budget, said why on the page, nothing reaches the VM
    await page.getByRole('button', { name: 'Approve act-1' }).click();
    await expect.poll(() => page.locator('#said').innerText(), { timeout: 20_000 }).toMatch(/^Held, not approved: .*act-0/);
    expect(b.sim.startRequests).toEqual([]);

    // forced: on its page, a reason is required; with one, it goes past the budget, on the record
    await page.getByRole('link', { name: /Reboot: scheduled/ }).click();
    await page.getByRole('heading', { name: 'Reboot of act-1' }).waitFor();
    await page.getByText("Force past the group's budget or a blackout").click();
    await page.getByLabel('Approve even if the budget or the calendar holds it').check();
    await page.getByRole('button', { name: 'Approve act-1' }).click();
    await expect.poll(() => page.locator('#said').innerText()).toContain('a forced approval needs a reason');
    expect(b.sim.startRequests).toEqual([]);
    await page.getByLabel('Reason (required to force, kept on the record)').fill('security patch, cannot wait for act-0');
    await page.getByRole('button', { name: 'Approve act-1' }).click();
    await expect.poll(() => page.locator('#said').innerText(), { timeout: 20_000 }).toMatch(/^Approved: .*Forced/);
    expect(b.sim.startRequests.map((s) => s.eventIds)).toEqual([[eb.eventId]]);
    expect(approvedOf(b, eb.eventId)?.data.approval).toMatchObject({
      by: 'Ada Lovelace',
      via: 'console',
      forced: true,
      reason: 'security patch, cannot wait for act-0',
    });
    // act-0's maintenance ends at Azure: its row draws it completed, as its member's journal says it, with no page of its own
    await page.goto(`${relay.consoleUrl}/console`);
    a.sim.removeEvent(ea.eventId);
    const ended = page.locator('tbody tr', { has: page.locator('th', { hasText: /^act-0\b/ }) }).locator('span.bar .words');
    await waitFor(async () => (await ended.allInnerTexts()).join() === 'Reboot: completed', 'act-0 completed on the open page', 20_000);
    expect(await barsOf(page, 'act-0')).toEqual([]);
    // signed out: the form again, and the session's cookie gone
    await page.goto(`${relay.consoleUrl}/console`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Key').waitFor();
    expect(await page.context().cookies()).toEqual([]);
  }, 120_000);

  it('offers a read key no action and refuses its hand-made POST; a person the trusted proxy names is the one recorded', async () => {
    const c = await member('act-2', 'act-read');
    await waitFor(() => c.bridge.inbox?.connected, 'the inbox session', 20_000);
    const ec = c.sim.addEvent({ noticeMs: 3_600_000 });
    await signIn(page, READ_KEY);
    await waitFor(async () => (await barsOf(page, 'act-2')).join() === 'Reboot: scheduled', "act-2's event on the page", 30_000);
    expect(await page.getByRole('button', { name: /^Approve/ }).count()).toBe(0);
    // by hand, from the console's own page (its origin, its cookie): refused for the role
    const answer = await page.evaluate(async (eventId) => {
      const body = new URLSearchParams({ vm: 'act-2', eventId });
      const r = await fetch('/console/approve', { method: 'POST', body, headers: { accept: 'application/json' } });
      return { status: r.status, body: (await r.json()) as { error: { code: string } } };
    }, ec.eventId);
    expect(answer).toEqual({ status: 403, body: { error: { code: 'READ_ONLY', message: 'Reader may read the console, not approve' } } });
    expect(c.sim.startRequests).toEqual([]);

    // the reverse proxy (127.0.0.1, trusted) names the person: no cookie, recorded by that name
    const proxied = await fetch(`${relay.consoleUrl}/console/approve`, {
      method: 'POST',
      body: new URLSearchParams({ vm: 'act-2', eventId: ec.eventId }),
      headers: { origin: relay.consoleUrl!, 'x-forwarded-user': 'Grace Hopper', accept: 'application/json' },
      signal: AbortSignal.timeout(20_000),
    });
    expect(proxied.status).toBe(200);
    expect(c.sim.startRequests.map((s) => s.eventIds)).toEqual([[ec.eventId]]);
    expect(approvedOf(c, ec.eventId)?.data.approval).toMatchObject({ by: 'Grace Hopper', via: 'console' });
  }, 90_000);
});
