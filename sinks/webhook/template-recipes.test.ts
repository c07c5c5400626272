/**
 * The recipes in examples/templates/, each through the real webhook sink over HTTP to a stand-in
 * of its service written from the service's public API documentation (testkit/service-standins.ts:
 * none of them can be reached from here). Each delivers a whole scenario (scheduled, updated,
 * approved, started, completed), one canceled maintenance, and one whose IMDS values are hostile,
 * and the stand-in accepts every request.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.ts';
import { identityFrom } from '../../src/imds/identity.ts';
import { toDomainDocument, WireDocument } from '../../src/imds/wire.ts';
import { toCloudEvent, transitionOf, type BridgeEvent } from '../../src/pipeline/cloudevent.ts';
import { diff } from '../../src/pipeline/diff.ts';
import type { Sink } from '../../src/sinks/contract.ts';
import { webhookSink, type WebhookConfig } from './index.ts';
import { scenarioTimeline } from '../../src/simulator/timeline.ts';
import { ServiceStandIns } from '../../testkit/service-standins.ts';
import { ROOT, silentLogger } from '../../test/helpers.ts';

const VM = identityFrom(null, {
  name: 'web-vm-0',
  resourceId: '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/web-vm-0',
});
const APPROVE = 'https://bridge.example.com/v1/approve?token=eyJlIjoiRSJ9.c2ln';

/** A maintenance whose IMDS values hold everything a receiver might take for markup. */
function hostile(): BridgeEvent[] {
  const wire = {
    EventId: 'H-1 <b>&amp;</b>',
    EventType: 'Reboot',
    EventStatus: 'Scheduled',
    Resources: ['web-vm-0', '<script>x</script>', 'a&b', '@everyone', '[Approve](https://evil.example)'],
    EventSource: 'Platform',
    Description: `Host <i>maintenance</i> & more: <a href="https://evil.example">click</a> \`code\` *bold* ${'long '.repeat(700)}`,
    NotBefore: 'Mon, 23 Nov 2026 10:00:00 GMT',
    DurationInSeconds: -1,
  };
  const doc = toDomainDocument(WireDocument.parse({ DocumentIncarnation: 7, Events: [wire] })).document;
  return diff(null, doc).map((t) => toCloudEvent(t, { vm: VM, observedAt: '2026-11-23T09:45:00Z' }));
}

/** Every transition: a whole maintenance, a canceled one, a host failure, and the hostile one. */
const EVENTS: BridgeEvent[] = [
  ...scenarioTimeline('degraded-hardware', VM),
  ...scenarioTimeline('canceled-maintenance', VM),
  ...scenarioTimeline('host-failure', VM),
  ...hostile(),
];

let api: ServiceStandIns;
beforeAll(async () => {
  api = await new ServiceStandIns().start();
});
afterAll(async () => {
  await api.close();
});

/** recipe reads a recipe's sink, its fixed service origin moved to the stand-in. */
function recipe(file: string): WebhookConfig {
  const text = readFileSync(join(ROOT, 'examples', 'templates', file), 'utf8').replace(
    /https:\/\/(api\.opsgenie\.com|events\.pagerduty\.com|api\.telegram\.org)/g,
    api.url,
  );
  const env = {
    GOOGLE_CHAT_WEBHOOK_URL: `${api.url}/v1/spaces/AAAA/messages?key=test-key&token=test-token`,
    DISCORD_WEBHOOK_URL: `${api.url}/api/webhooks/123456789012345678/test-token_abc`,
    MATTERMOST_WEBHOOK_URL: `${api.url}/hooks/abcdefghijklmnopqrstuvwxyz`,
    OPSGENIE_API_KEY: ServiceStandIns.GENIE_KEY,
    PAGERDUTY_ROUTING_KEY: 'R0123456789abcdefABCDEF012345678',
    TELEGRAM_BOT_TOKEN: ServiceStandIns.TELEGRAM_TOKEN,
    TELEGRAM_CHAT_ID: '-1001234567890',
  };
  const config = parseConfigText(`imds: { endpoint: "http://127.0.0.1:1" }\n${text}`, file, env);
  expect(config.sinks).toHaveLength(1);
  return config.sinks[0] as WebhookConfig;
}

