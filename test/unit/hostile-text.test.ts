/**
 * Text from IMDS (and from approvers) reaches a terminal, Slack and Teams. With hostile values
 * in every field, each target shows them as text: no forged stdout line, no terminal escape,
 * no Slack mention or link, no Teams link, emphasis, list or mention. In Teams every IMDS value
 * is a TextRun (never Markdown); what Teams does parse as Markdown is checked with a CommonMark
 * renderer (markdown-it). Slack's mrkdwn is checked by its only active syntax, `<…>`. The same
 * card rendered by the adaptivecards library in Chromium: test/e2e/chat-rendering.test.ts.
 */
import MarkdownIt from 'markdown-it';
import { describe, expect, it } from 'vitest';
import { toCloudEvent } from '../../src/pipeline/cloudevent.ts';
import { diff } from '../../src/pipeline/diff.ts';
import { identityFrom } from '../../src/imds/identity.ts';
import { toDomainDocument, WireDocument } from '../../src/imds/wire.ts';
import { toChatMessage } from '../../src/present/chat-model.ts';
import { slackMessage, threadLine } from '../../src/present/slack-blocks.ts';
import { adaptiveCard } from '../../src/present/teams-card.ts';
import { formatEventLine } from '../../src/present/text-line.ts';
import { cardTexts } from '../../testkit/adaptive-card.ts';

const HOSTILE = {
  EventId: 'E-1`\u001b[31mFAKE\n2026-11-22T00:00:00Z  SCHEDULED <!channel>',
  EventType: 'Reboot\u001b]8;;https://evil.example\u0007<!here>*bold*',
  EventStatus: 'Scheduled',
  Resources: ['vm0', '<https://evil.example|click me>', '[Approve](https://evil.example)', '- listed', '<@U123>'],
  EventSource: 'Platform\r\nX-Injected: 1 \u009b2J',
  Description:
    '[Approve now](https://evil.example/approve) **urgent** <at>CEO</at> \u202eevil\u202c\n1. item\n`code` _em_ ~strike~ ![img](https://evil.example/x.png) {{DATE(2020-01-01T00:00:00Z)}} <https://evil.example>',
  NotBefore: 'Mon, 23 Nov 2026 10:00:00 GMT',
  DurationInSeconds: 30,
};
const APPROVE = 'https://bridge.example/v1/approve?token=t';
/** What a preparation said (a module sink's words, a pod's name): as hostile as IMDS values. */
const PREPARED = 'drained <!channel> [Approve](https://evil.example) **now** <at>CEO</at>';

const event = (() => {
  const [t] = diff(null, toDomainDocument(WireDocument.parse({ DocumentIncarnation: 2, Events: [HOSTILE] })).document);
  return toCloudEvent(t!, { vm: identityFrom(null, { name: 'vm0' }), observedAt: '2026-11-22T10:00:00Z' });
})();
const message = toChatMessage(event, { approveUrl: APPROVE, preparations: [{ state: 'done', detail: PREPARED }] });

describe('stdout line', () => {
  const line = formatEventLine(event);
  it('stays one line with no control or bidi character, whatever the fields hold', () => {
    // eslint-disable-next-line no-control-regex -- control characters are what this refuses
    expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
    expect(line).toContain('\\u001b[31mFAKE\\n2026-11-22T00:00:00Z');
    expect(line).toContain('source=Platform\\r\\nX-Injected: 1 \\u009b2J');
    expect(line).toContain('\\u202eevil\\u202c');
  });
});

