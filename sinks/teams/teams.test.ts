/**
 * The teams sink against a local HTTP peer on 127.0.0.1 standing in for a Teams Workflows
 * webhook; its Adaptive Card (src/present/teams-card.ts) is parsed by the adaptivecards library
 * itself.
 */
import { createRequire } from 'node:module';
import { beforeEach, describe, expect, it } from 'vitest';
import type { HttpPeer } from '../../testkit/http-peer.ts';
import { ce, httpPeerPerTest, send } from '../../testkit/chat-sinks.ts';
import { toChatMessage } from '../../src/present/chat-model.ts';
import { adaptiveCard } from '../../src/present/teams-card.ts';
import { teamsSink, type TeamsConfig } from './index.ts';

const require = createRequire(import.meta.url);
const AC = require('adaptivecards/dist/adaptivecards.js') as {
  AdaptiveCard: new () => { parse(json: unknown, ctx: unknown): void; toJSON(): Record<string, unknown> };
  SerializationContext: new () => { eventCount: number; getEventAt(i: number): { message: string } };
};

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

const chat = httpPeerPerTest();
let peer: HttpPeer;
const make = chat.make;
beforeEach(() => {
  peer = chat.peer();
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
