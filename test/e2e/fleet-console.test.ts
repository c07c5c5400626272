/**
 * The fleet console in a real headless Chromium (playwright-core) against the real relay (its
 * Service Bus played by the AMQP peer), whole bridges in two groups over Blob Storage (Azurite)
 * and their IMDS simulators. Signing in with a key (the field labelled "Key"), the timeline in its
 * lanes and states, a change reaching the open page with no reload, the session cookie's
 * attributes, an altered or missing cookie, a cross-site POST, a proxy's header from an address
 * it does not trust, and axe-core's check of the page inside the browser. With
 * SE_BRIDGE_WRITE_DOCS=1 the page is also saved at 1280 and 390 px for docs/fleet-console.md.
 */
import axe from 'axe-core';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRelay, type RunningRelay } from '../../src/relay/relay.ts';
import type { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { fleetKeys, fleetPeer, relayConfig } from '../../testkit/fleet.ts';
import { FleetStores } from '../../testkit/fleet-stores.ts';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { launchChromium } from '../../testkit/browser.ts';
import { ROOT, waitFor } from '../helpers.ts';

const APPROVE_KEY = 'console-approve-key-0123456789';
/**
 * One session key for every relay of the file: the packaged Chromium keeps one cookie store for all its pages, and its
 * EventSource may still send a cookie an earlier test's relay signed.
 */
const SESSION_KEY = Buffer.alloc(32, 7).toString('base64');
const READ_KEY = 'console-read-key-0123456789';
/** axe-core's own script, run inside the page. */
const AXE = axe.source;

let browser: Browser;
let stores: FleetStores;
let peer: AmqpPeer;
const relays: RunningRelay[] = [];

beforeAll(async () => {
  [browser, stores, peer] = await Promise.all([launchChromium(), FleetStores.start(), fleetPeer()]);
}, 60_000);
afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.close()));
  await stopAll();
});
afterAll(async () => {
  await browser?.close();
  await peer?.close();
  await stores?.stop();
});

const store = (container: string) => ({ ...stores.config('blob'), container });

async function relay(container: string, console: Record<string, unknown> = {}): Promise<RunningRelay> {
  const keys = [
    { name: 'Ada Lovelace', key: APPROVE_KEY, role: 'approve' },
    { name: 'Reader', key: READ_KEY, role: 'read' },
  ];
  const config = relayConfig(peer, fleetKeys(), {
    fleet: { store: store(container), cacheMs: 0 },
    console: { keys, listen: '127.0.0.1:0', sessionKey: SESSION_KEY, ...console },
  });
  const r = await startRelay(config, pino({ level: 'silent' }), { host: '127.0.0.1', port: 0 });
  relays.push(r);
  return r;
}

function member(container: string, group: string, vm: string, budget: number | null, calendar?: Record<string, unknown>): Promise<Harness> {
  return startBridge({
    sim: { vmName: vm, peers: [], tickMs: 10 },
    config: {
      approval: { rules: budget === null ? [] : [{ match: {}, action: 'approve' }] },
      fleet: { group, store: store(container), heartbeatSeconds: 5, ...(budget === null ? {} : { maxUnavailable: budget }) },
      ...(calendar === undefined ? {} : { calendar }),
    },
  });
}

/** A calendar with a window a day (02:00 to 04:00 UTC) and a blackout on tomorrow's date: both within the next 24 hours, neither now. */
function tomorrowsCalendar(): Record<string, unknown> {
  const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
  const days = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];
  const hour = new Date().getUTCHours();
  // the window is never now, so the member's event is not held by it (a blackout holds; a window only shades)
  const from = hour >= 1 && hour <= 4 ? '10:00' : '02:00';
  const to = from === '10:00' ? '12:00' : '04:00';
  return { timeZone: 'UTC', windows: [{ days, from, to }], blackouts: [{ name: 'year-end', from: tomorrow, to: tomorrow }] };
}

