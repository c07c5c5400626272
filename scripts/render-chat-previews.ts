/**
 * Renders what an on-call engineer sees in Slack and Teams for a real payload (the live
 * migration scenario, Scheduled, with an approval link) to PNG files under docs/, with
 * headless Chromium (test/browser.ts: the packaged one, or CHROMIUM_PATH). The Teams card is rendered by the adaptivecards library itself;
 * the Slack message by a small Block Kit renderer that follows Slack's layout.
 *   npm run render:previews
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from '../testkit/browser.ts';
import { toCloudEvent } from '../src/pipeline/cloudevent.ts';
import { diff } from '../src/pipeline/diff.ts';
import { identityFrom } from '../src/imds/identity.ts';
import { toDomainDocument, WireDocument } from '../src/imds/wire.ts';
import { toChatMessage } from '../src/present/chat-model.ts';
import { slackMessage } from '../src/present/slack-blocks.ts';
import { adaptiveCard } from '../src/present/teams-card.ts';

const ROOT = join(fileURLToPath(import.meta.url), '..', '..');
const observed = '2026-11-22T05:04:20.000Z';
const imdsDocument = toDomainDocument(
  WireDocument.parse({
    DocumentIncarnation: 2,
    Events: [
      {
        EventId: 'C7061BAC-AFDC-4513-B24B-AA5F13A16123',
        EventStatus: 'Scheduled',
        EventType: 'Freeze',
        ResourceType: 'VirtualMachine',
        Resources: ['web-vm-0', 'web-vm-1'],
        NotBefore: 'Sun, 22 Nov 2026 05:19:20 GMT',
        Description: 'Virtual machine is being paused because of a memory-preserving Live Migration operation.',
        EventSource: 'Platform',
        DurationInSeconds: 5,
      },
    ],
  }),
).document;
const vm = identityFrom({
  name: 'web-vm-0',
  resourceId: '/subscriptions/0000/resourceGroups/web-rg/providers/Microsoft.Compute/virtualMachines/web-vm-0',
});
const event = toCloudEvent(diff(null, imdsDocument)[0]!, { vm, observedAt: observed });
const msg = toChatMessage(event, { approveUrl: 'https://bridge.example.com/v1/approve?token=…' });

// Drawn as coloured dots: the machine that renders may have no emoji font.
const dot = (c: string) => `<span class="dot" style="background:${c}"></span>`;
const EMOJI: Record<string, string> = {
  ':large_yellow_circle:': dot('#ecb22e'),
  '🟡': dot('#ecb22e'),
  ':large_orange_circle:': dot('#f2952f'),
  '🟠': dot('#f2952f'),
  ':red_circle:': dot('#e01e5a'),
  '🔴': dot('#e01e5a'),
  ':white_check_mark:': dot('#2eb67d'),
  '✅': dot('#2eb67d'),
  ':information_source:': dot('#1d9bd1'),
  ℹ️: dot('#1d9bd1'),
};
function mrkdwn(text: string): string {
  let t = text.replace(/<!date\^\d+\^[^|]*\|([^>]*)>/g, '$1');
  t = t
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/&amp;(lt|gt|amp);/g, '&$1;');
  for (const [k, v] of Object.entries(EMOJI)) t = t.split(k).join(v);
  t = t.replace(/\*([^*\n]+)\*/g, '<b>$1</b>').replace(/`([^`]+)`/g, '<code>$1</code>');
  t = t.replace(/^&gt;(.*)$/gm, '<blockquote>$1</blockquote>');
  return t.replace(/\n/g, '<br>');
}
function slackHtml(): string {
  const p = slackMessage(msg);
  const blocks = p.blocks
    .map((b) => {
      const block = b as Record<string, any>;
      if (block.type === 'header') return `<div class="header">${mrkdwn(block.text.text)}</div>`;
      if (block.type === 'section' && block.fields)
        return `<div class="fields">${block.fields.map((f: any) => `<div>${mrkdwn(f.text)}</div>`).join('')}</div>`;
      if (block.type === 'section') return `<div class="text">${mrkdwn(block.text.text)}</div>`;
      if (block.type === 'context') return `<div class="context">${block.elements.map((e: any) => mrkdwn(e.text)).join(' ')}</div>`;
      if (block.type === 'actions')
        return `<div class="actions">${block.elements.map((e: any) => `<span class="button ${e.style ?? ''}">${e.text.text}</span>`).join('')}</div>`;
      return '';
    })
    .join('');
  return `<!doctype html><meta charset="utf-8"><style>
    body{margin:0;background:#fff;font:15px/1.46 -apple-system,"Segoe UI",Lato,"Noto Sans",Arial,sans-serif;color:#1d1c1d}
    #msg{display:flex;gap:10px;padding:16px 20px;width:640px}
    .avatar{width:36px;height:36px;border-radius:6px;background:#0b6bcb;color:#fff;font-weight:700;display:flex;align-items:center;justify-content:center;flex:none}
    .who b{font-weight:900}.who span{color:#616061;font-size:12px;margin-left:6px}.app{background:#e8e8e8;color:#616061;font-size:10px;padding:1px 3px;border-radius:2px;margin-left:4px}
    .dot{display:inline-block;width:.8em;height:.8em;border-radius:50%;vertical-align:-.05em;margin-right:.2em}
    .header{font-weight:900;font-size:18px;margin:6px 0 8px}
    .fields{display:grid;grid-template-columns:1fr 1fr;gap:8px 16px;margin-bottom:8px}
    blockquote{margin:0;padding-left:10px;border-left:4px solid #ddd;color:#454245}
    .context{color:#616061;font-size:12px;margin:8px 0}
    code{font-size:12px;background:#f6f6f6;border:1px solid #e8e8e8;border-radius:3px;padding:1px 3px;color:#c01343}
    .button{display:inline-block;border:1px solid #bbb;border-radius:4px;padding:4px 12px;font-weight:700;font-size:14px}
    .button.primary{background:#007a5a;color:#fff;border-color:#007a5a}
  </style><div id="msg"><div class="avatar">SE</div><div><div class="who"><b>scheduled-events-bridge</b><span class="app">APP</span><span>05:04</span></div>${blocks}</div></div>`;
}
function teamsHtml(): string {
  return `<!doctype html><meta charset="utf-8"><style>
    body{margin:0;background:#f5f5f5;font-family:"Segoe UI",-apple-system,"Noto Sans",Arial,sans-serif}
    #msg{width:640px;padding:16px;background:#f5f5f5}#card{background:#fff;border-radius:6px;box-shadow:0 1px 2px rgba(0,0,0,.15);overflow:hidden}
  </style><div id="msg"><div id="card"></div></div>`;
}

const browser = await launchChromium();
try {
  const page = await browser.newPage({ deviceScaleFactor: 2 });
  await page.setContent(slackHtml());
  await (await page.$('#msg'))!.screenshot({ path: join(ROOT, 'docs', 'slack-message.png') });
  await page.setContent(teamsHtml());
  await page.addScriptTag({ path: join(ROOT, 'node_modules', 'adaptivecards', 'dist', 'adaptivecards.js') });
  const card = adaptiveCard(msg);
  await page.evaluate((json) => {
    const AC = (globalThis as any).AdaptiveCards;
    const c = new AC.AdaptiveCard();
    c.hostConfig = new AC.HostConfig({
      fontFamily: 'Segoe UI, sans-serif',
      containerStyles: {
        default: {
          backgroundColor: '#FFFFFF',
          foregroundColors: {
            default: { default: '#242424', subtle: '#616161' },
            attention: { default: '#C4314B' },
            warning: { default: '#835C00' },
            good: { default: '#237B4B' },
          },
        },
        emphasis: { backgroundColor: '#F5F5F5' },
        attention: { backgroundColor: '#FCF4F6', foregroundColors: { default: { default: '#242424' }, attention: { default: '#C4314B' } } },
        warning: { backgroundColor: '#FBF6D9', foregroundColors: { default: { default: '#242424' }, warning: { default: '#835C00' } } },
        good: { backgroundColor: '#E7F2DA', foregroundColors: { default: { default: '#242424' }, good: { default: '#237B4B' } } },
      },
    });
    c.parse(json);
    (globalThis as any).document.getElementById('card').appendChild(c.render());
  }, card);
  await (await page.$('#msg'))!.screenshot({ path: join(ROOT, 'docs', 'teams-message.png') });
  writeFileSync(
    join(ROOT, 'docs', 'chat-payloads.json'),
    `${JSON.stringify({ slack: slackMessage(msg), teams: { type: 'message', attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', content: card }] } }, null, 2)}\n`,
  );
  process.stdout.write('docs/slack-message.png, docs/teams-message.png, docs/chat-payloads.json\n');
} finally {
  await browser.close();
}