describe('Slack', () => {
  const payload = slackMessage(message);
  // what Slack parses as mrkdwn: the fallback text, thread replies and every mrkdwn object
  const texts: string[] = [payload.text, threadLine(message)];
  JSON.stringify(payload.blocks, (_k, v: unknown) => {
    const o = v as { type?: unknown; text?: unknown } | null;
    if (o !== null && typeof o === 'object' && o.type === 'mrkdwn' && typeof o.text === 'string') texts.push(o.text);
    return v;
  });
  it('no <…> syntax but its own dates: no mention, no channel ping, no link label', () => {
    for (const t of texts) {
      for (const m of t.matchAll(/</g)) expect(t.slice(m.index, m.index + 7)).toBe('<!date^');
    }
    expect(texts.join('\n')).toContain('&lt;!channel&gt;');
    expect(payload.text).toContain('&lt;!channel&gt;');
    expect(texts.join('\n')).toContain('&lt;https://evil.example|click me&gt;');
    expect(texts.join('\n')).toContain('drained &lt;!channel&gt;');
  });
  it('keeps the EventId code span whole', () => {
    const context = texts.find((t) => t.includes('EventId') && t.includes(' seen '))!;
    expect(context.match(/`/g)).toHaveLength(2);
    expect(context).toContain('E-1ˋ');
  });
});

describe('Teams', () => {
  const card = adaptiveCard(message) as { body: Record<string, unknown>[]; actions: { type: string; url: string }[] };
  const { markdown, runs } = cardTexts(card);
  const md = new MarkdownIt({ linkify: false });
  it('parses no IMDS value as Markdown: what Teams reads as Markdown holds only our words, and renders as itself', () => {
    for (const t of markdown) {
      expect(md.renderInline(t), t).toBe(md.utils.escapeHtml(t));
      for (const v of Object.values(HOSTILE)) if (typeof v === 'string' && v.length > 3) expect(t).not.toContain(v);
    }
    expect(JSON.stringify(card)).not.toContain('{{DATE(2020');
  });
  it('carries every IMDS value unchanged in a TextRun: no backslash, nothing dropped', () => {
    const all = runs.map((r) => r.replaceAll('\u200b', '')).join('\n');
    for (const v of [HOSTILE.EventId, HOSTILE.EventType, HOSTILE.EventSource, HOSTILE.Description, PREPARED, ...HOSTILE.Resources])
      expect(all).toContain(v);
  });
  it('has one action, the real Approve link', () => {
    expect(card.actions).toEqual([expect.objectContaining({ type: 'Action.OpenUrl', url: APPROVE })]);
  });
});

describe('ordinary names read as they are', () => {
  const plain = (() => {
    const doc = {
      DocumentIncarnation: 3,
      Events: [
        {
          ...HOSTILE,
          EventId: 'A1_b2',
          EventType: 'Reboot',
          EventSource: 'Platform',
          Resources: ['web_vm_01', 'WestNO_0'],
          Description: '1. list *not* emphasis_here',
        },
      ],
    };
    const [t] = diff(null, toDomainDocument(WireDocument.parse(doc)).document);
    return toChatMessage(toCloudEvent(t!, { vm: identityFrom(null, { name: 'web_vm_01' }), observedAt: '2026-11-22T10:00:00Z' }));
  })();
  it('Teams: a VM named web_vm_01 appears unchanged in the card JSON, and no value gains a backslash', () => {
    const json = JSON.stringify(adaptiveCard(plain));
    expect(json).toContain('"text":"web_vm_01 will be rebooted"');
    expect(json).toContain('"text":"1. list *not* emphasis_here"');
    expect(json).toContain('"text":"web_vm_01 (this VM), WestNO_0"');
    expect(json).not.toMatch(/\\\\[_*[\]<~`.]/);
  });
  it('Slack: every mrkdwn object is verbatim, so a URL or #channel in a Description is not turned into a link', () => {
    const objects: { type: string; verbatim?: boolean }[] = [];
    JSON.stringify(slackMessage(plain).blocks, (_k, v: unknown) => {
      const o = v as { type?: unknown } | null;
      if (o !== null && typeof o === 'object' && o.type === 'mrkdwn') objects.push(o as { type: string });
      return v;
    });
    expect(objects.length).toBeGreaterThan(5);
    for (const o of objects) expect(o.verbatim).toBe(true);
  });
});
