/**
 * The slack sink against a local HTTP peer on 127.0.0.1: an incoming-webhook peer and a Slack Web
 * API peer (the real @slack/web-api client pointed at it through slackApiUrl); and its Block Kit
 * message (src/present/slack-blocks.ts) within Slack's limits.
 */
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import type { HttpPeer } from '../../testkit/http-peer.ts';
import { ce, httpPeerPerTest, send } from '../../testkit/chat-sinks.ts';
import { SinkConfig } from '../../src/config/schema.ts';
import { toChatMessage } from '../../src/present/chat-model.ts';
import { LIMITS, slackMessage } from '../../src/present/slack-blocks.ts';
import { Store } from '../../src/store/store.ts';
import { slackSink, type SlackConfig } from './index.ts';
import { digestOf } from '../../src/fleet/view/digest.ts';
import { snapshotOf } from '../../testkit/console.ts';

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

const chat = httpPeerPerTest();
let peer: HttpPeer;
let dir: { path: string };
const make = chat.make;
beforeEach(() => {
  peer = chat.peer();
  dir = { path: chat.dir() };
});

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

  it("updates the fleet digest's message in place, and posts a new one when Slack says it can no longer be updated", async () => {
    const sink = await make<SlackConfig>(slackSink, config());
    const d = digestOf(snapshotOf({ web: [] }, Date.parse('2026-11-30T10:00:00Z')), [], Date.parse('2026-11-30T10:00:00Z'), { hours: 8 });
    const signal = new AbortController().signal;
    const first = await sink.digest!(d, { ref: null, signal });
    expect(first).toEqual({ outcome: { status: 'delivered' }, ref: JSON.stringify({ channel: 'C123', ts: '1700000000.000001' }) });
    expect(await sink.digest!(d, { ref: first.ref, signal })).toEqual(first);
    const base = peer.answer;
    peer.answer = (r, i) =>
      r.url === '/api/chat.update'
        ? {
            status: 200,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ ok: false, error: 'cant_update_message' }),
          }
        : base(r, i);
    const again = await sink.digest!(d, { ref: first.ref, signal });
    expect(again.ref).toBe(JSON.stringify({ channel: 'C123', ts: '1700000000.000002' }));
    expect(calls().map((x) => x.method)).toEqual(['chat.postMessage', 'chat.update', 'chat.update', 'chat.postMessage']);
    // a reference that does not read as Slack's is none: a new message, never a call naming it
    peer.answer = base;
    expect((await sink.digest!(d, { ref: '{"channel":"<!channel>","ts":"x"}', signal })).ref).toBe(
      JSON.stringify({ channel: 'C123', ts: '1700000000.000003' }),
    );
    expect(calls().at(-1)!.method).toBe('chat.postMessage');
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
