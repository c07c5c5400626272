/**
 * The Teams card rendered by the adaptivecards library (the renderer behind Adaptive Cards on
 * the web) in a real headless Chromium: every hostile IMDS value shows as itself, as text, and
 * the only link on the card is the real Approve button. The browser is the one `npm ci` brings
 * (@sparticuz/chromium), or the one at CHROMIUM_PATH.
 */
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityFrom } from '../../src/imds/identity.ts';
import { toDomainDocument, WireDocument } from '../../src/imds/wire.ts';
import { toCloudEvent } from '../../src/pipeline/cloudevent.ts';
import { diff } from '../../src/pipeline/diff.ts';
import { toChatMessage } from '../../src/present/chat-model.ts';
import { adaptiveCard } from '../../src/present/teams-card.ts';
import { launchChromium } from '../../testkit/browser.ts';
import { ROOT } from '../helpers.ts';

const HOSTILE = {
  EventId: 'E_1`*[x]*',
  EventType: 'Reboot<b>bold</b>',
  EventStatus: 'Scheduled',
  Resources: ['web_vm_01', '[Approve](https://evil.example)', '<https://evil.example|click>', '- listed', '<at>CEO</at>'],
  EventSource: 'Platform **loud**',
  Description:
    '1. item [Approve now](https://evil.example/approve) **urgent** _em_ ~strike~ ![img](https://evil.example/x.png) {{DATE(2020-01-01T00:00:00Z)}} \\back\\slash https://evil.example/bare',
  NotBefore: 'Mon, 23 Nov 2026 10:00:00 GMT',
  DurationInSeconds: 30,
};
const APPROVE = 'https://bridge.example/v1/approve?token=t';
/** What a preparation said: a module sink's words can be anything. */
const PREPARED = 'drained [Approve](https://evil.example) **now** <at>CEO</at>';

let browser: Browser;
let page: Page;
beforeAll(async () => {
  browser = await launchChromium();
  page = await browser.newPage();
  await page.setContent('<!doctype html><meta charset="utf-8"><div id="card"></div>');
  await page.addScriptTag({ path: join(ROOT, 'node_modules', 'adaptivecards', 'dist', 'adaptivecards.js') });
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

describe('Teams card in the adaptivecards renderer (Chromium)', () => {
  it('shows every hostile value as itself, as text, with the Approve button the only link', async () => {
    const [t] = diff(null, toDomainDocument(WireDocument.parse({ DocumentIncarnation: 2, Events: [HOSTILE] })).document);
    const card = adaptiveCard(
      toChatMessage(toCloudEvent(t!, { vm: identityFrom(null, { name: 'web_vm_01' }), observedAt: '2026-11-22T10:00:00Z' }), {
        approveUrl: APPROVE,
        preparations: [{ state: 'done', detail: PREPARED }],
      }),
    );
    const shown = await page.evaluate((json) => {
      const AC = (globalThis as any).AdaptiveCards;
      const c = new AC.AdaptiveCard();
      c.parse(json);
      const el = (globalThis as any).document.getElementById('card');
      el.replaceChildren(c.render());
      return {
        text: el.innerText as string,
        markup: [...el.querySelectorAll('a, img, em, strong, b, i, s, del, code, li, ol, ul, at')].map((n: any) => n.outerHTML as string),
        buttons: [...el.querySelectorAll('button')].map((b: any) => (b.innerText as string).trim()),
      };
    }, card);
    // renderers fold white space; the value is otherwise exactly as IMDS sent it
    const fold = (s: string) => s.replaceAll('\u200b', '').replace(/\s+/g, ' ');
    const text = fold(shown.text);
    for (const v of [HOSTILE.EventId, HOSTILE.EventSource, HOSTILE.Description, PREPARED, ...HOSTILE.Resources])
      expect(text).toContain(fold(v));
    expect(text).toContain('Reboot<b>bold</b> · Scheduled');
    expect(text).not.toContain('\\_');
    expect(shown.markup).toEqual([]);
    expect(shown.buttons).toEqual(['Approve: start the maintenance now']);
  });
});