async function signIn(page: Page, url: string, key: string): Promise<void> {
  await page.goto(`${url}/console`);
  await page.getByLabel('Key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** The bars' text in a group's lane, by member. */
async function lane(page: Page, group: string): Promise<Record<string, string[]>> {
  const section = page.getByRole('region', { name: group });
  const rows = await section.locator('tbody tr').all();
  const out: Record<string, string[]> = {};
  for (const row of rows) {
    const vm = (await row.locator('th').innerText()).split(/\s/)[0]!;
    out[vm] = (await row.locator('a.bar').allInnerTexts()).map((t) => t.split(',')[0]!.trim());
  }
  return out;
}

describe('the fleet console', () => {
  it('signs in with a key, shows each group in its lane and each event in its state, and follows a change live', async () => {
    const container = 'console-live';
    const [a0, a1, b0] = await Promise.all([
      member(container, 'con-a', 'a0', 1),
      member(container, 'con-a', 'a1', 1),
      member(container, 'con-b', 'b0', null, tomorrowsCalendar()),
    ]);
    for (const h of [a0, a1, b0]) h.sim.addEvent({ noticeMs: 3 * 3_600_000 });
    const r = await relay(container);
    await waitFor(() => a0.sim.startRequests.length + a1.sim.startRequests.length === 1, 'one of con-a approved by policy', 30_000);
    const [go, wait] = a0.sim.startRequests.length === 1 ? ['a0', 'a1'] : ['a1', 'a0'];

    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    // a wrong key: refused, said on the page, no cookie
    await signIn(page, r.consoleUrl!, 'not-a-key-of-this-console');
    await expect.poll(() => page.getByRole('alert').innerText()).toContain('not one of this console');
    expect(await page.context().cookies()).toEqual([]);

    await signIn(page, r.consoleUrl!, APPROVE_KEY);
    await page.getByRole('heading', { name: 'Fleet console' }).waitFor();
    expect(await page.locator('.who').innerText()).toBe('Ada Lovelace (may approve)');
    const [cookie] = await page.context().cookies();
    expect(cookie).toMatchObject({ name: 'se_console', httpOnly: true, sameSite: 'Strict', path: '/console' });
    // it outlives the browser's session (sessionHours; its Max-Age is checked with the header below)
    expect(cookie!.expires).toBeGreaterThan(0);

    await waitFor(
      async () =>
        JSON.stringify(await lane(page, 'con-a')) === JSON.stringify({ [go]: ['Reboot: started'], [wait]: ['Reboot: held by the budget'] }),
      'con-a: one started, the other held by the budget',
      30_000,
    );
    expect(await lane(page, 'con-b')).toEqual({ b0: ['Reboot: scheduled'] });
    // b0's calendar, as it published it to the group: tomorrow's blackout hatched, the time outside its window grey, said in words
    const b0Row = page.getByRole('region', { name: 'con-b' }).locator('tbody tr');
    await expect.poll(() => b0Row.locator('.shade.blackout').count(), { timeout: 20_000 }).toBe(1);
    expect(await b0Row.locator('.shade.blackout').getAttribute('title')).toMatch(/^Blackout year-end, from \d+ \w+ 00:00 UTC to /);
    expect(await b0Row.locator('.shade.closed').count()).toBeGreaterThan(0);
    expect(await page.getByRole('region', { name: 'con-b' }).locator('.facts').innerText()).toContain(
      'Shaded: hatched, blackout year-end (no early approval but a forced one); grey, outside the maintenance windows',
    );
    expect(await page.getByRole('region', { name: 'con-a' }).locator('.shade').count()).toBe(0);
    const width = await b0Row.locator('.shade.blackout').evaluate((el) => (el as unknown as { style: { width: string } }).style.width);
    expect(width).toMatch(/^\d+(\.\d+)?%$/);
    expect(await page.getByRole('region', { name: 'con-a' }).locator('.facts').innerText()).toContain(
      'Budget 1 down at once: 1 in maintenance',
    );
    // the bars are placed on the time axis by the page's own script, under the CSP
    const left = await page
      .locator('a.bar.s-scheduled')
      .first()
      .evaluate((el) => (el as unknown as { style: { left: string } }).style.left);
    expect(left).toMatch(/^\d+(\.\d+)?%$/);

    // live: a new maintenance at b0 reaches the open page with no reload
    await page.evaluate(() => ((globalThis as unknown as { marker: number }).marker = 42));
    b0.sim.addEvent({ noticeMs: 5 * 3_600_000, EventType: 'Freeze', DurationInSeconds: 30 });
    await waitFor(async () => (await lane(page, 'con-b')).b0?.length === 2, "b0's second event on the open page", 30_000);
    expect((await lane(page, 'con-b')).b0).toEqual(['Reboot: scheduled', 'Freeze: scheduled']);
    expect(await page.evaluate(() => (globalThis as unknown as { marker?: number }).marker)).toBe(42);
    expect(await page.locator('#live').innerText()).toMatch(/^Live/);

    // an event's detail, by keyboard: the held one says why
    await page.getByRole('link', { name: /Reboot: held by the budget/ }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: `Reboot of ${wait}` }).waitFor();
    // why, in words: who holds the slots, or its place in the queue (held at its first ask, before the slot was taken)
    expect(await page.locator('dl').innerText()).toMatch(new RegExp(`Held\\n.*(the slots are held by ${go}|1 ahead in the queue)`));
    // what happened to it, with times, as its member's journal and the budget say it
    const story = await page.locator('ol.story').innerText();
    expect(story).toMatch(/\d+ \w+ \d\d:\d\d UTC listed by its member \(Scheduled\)/);
    expect(story).toMatch(/\d+ \w+ \d\d:\d\d UTC held by the budget/);
    await page.getByRole('link', { name: 'Back to the timeline' }).click();

    // axe-core, inside the browser: no serious or critical violation
    await page.getByRole('region', { name: 'con-a' }).waitFor();
    await page.evaluate(AXE);
    const checked = await page.evaluate(async () => {
      type Result = { violations: { id: string; impact: string }[]; passes: unknown[] };
      const axe = (globalThis as unknown as { axe: { run: () => Promise<Result> } }).axe;
      const r = await axe.run();
      return { violations: r.violations.map((v) => ({ id: v.id, impact: v.impact })), passed: r.passes.length };
    });
    // it ran its rules (the page passed some), and none serious or critical failed
    expect(checked.passed).toBeGreaterThan(10);
    expect(checked.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')).toEqual([]);

    if (process.env.SE_BRIDGE_WRITE_DOCS === '1') {
      await page.screenshot({ path: join(ROOT, 'docs', 'fleet-console.png'), fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      await page.screenshot({ path: join(ROOT, 'docs', 'fleet-console-phone.png'), fullPage: true });
    }
    // the page leaves: its stream ends (the packaged Chromium keeps one network stack for every page, which the
    // stream of a page left open would hold on to)
    await page.goto('about:blank');
  }, 120_000);

  it('says on the open page when its stream is lost, and takes it up again when the relay is back, with no reload', async () => {
    const container = 'console-resume';
    const b0 = await member(container, 'con-r', 'r0', null);
    b0.sim.addEvent({ noticeMs: 3 * 3_600_000 });
    // both runs of the relay have the file's session key, so the page's cookie holds across the restart
    const first = await relay(container);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await signIn(page, first.consoleUrl!, APPROVE_KEY);
    await waitFor(async () => (await lane(page, 'con-r')).r0?.length === 1, "r0's event on the page", 30_000);
    await expect.poll(() => page.locator('#live').innerText()).toMatch(/^Live/);
    await page.evaluate(() => ((globalThis as unknown as { marker: number }).marker = 9));

    // the relay stops: the page says so
    relays.splice(relays.indexOf(first), 1);
    await first.close();
    await expect.poll(() => page.locator('#live').innerText(), { timeout: 20_000 }).toBe('Connection lost: reconnecting…');
    b0.sim.addEvent({ noticeMs: 4 * 3_600_000, EventType: 'Freeze', DurationInSeconds: 30 });

    // back on the same address: the page takes its stream up again, and shows what changed meanwhile
    await relay(container, { listen: first.consoleUrl!.replace('http://', '') });
    await waitFor(async () => (await lane(page, 'con-r')).r0?.length === 2, "r0's new event after the relay came back", 30_000);
    await expect.poll(() => page.locator('#live').innerText()).toMatch(/^Live/);
    expect(await page.evaluate(() => (globalThis as unknown as { marker?: number }).marker)).toBe(9);
  }, 120_000);

  it('refuses an altered cookie, a cross-site POST and a proxy header from an untrusted address; serves its own files under a strict CSP', async () => {
    const r = await relay('console-refusals', { proxy: { userHeader: 'X-Forwarded-User', role: 'approve' } });
    const url = r.consoleUrl!;
    const get = (path: string, headers: Record<string, string> = {}) =>
      fetch(`${url}${path}`, { headers, redirect: 'manual', signal: AbortSignal.timeout(10_000) });
    const post = (path: string, body: string, headers: Record<string, string> = {}) =>
      fetch(`${url}${path}`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        redirect: 'manual',
        signal: AbortSignal.timeout(10_000),
      });
    // signed in from the console's own origin: a cookie
    const ok = await post('/console/sign-in', `key=${READ_KEY}`, { origin: url });
    expect(ok.status).toBe(303);
    const cookie = /^(se_console=[^;]+)/.exec(ok.headers.get('set-cookie') ?? '')![1]!;
    expect(ok.headers.get('set-cookie')).toMatch(/; Max-Age=43200; HttpOnly; SameSite=Strict$/);
    const page = await get('/console', { cookie });
    expect(await page.text()).toContain('Reader (read only)');
    expect(page.headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    // an altered cookie (one character of its signature, or of what it says) signs nobody in
    const [payload, mac] = cookie.slice('se_console='.length).split('.');
    const flip = (s: string) => (s[0] === 'A' ? 'B' : 'A') + s.slice(1);
    for (const bad of [`se_console=${payload}.${flip(mac!)}`, `se_console=${flip(payload!)}.${mac}`])
      expect(await (await get('/console', { cookie: bad })).text()).toContain('<label for="key">Key</label>');
    expect((await get('/console/live', { cookie: `se_console=${payload}.${flip(mac!)}` })).status).toBe(401);
    // a POST from another site, or with no Origin, changes nothing
    expect((await post('/console/sign-in', `key=${READ_KEY}`, { origin: 'https://evil.example' })).status).toBe(403);
    expect((await post('/console/sign-in', `key=${READ_KEY}`)).status).toBe(403);
    // the proxy's header from an address not in trustedProxies names nobody
    const proxied = await get('/console', { 'x-forwarded-user': 'mallory' });
    expect(await proxied.text()).toContain('<label for="key">Key</label>');
    // its own files
    const js = await get('/console/app.js');
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await js.text()).toContain("new EventSource('/console/live?range='");
  });
});
