/**
 * The Slack and Teams sinks against local HTTP peers on 127.0.0.1: an incoming-webhook peer,
 * a Slack Web API peer (the real @slack/web-api client pointed at it through slackApiUrl), and
 * a Teams Workflows peer. The Adaptive Card is parsed by the adaptivecards library itself.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SinkConfig } from '../../src/config/schema.ts';
import { toCloudEvent, type BridgeEvent } from '../../src/pipeline/cloudevent.ts';
import { diff } from '../../src/pipeline/diff.ts';
import { identityFrom } from '../../src/imds/identity.ts';
import { toDomainDocument, WireDocument } from '../../src/imds/wire.ts';
import { Store } from '../../src/store/store.ts';
import { toChatMessage } from '../../src/present/chat-model.ts';
import { LIMITS, slackMessage } from '../../src/present/slack-blocks.ts';
import { slackSink, type SlackConfig } from '../../sinks/slack.ts';
import { adaptiveCard } from '../../src/present/teams-card.ts';
import { teamsSink, type TeamsConfig } from '../../sinks/teams.ts';
import type { Sink, SinkContext } from '../../src/sinks/contract.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { silentLogger, tempDir } from '../helpers.ts';

const require = createRequire(import.meta.url);
const AC = require('adaptivecards/dist/adaptivecards.js') as {
  AdaptiveCard: new () => { parse(json: unknown, ctx: unknown): void; toJSON(): Record<string, unknown> };
  SerializationContext: new () => { eventCount: number; getEventAt(i: number): { message: string } };
};

const vm = identityFrom({ name: 'vm0', resourceId: '/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm0' });
const OBSERVED = '2026-11-22T05:00:00.000Z';
function doc(events: Record<string, unknown>[]) {
  return toDomainDocument(WireDocument.parse({ DocumentIncarnation: 2, Events: events })).document;
}
const wire = (over: Record<string, unknown> = {}) => ({
  EventId: 'E-1',
  EventType: 'Freeze',
  EventStatus: 'Scheduled',
  Resources: ['vm0', 'vm1'],
  NotBefore: 'Sun, 22 Nov 2026 05:15:00 GMT',
  Description: 'Live migration.',
  EventSource: 'Platform',
  DurationInSeconds: 5,
  ...over,
});
function ce(kind: 'scheduled' | 'started' | 'completed', over: Record<string, unknown> = {}): BridgeEvent {
  const scheduled = doc([wire(over)]);
  const started = doc([wire({ ...over, EventStatus: 'Started', NotBefore: '' })]);
  const t =
    kind === 'scheduled' ? diff(null, scheduled)[0]! : kind === 'started' ? diff(scheduled, started)[0]! : diff(started, doc([]))[0]!;
  return toCloudEvent(t, { vm, observedAt: OBSERVED });
}

describe('chat message model', () => {
  it.each<[Record<string, unknown>, string, string, string]>([
    [{}, 'scheduled', 'vm0 will be paused for about 5s', 'warning'],
    [{ EventType: 'Reboot', DurationInSeconds: -1 }, 'scheduled', 'vm0 will be rebooted', 'high'],
    [{ EventType: 'Redeploy' }, 'scheduled', 'vm0 will be moved to another host (temporary disk lost)', 'high'],
    [{ EventType: 'Preempt' }, 'scheduled', 'vm0 will be evicted (Spot)', 'critical'],
    [{ EventType: 'Terminate' }, 'scheduled', 'vm0 will be deleted', 'critical'],
    [{ EventType: 'Reboot' }, 'started', 'vm0 is rebooting', 'high'],
    [{}, 'completed', 'vm0: maintenance finished (Freeze)', 'resolved'],
    [{ Resources: ['vm7', 'vm8'] }, 'scheduled', 'vm7 and 1 more will be paused for about 5s', 'info'],
  ])('%j %s -> "%s" (%s)', (over, kind, title, severity) => {
    const m = toChatMessage(ce(kind as 'scheduled', over));
    expect(m.title).toBe(title);
    expect(m.severity).toBe(severity);
  });

  it('ranks Preempt/Terminate/Redeploy/Reboot above Freeze, and Started above Scheduled', () => {
    const rank = (t: string, k: 'scheduled' | 'started' = 'scheduled') => toChatMessage(ce(k, { EventType: t })).rank;
    expect(rank('Preempt')).toBeGreaterThan(rank('Redeploy'));
    expect(rank('Redeploy')).toBeGreaterThan(rank('Reboot'));
    expect(rank('Reboot')).toBeGreaterThan(rank('Freeze'));
    expect(rank('Freeze', 'started')).toBeGreaterThan(rank('Freeze'));
  });

  it('gives NotBefore as UTC with the time left, marks this VM, and offers Approve only for a Scheduled event', () => {
    const m = toChatMessage(ce('scheduled'), { approveUrl: 'https://bridge.example/v1/approve?token=t' });
    expect(m.notBefore).toEqual({ iso: '2026-11-22T05:15:00Z', epoch: Date.parse('2026-11-22T05:15:00Z') / 1000, timeLeft: 'in 15m 0s' });
    expect(m.vms).toEqual([
      { name: 'vm0', isThisVm: true },
      { name: 'vm1', isThisVm: false },
    ]);
    expect(m.approveUrl).toBe('https://bridge.example/v1/approve?token=t');
    expect(toChatMessage(ce('started'), { approveUrl: 'https://x' }).approveUrl).toBeNull();
  });
});

describe('Slack Block Kit', () => {
  it('has a header, fields, description, context; dates in <!date^…>; a text fallback', () => {
    const p = slackMessage(toChatMessage(ce('scheduled')));
    expect(p.blocks.map((b) => b.type)).toEqual(['header', 'section', 'section', 'context']);
    const fields = (p.blocks[1] as { fields: { text: string }[] }).fields.map((f) => f.text);
    expect(fields[2]).toBe(
      `*Not before*\n<!date^${Date.parse('2026-11-22T05:15:00Z') / 1000}^{date_short_pretty} {time}|2026-11-22 05:15 UTC> (in 15m 0s)`,
    );
    expect(fields[4]).toBe('*VMs*\nvm0 (this VM), vm1');
    expect(p.text).toBe('vm0 will be paused for about 5s, not before 2026-11-22 05:15 UTC (in 15m 0s). EventId E-1');
  });

  it('adds the Approve button as a URL button when a link is given', () => {
    const p = slackMessage(toChatMessage(ce('scheduled'), { approveUrl: 'https://bridge.example/v1/approve?token=t' }));
    const actions = p.blocks.at(-1) as { type: string; elements: { url: string; text: { text: string }; style: string }[] };
    expect(actions.type).toBe('actions');
    expect(actions.elements[0]).toMatchObject({ url: 'https://bridge.example/v1/approve?token=t', style: 'primary' });
  });

  it('makes the button interactive (value = the signed token) for a Slack app with interactivity', () => {
    const p = slackMessage(toChatMessage(ce('scheduled'), { approveUrl: 'https://bridge.example/v1/approve?token=t' }), {
      interactiveValue: 't',
    });
    const button = (p.blocks.at(-1) as { elements: Record<string, unknown>[] }).elements[0]!;
    expect(button).toMatchObject({ action_id: 'se_bridge_approve', value: 't' });
    expect(button.url).toBeUndefined();
  });

  it('stays within Block Kit limits whatever the input', () => {
    const huge = ce('scheduled', {
      Description: 'x'.repeat(20_000),
      Resources: Array.from({ length: 400 }, (_, i) => `vm-with-a-long-name-${i}`),
      EventId: 'E'.repeat(300),
    });
    const p = slackMessage(toChatMessage(huge, { approveUrl: 'https://x.example/a' }));
    expect(p.blocks.length).toBeLessThanOrEqual(LIMITS.blocks);
    expect(p.text.length).toBeLessThanOrEqual(LIMITS.fallback);
    const header = p.blocks[0] as { text: { text: string } };
    expect(header.text.text.length).toBeLessThanOrEqual(LIMITS.header);
    for (const f of (p.blocks[1] as { fields: { text: string }[] }).fields) expect(f.text.length).toBeLessThanOrEqual(LIMITS.field);
    for (const b of p.blocks) {
      const t = (b as { text?: { text: string } }).text?.text;
      if (t) expect(t.length).toBeLessThanOrEqual(LIMITS.text);
    }
    const button = (p.blocks.at(-1) as { elements: { text: { text: string } }[] }).elements[0]!;
    expect(button.text.text.length).toBeLessThanOrEqual(LIMITS.buttonText);
  });
});

describe('Teams Adaptive Card', () => {
  it('is a valid Adaptive Card 1.5 for the adaptivecards library: no parse warnings, nothing dropped', () => {
    for (const kind of ['scheduled', 'started', 'completed'] as const) {
      const card = adaptiveCard(toChatMessage(ce(kind), { approveUrl: 'https://bridge.example/v1/approve?token=t' }));
      const parsed = new AC.AdaptiveCard();
      const ctx = new AC.SerializationContext();
      parsed.parse(card, ctx);
      const problems = Array.from({ length: ctx.eventCount }, (_, i) => ctx.getEventAt(i).message);
      expect(problems).toEqual([]);
      const back = parsed.toJSON() as { version: string; body: unknown[]; actions?: unknown[] };
      expect(back.version).toBe('1.5');
      expect(back.body).toHaveLength((card.body as unknown[]).length);
    }
  });

  it('has the facts as rows of runs, severity colours, and Action.OpenUrl (never Action.Submit) only when a human decides', () => {
    const card = adaptiveCard(toChatMessage(ce('scheduled', { EventType: 'Preempt' }), { approveUrl: 'https://bridge.example/a' }));
    const text = JSON.stringify(card);
    expect(text).not.toContain('Action.Submit');
    expect((card.actions as { type: string; url: string }[])[0]).toMatchObject({ type: 'Action.OpenUrl', url: 'https://bridge.example/a' });
    expect((card.body as { style?: string }[])[0]!.style).toBe('attention');
    expect(JSON.stringify(card.body)).toContain('{"type":"TextBlock","text":"EventId","weight":"Bolder","wrap":true}');
    expect(JSON.stringify(card.body)).not.toContain('FactSet');
    expect(adaptiveCard(toChatMessage(ce('completed'))).actions).toEqual([]);
  });
});

let peer: HttpPeer;
const open: Sink[] = [];
let dir: ReturnType<typeof tempDir>;
beforeEach(async () => {
  peer = new HttpPeer();
  await peer.listen();
  dir = tempDir();
});
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  await peer.close();
  dir.cleanup();
});
const send = (s: Sink, e: BridgeEvent) => s.send([e], { signal: new AbortController().signal });
async function make<C>(
  module: { create(c: C, ctx: SinkContext): Sink | Promise<Sink> },
  raw: Record<string, unknown>,
  extra: Partial<SinkContext> = {},
) {
  const sink = await module.create(SinkConfig.parse(raw) as C, { logger: silentLogger, stdout: process.stdout, ...extra });
  open.push(sink);
  return sink;
}

describe('slack sink, incoming webhook', () => {
  it('posts the Block Kit message', async () => {
    peer.answer = () => ({ status: 200, body: 'ok' });
    const sink = await make<SlackConfig>(slackSink, { name: 's', type: 'slack', webhookUrl: `${peer.url}/services/T/B/X` });
    expect(await send(sink, ce('scheduled'))).toEqual([{ status: 'delivered' }]);
    const body = JSON.parse(peer.requests[0]!.body) as { text: string; blocks: { type: string }[] };
    expect(peer.requests[0]!.url).toBe('/services/T/B/X');
    expect(body.blocks[0]!.type).toBe('header');
    expect(body.text).toContain('vm0 will be paused');
  });

  it('retries a 429 after Retry-After, and rejects Slack refusing the payload', async () => {
    const sink = await make<SlackConfig>(slackSink, { name: 's', type: 'slack', webhookUrl: `${peer.url}/hook` });
    peer.answer = () => ({ status: 429, headers: { 'retry-after': '2' }, body: 'rate_limited' });
    expect(await send(sink, ce('scheduled'))).toEqual([{ status: 'retry', reason: 'HTTP 429: rate_limited', retryAfterMs: 2000 }]);
    peer.answer = () => ({ status: 400, body: 'invalid_blocks' });
    expect(await send(sink, ce('scheduled'))).toEqual([{ status: 'reject', reason: 'HTTP 400: invalid_blocks' }]);
  });
});

describe('slack sink, bot token', () => {
  let ts = 0;
  const calls = () =>
    peer.requests.map((r) => {
      const form = new URLSearchParams(r.body);
      return {
        method: r.url.replace('/api/', ''),
        channel: form.get('channel'),
        ts: form.get('ts'),
        thread: form.get('thread_ts'),
        text: form.get('text'),
        auth: r.headers.authorization,
      };
    });
  beforeEach(() => {
    ts = 0;
    peer.answer = (r) => {
      if (r.url === '/api/chat.postMessage')
        return {
          status: 200,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ ok: true, channel: 'C123', ts: `1700000000.00000${++ts}` }),
        };
      if (r.url === '/api/chat.update')
        return {
          status: 200,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ ok: true, channel: 'C123', ts: new URLSearchParams(r.body).get('ts') }),
        };
      return { status: 404 };
    };
  });
  const config = () => ({ name: 'chat', type: 'slack', botToken: 'xoxb-test-token', channel: '#ops', apiUrl: `${peer.url}/api/` });

  it('posts one message per event, then updates it in place and replies in its thread, across a restart', async () => {
    const store = Store.open(join(dir.path, 'state.db'));
    let sink = await make<SlackConfig>(slackSink, config(), { state: store.sinkStates.of('chat') });
    expect(await send(sink, ce('scheduled'))).toEqual([{ status: 'delivered' }]);
    await sink.close();
    store.close();
    // a new process: the message reference comes back from the store
    const reopened = Store.open(join(dir.path, 'state.db'));
    sink = await make<SlackConfig>(slackSink, config(), { state: reopened.sinkStates.of('chat') });
    expect(await send(sink, ce('started'))).toEqual([{ status: 'delivered' }]);
    expect(await send(sink, ce('completed'))).toEqual([{ status: 'delivered' }]);
    reopened.close();
    const c = calls();
    expect(c.map((x) => x.method)).toEqual(['chat.postMessage', 'chat.update', 'chat.postMessage', 'chat.update', 'chat.postMessage']);
    expect(c[0]).toMatchObject({ channel: '#ops', auth: 'Bearer xoxb-test-token' });
    expect(c[1]).toMatchObject({ channel: 'C123', ts: '1700000000.000001' });
    expect(c[2]).toMatchObject({ channel: 'C123', thread: '1700000000.000001' });
    expect(c[2]!.text).toMatch(/started/);
    expect(c[3]).toMatchObject({ ts: '1700000000.000001' });
  });

  it('retries on Slack rate limiting with its Retry-After, and rejects Slack errors by name', async () => {
    const sink = await make<SlackConfig>(slackSink, config());
    peer.answer = () => ({ status: 429, headers: { 'retry-after': '3' }, body: '' });
    expect(await send(sink, ce('scheduled'))).toEqual([{ status: 'retry', reason: 'Slack rate limit (429)', retryAfterMs: 3000 }]);
    peer.answer = () => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ok: false, error: 'channel_not_found' }),
    });
    expect(await send(sink, ce('scheduled'))).toEqual([{ status: 'reject', reason: 'Slack: channel_not_found' }]);
    peer.answer = () => ({ status: 503, body: '' });
    expect((await send(sink, ce('scheduled')))[0]!.status).toBe('retry');
  });

  it('posts a new message when the old one was deleted', async () => {
    const store = Store.open(join(dir.path, 'state.db'));
    const sink = await make<SlackConfig>(slackSink, config(), { state: store.sinkStates.of('chat') });
    await send(sink, ce('scheduled'));
    const base = peer.answer;
    peer.answer = (r, i) =>
      r.url === '/api/chat.update'
        ? { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ok: false, error: 'message_not_found' }) }
        : base(r, i);
    expect(await send(sink, ce('started'))).toEqual([{ status: 'delivered' }]);
    expect(calls().map((x) => x.method)).toEqual(['chat.postMessage', 'chat.update', 'chat.postMessage']);
    expect(JSON.parse(store.sinkStates.of('chat').get('message:E-1')!)).toEqual({ channel: 'C123', ts: '1700000000.000002' });
    store.close();
  });

  it('is configured either by webhook or by token and channel', () => {
    expect(SinkConfig.safeParse({ name: 's', type: 'slack' }).success).toBe(false);
    expect(SinkConfig.safeParse({ name: 's', type: 'slack', botToken: 'xoxb-1' }).success).toBe(false);
    expect(
      SinkConfig.safeParse({ name: 's', type: 'slack', webhookUrl: 'https://hooks.slack.com/services/x', botToken: 'xoxb-1', channel: 'c' })
        .success,
    ).toBe(false);
  });
});

describe('teams sink', () => {
  it('posts a message with one Adaptive Card attachment; 202 is delivered', async () => {
    peer.answer = () => ({ status: 202 });
    const sink = await make<TeamsConfig>(
      teamsSink,
      { name: 't', type: 'teams', webhookUrl: `${peer.url}/workflows/x/triggers/manual/paths/invoke?sig=secret` },
      { approval: { link: () => 'https://bridge.example/v1/approve?token=t', token: () => 't', slackInteractive: false } },
    );
    expect(await send(sink, ce('scheduled'))).toEqual([{ status: 'delivered' }]);
    const body = JSON.parse(peer.requests[0]!.body) as {
      type: string;
      attachments: { contentType: string; content: { version: string; actions: { type: string }[] } }[];
    };
    expect(body.type).toBe('message');
    expect(body.attachments).toHaveLength(1);
    expect(body.attachments[0]!.contentType).toBe('application/vnd.microsoft.card.adaptive');
    expect(body.attachments[0]!.content.version).toBe('1.5');
    expect(body.attachments[0]!.content.actions[0]!.type).toBe('Action.OpenUrl');
  });

  it('retries 429 and 5xx, rejects other 4xx', async () => {
    const sink = await make<TeamsConfig>(teamsSink, { name: 't', type: 'teams', webhookUrl: `${peer.url}/wf` });
    peer.answer = () => ({ status: 429, headers: { 'retry-after': '5' } });
    expect((await send(sink, ce('scheduled')))[0]).toMatchObject({ status: 'retry', retryAfterMs: 5000 });
    peer.answer = () => ({ status: 502 });
    expect((await send(sink, ce('scheduled')))[0]!.status).toBe('retry');
    peer.answer = () => ({ status: 401, body: 'DirectApiAuthorizationRequired' });
    expect((await send(sink, ce('scheduled')))[0]).toMatchObject({ status: 'reject', reason: 'HTTP 401: DirectApiAuthorizationRequired' });
  });
});