/** deliver sends every event through the recipe's sink, one at a time, as the dispatcher does. */
async function deliver(config: WebhookConfig): Promise<string[]> {
  // the approval link, for a Scheduled event a human decides on
  const approval = {
    link: (e: BridgeEvent) => (e.data.eventStatus === 'Scheduled' && ['scheduled', 'updated'].includes(transitionOf(e)) ? APPROVE : null),
    token: () => null,
    slackInteractive: false,
  };
  const sink: Sink = await webhookSink.create(config, { logger: silentLogger, stdout: process.stdout, approval });
  try {
    const outcomes: string[] = [];
    for (const e of EVENTS) {
      const [o] = await sink.send([e], { signal: AbortSignal.timeout(10_000) });
      outcomes.push(o!.status === 'delivered' ? 'delivered' : `${o!.status}: ${'reason' in o! ? o.reason : ''}`);
    }
    return outcomes;
  } finally {
    await sink.close();
  }
}

const TRANSITIONS = EVENTS.map((e) => transitionOf(e));

describe('payload template recipes against their services', () => {
  it('covers every transition', () => {
    expect(new Set(TRANSITIONS)).toEqual(new Set(['scheduled', 'updated', 'approved', 'started', 'completed', 'canceled']));
    expect(readdirSync(join(ROOT, 'examples', 'templates')).sort()).toEqual([
      'discord.yaml',
      'google-chat.yaml',
      'mattermost.yaml',
      'opsgenie.yaml',
      'pagerduty.yaml',
      'telegram.yaml',
    ]);
  });

  it('Google Chat: a card per transition, the approval as a button', async () => {
    const before = api.received.length;
    expect(await deliver(recipe('google-chat.yaml'))).toEqual(EVENTS.map(() => 'delivered'));
    const got = api.received.slice(before);
    expect(got.filter((r) => r.refused !== null)).toEqual([]);
    expect(got).toHaveLength(EVENTS.length);
    const first = got[0]!.body as { text: string; cardsV2: { card: { sections: { widgets: Record<string, any>[] }[] } }[] };
    expect(first.text).toBe('web-vm-0 will be moved to another host (temporary disk lost)');
    expect(first.cardsV2[0]!.card.sections[0]!.widgets.at(-1)!.buttonList.buttons[0].onClick.openLink.url).toBe(APPROVE);
    const last = got.at(-1)!.body as { cardsV2: { card: { sections: { widgets: Record<string, any>[] }[] } }[] };
    // IMDS values are escaped where the card reads HTML
    expect(JSON.stringify(last)).toContain('&lt;script&gt;x&lt;/script&gt;');
  });

  it('Discord: an embed per transition, coloured by what happens, within the limits', async () => {
    const before = api.received.length;
    expect(await deliver(recipe('discord.yaml'))).toEqual(EVENTS.map(() => 'delivered'));
    const got = api.received.slice(before);
    expect(got.filter((r) => r.refused !== null)).toEqual([]);
    const colours = new Map(got.map((r, i) => [TRANSITIONS[i], (r.body as { embeds: { color: number }[] }).embeds[0]!.color]));
    expect(new Set(colours.values()).size).toBeGreaterThanOrEqual(5);
    expect((got[0]!.body as { embeds: { url?: string }[] }).embeds[0]!.url).toBe(APPROVE);
    // the hostile description is cut to the limits, and nobody is mentioned
    const last = got.at(-1)!.body as {
      allowed_mentions: unknown;
      embeds: { description: string; fields: { name: string; value: string }[] }[];
    };
    expect(last.allowed_mentions).toEqual({ parse: [] });
    // its Markdown is escaped: no live link, no bold, no code
    const embed = last.embeds[0]!;
    expect(embed.description).toContain('\\<a href="https\\://evil.example"\\>click\\</a\\> \\`code\\` \\*bold\\*');
    expect(embed.fields.find((f) => f.name === 'VMs')!.value).toContain('\\[Approve\\]\\(https\\://evil.example\\)');
    expect(embed.description).not.toMatch(/(^|[^\\])\[[^\]]*\]\(/);
  });

  it('Mattermost: text and an attachment per transition', async () => {
    const before = api.received.length;
    expect(await deliver(recipe('mattermost.yaml'))).toEqual(EVENTS.map(() => 'delivered'));
    const got = api.received.slice(before);
    expect(got.filter((r) => r.refused !== null)).toEqual([]);
    expect((got[0]!.body as { text: string }).text).toContain(`[Approve: start the maintenance now](${APPROVE})`);
  });

  it('Opsgenie: one alert per maintenance by alias, created, noted, and closed', async () => {
    api.opsgenie.clear();
    const before = api.received.length;
    expect(await deliver(recipe('opsgenie.yaml'))).toEqual(EVENTS.map(() => 'delivered'));
    const got = api.received.slice(before);
    expect(got.filter((r) => r.refused !== null)).toEqual([]);
    expect(got.every((r) => r.headers.authorization === `GenieKey ${ServiceStandIns.GENIE_KEY}`)).toBe(true);
    const ids = [...new Set(EVENTS.map((e) => e.data.eventId))];
    expect([...api.opsgenie.keys()].sort()).toEqual(ids.map((id) => `web-vm-0:${id}`).sort());
    // the hostile one is still open: it was only announced
    const hostileAlias = `web-vm-0:${hostile()[0]!.data.eventId}`;
    for (const [alias, a] of api.opsgenie) expect(a.status, alias).toBe(alias === hostileAlias ? 'open' : 'closed');
    const whole = api.opsgenie.get(`web-vm-0:${EVENTS[0]!.data.eventId}`)!;
    expect(whole.notes).toHaveLength(2); // updated, approved
    expect(whole.count).toBe(2); // created when announced, de-duplicated when started
  });

  it('PagerDuty: trigger, acknowledge on approval, resolve, one dedup_key per VM and EventId', async () => {
    api.pagerduty.clear();
    const before = api.received.length;
    expect(await deliver(recipe('pagerduty.yaml'))).toEqual(EVENTS.map(() => 'delivered'));
    const got = api.received.slice(before);
    expect(got.filter((r) => r.refused !== null)).toEqual([]);
    expect(got.map((r) => (r.body as { event_action: string }).event_action).slice(0, 5)).toEqual([
      'trigger',
      'trigger',
      'acknowledge',
      'trigger',
      'resolve',
    ]);
    const hostileKey = `web-vm-0/${hostile()[0]!.data.eventId}`;
    for (const [key, state] of api.pagerduty) expect(state, key).toBe(key === hostileKey ? 'triggered' : 'resolved');
    expect((got[0]!.body as { links: unknown }).links).toEqual([{ href: APPROVE, text: 'Approve: start the maintenance now' }]);
  });

  it('Telegram: sendMessage in HTML that Telegram parses, with an approval button', async () => {
    const before = api.received.length;
    expect(await deliver(recipe('telegram.yaml'))).toEqual(EVENTS.map(() => 'delivered'));
    const got = api.received.slice(before);
    expect(got.filter((r) => r.refused !== null)).toEqual([]);
    expect((got[0]!.body as { reply_markup: unknown }).reply_markup).toEqual({
      inline_keyboard: [[{ text: 'Approve: start the maintenance now', url: APPROVE }]],
    });
    const text = (got.at(-1)!.body as { text: string }).text;
    expect(text).toContain('&lt;script&gt;x&lt;/script&gt;, a&amp;b');
    expect(text).toContain('<code>H-1 &lt;b&gt;&amp;amp;&lt;/b&gt;</code>');
  });

  it('the Telegram stand-in refuses what Telegram refuses', async () => {
    const send = (text: string) =>
      fetch(`${api.url}/bot${ServiceStandIns.TELEGRAM_TOKEN}/sendMessage`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ chat_id: 1, text, parse_mode: 'HTML' }),
      });
    for (const bad of ['a <script> b', 'a & b', '<b>open', 'x'.repeat(4097)]) expect((await send(bad)).status, bad).toBe(400);
    expect((await send('<b>ok</b> &amp; <code>x</code>')).status).toBe(200);
  });
});
