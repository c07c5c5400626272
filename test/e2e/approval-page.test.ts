/**
 * The approval page in a real headless Chromium driven by playwright-core: open the signed
 * link, read the event, click Approve, see the result; the IMDS simulator confirms the event
 * started. The browser is the one `npm ci` brings (@sparticuz/chromium ships the binary), or
 * any other through CHROMIUM_PATH (Debian's: /usr/bin/chromium). With SE_BRIDGE_WRITE_DOCS=1
 * the page is also saved as docs/approval-page.png.
 */
import { startBridge } from '../../testkit/harness.ts';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Bridge } from '../../src/daemon/bridge.ts';
import { fromJson } from '../../src/pipeline/cloudevent.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { ROOT, tempDir, waitFor } from '../helpers.ts';
import { launchChromium } from '../../testkit/browser.ts';

let browser: Browser;
let sim: ImdsSimulator;
let bridge: Bridge;
let dir: ReturnType<typeof tempDir>;

beforeAll(async () => {
  browser = await launchChromium();
  sim = new ImdsSimulator({ vmName: 'web-vm-0', peers: ['web-vm-1'], tickMs: 10 });
  await sim.listen(0);
  dir = tempDir();
  bridge = (
    await startBridge({
      sim,
      dir: dir.path,
      config: { approval: { secret: `whsec_${Buffer.alloc(32, 5).toString('base64')}` }, server: { listen: '127.0.0.1:0' } },
    })
  ).bridge;
});
afterAll(async () => {
  await browser?.close();
  await bridge?.stop(1000);
  await sim?.close();
  dir?.cleanup();
});

describe('approval page in Chromium', () => {
  it('shows the event, approves it with one click, and shows the result', async () => {
    const e = sim.addEvent({
      EventType: 'Reboot',
      Resources: ['web-vm-0', 'web-vm-1'],
      Description: 'Virtual machine is going to be restarted as requested by platform maintenance.',
      noticeMs: 14 * 60_000,
    });
    const scheduled = await waitFor(() => bridge.store.journal.all().find((j) => j.id === `${e.eventId}/scheduled`), 'the scheduled event');
    const link = bridge.approvalLinks!.link(fromJson(scheduled.json))!;
    expect(link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1\/approve\?token=/);

    const page = await browser.newPage({ viewport: { width: 420, height: 760 }, deviceScaleFactor: 2 });
    const response = await page.goto(link);
    expect(response!.status()).toBe(200);
    expect(await page.locator('h1').innerText()).toBe('web-vm-0 will be rebooted');
    const facts = await page.locator('dl').innerText();
    expect(facts).toContain('web-vm-0 (this VM), web-vm-1');
    expect(facts).toMatch(/not before \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC \(in 1[34]m \d+s\)/);
    // the page's own style applies under its strict CSP (a blocked style would leave the button unstyled)
    expect(
      await page
        .locator('#approve')
        .evaluate(
          (b) =>
            (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(b).backgroundColor,
        ),
    ).toBe('rgb(10, 122, 75)');
    if (process.env.SE_BRIDGE_WRITE_DOCS === '1') await page.screenshot({ path: join(ROOT, 'docs', 'approval-page.png'), fullPage: true });

    await page.locator('#approve').click();
    await page.waitForSelector('.card.ok');
    expect(await page.locator('h1').innerText()).toBe('Approved');
    await waitFor(() => sim.events.find((x) => x.eventId === e.eventId)?.status === 'Started', 'the simulator to start the event');
    expect(sim.startRequests.map((s) => s.eventIds)).toEqual([[e.eventId]]);

    // the link is single-use: opening it again says so
    const again = await page.goto(link);
    expect(again!.status()).toBe(410);
    expect(await page.locator('h1').innerText()).toBe('This link can no longer be used');
    await page.close();
  });
});
