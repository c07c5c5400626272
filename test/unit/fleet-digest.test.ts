/**
 * The fleet digest: what it counts (the events within its hours, by group and state), what its
 * key follows (the fleet, never the clock), and how it reads in Slack and Teams when the text of a
 * record (a pause's reason, a person's name) is written to make a mention, a link or a card
 * function: it stays text.
 */
import { describe, expect, it } from 'vitest';
import { digestOf } from '../../src/fleet/view/digest.ts';
import type { FleetEvent } from '../../src/fleet/view/events.ts';
import { digestSlack, digestTeams, digestText } from '../../src/present/digest.ts';
import { LIMITS } from '../../src/present/slack-blocks.ts';
import { RelayConfig } from '../../src/relay/config.ts';
import { cardTexts } from '../../testkit/adaptive-card.ts';
import { consoleRelayConfig, snapshotOf } from '../../testkit/console.ts';

const NOW = Date.parse('2026-11-30T10:00:00Z');
const HOUR = 3_600_000;

const event = (over: Partial<FleetEvent> = {}): FleetEvent => ({
  ...{ group: 'web', vm: 'web-0', resourceId: null, eventId: 'E0', eventType: 'Reboot', status: 'Scheduled' },
  ...{ notBefore: new Date(NOW + HOUR).toISOString(), durationInSeconds: -1, member: 'fresh', heartbeatAt: new Date(NOW).toISOString() },
  ...over,
});
const held = { since: new Date(NOW).toISOString(), by: ['web-0'] };

describe('the fleet digest', () => {
  const snapshot = snapshotOf({ web: [], db: [] }, NOW);
  const events = [
    event(),
    event({ vm: 'web-1', eventId: 'E1', notBefore: new Date(NOW + 2 * HOUR).toISOString(), held }),
    event({ vm: 'web-2', eventId: 'E2', status: 'Started', notBefore: null }),
    event({ group: 'db', vm: 'db-0', eventId: 'E3', eventType: 'Freeze', notBefore: new Date(NOW + 9 * HOUR).toISOString() }),
    event({ group: null, vm: 'lost-0', eventId: 'E4', member: 'none', unwatched: { why: 'no-member', since: null } }),
  ];

  it('counts what begins within its hours (and what is under way), by group and state; a group with nothing coming is left out', () => {
    const d = digestOf(snapshot, events, NOW, { hours: 8 });
    expect(d.total).toBe(4);
    expect(d.groups.map((g) => g.group)).toEqual(['web', null]);
    expect(d.groups[0]).toMatchObject({
      count: 3,
      types: [{ type: 'Reboot', count: 3 }],
      first: '2026-11-30T11:00:00.000Z',
      last: '2026-11-30T12:00:00.000Z',
      states: { scheduled: 1, 'held by the budget': 1, started: 1 },
      maxUnavailable: 1,
    });
    expect(digestText(d).split('\n')).toEqual([
      'Fleet maintenance in the next 8 h: 4 in 1 group, 1 held, 1 unwatched',
      '  web: 3 maintenances (3 Reboot) from 2026-11-30 11:00 UTC to 12:00 UTC: 1 started, 1 held by the budget, 1 scheduled · budget 1: 0 down',
      '  no member record: 1 maintenance (1 Reboot) at 2026-11-30 11:00 UTC: 1 unwatched',
      'As of 2026-11-30 10:00 UTC, until 2026-11-30 18:00 UTC',
    ]);
    // ten hours ahead, db's Freeze is within them
    expect(digestOf(snapshot, events, NOW, { hours: 10 }).groups.map((g) => g.group)).toEqual(['web', 'db', null]);
  });

  it('keeps its key while only the clock moves, and changes it when the fleet does', () => {
    const a = digestOf(snapshot, events, NOW, { hours: 8 });
    const b = digestOf(snapshot, events, NOW + 5 * 60_000, { hours: 8 });
    expect(b.key).toBe(a.key);
    expect(b.at).not.toBe(a.at);
    const c = digestOf(
      snapshot,
      [...events.slice(0, 1), { ...events[1]!, held: undefined, approval: { by: 'ops', via: 'api', at: b.at } }],
      NOW,
      {
        hours: 8,
      },
    );
    expect(c.key).not.toBe(a.key);
  });

  it('never says "nothing" for a store it could not read', () => {
    const d = digestOf({ ...snapshot, groups: [], unread: [{ what: 'the fleet store', why: 'ECONNREFUSED' }] }, [], NOW, { hours: 8 });
    expect(digestText(d)).toMatch(
      /^Fleet maintenance in the next 8 h: unknown, the fleet store could not be read\n {2}not read: the fleet store: ECONNREFUSED/,
    );
    expect(digestText(digestOf(snapshot, [], NOW, { hours: 8 }))).toMatch(/^Fleet maintenance in the next 8 h: nothing scheduled\n/);
  });
});

describe('the digest in chat', () => {
  const hostile = '<!channel> <https://evil.example|click> {{DATE(2026-01-01T00:00:00Z)}} & *bold*';
  const paused = snapshotOf({ web: [] }, NOW);
  const snapshot = {
    ...paused,
    groups: [{ ...paused.groups[0]!, pause: { by: 'person' as const, who: hostile, why: hostile, since: new Date(NOW).toISOString() } }],
  };
  const d = digestOf(snapshot, [event()], NOW, { hours: 8, consoleUrl: 'https://ops.example/console' });

  it('Slack: what a record says is escaped and verbatim, so it makes no mention or link; the button opens the console', () => {
    const p = digestSlack(d);
    const line = p.blocks[1] as { text: { text: string; verbatim: boolean } };
    expect(line.text.verbatim).toBe(true);
    expect(line.text.text).toContain('paused by &lt;!channel&gt; &lt;https://evil.example|click&gt;');
    expect(JSON.stringify(p.blocks)).not.toMatch(/<!channel>|<https:\/\/evil/);
    expect(p.blocks.at(-1)).toMatchObject({ type: 'actions', elements: [{ url: 'https://ops.example/console' }] });
  });

  it('Slack: a thousand groups stay within Block Kit limits', () => {
    const many = snapshotOf(Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`g-${i}`, []])), NOW);
    const lots = Array.from({ length: 1000 }, (_, i) => event({ group: `g-${i}`, vm: `vm-${i}`, eventId: `E${i}` }));
    const p = digestSlack(digestOf(many, lots, NOW, { hours: 8, consoleUrl: 'https://ops.example/console' }));
    expect(p.blocks.length).toBeLessThanOrEqual(LIMITS.blocks);
    expect(JSON.stringify(p.blocks.at(-2))).toContain('960 more groups');
  });

  it('Slack: a group line a member made as long as it may is shortened, so forty of them stay a message of a few tens of KB', () => {
    const long = 'x'.repeat(1024);
    const groups = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`g-${i}`, []]));
    const paused = snapshotOf(groups, NOW);
    const s = {
      ...paused,
      groups: paused.groups.map((g) => ({
        ...g,
        pause: { by: 'person' as const, who: long, why: long, since: new Date(NOW).toISOString() },
      })),
    };
    const p = digestSlack(digestOf(s, [], NOW, { hours: 8 }));
    const sections = p.blocks.filter((b) => b.type === 'section') as { text: { text: string } }[];
    expect(sections).toHaveLength(40);
    for (const b of sections) expect(b.text.text.length).toBeLessThanOrEqual(720);
    expect(Buffer.byteLength(JSON.stringify(p))).toBeLessThan(40_000);
  });

  it("Teams: records written as large as a member may write them keep the card within Teams' 28 KB a message", () => {
    const long = 'x'.repeat(1024); // a record's text, at its schema's most
    const many = snapshotOf(Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`g-${i}-${long.slice(0, 200)}`, []])), NOW);
    const pause = { by: 'person' as const, who: long, why: long, since: new Date(NOW).toISOString() };
    const big = { ...many, groups: many.groups.map((g) => ({ ...g, pause })) };
    const lots = big.groups.map((g, i) => event({ group: g.group, vm: `vm-${i}`, eventId: `E${i}`, eventType: long }));
    const message = digestTeams(digestOf(big, lots, NOW, { hours: 8, consoleUrl: 'https://ops.example/console' }));
    expect(Buffer.byteLength(JSON.stringify(message))).toBeLessThanOrEqual(28 * 1024);
    expect(cardTexts((message.attachments as { content: unknown }[])[0]!.content).runs.join('\n')).toMatch(/more groups/);
  });

  it('Teams: what a record says is a TextRun (never Markdown), and {{DATE()}} in it is no function', () => {
    const card = (digestTeams(d).attachments as { content: unknown }[])[0]!.content;
    const { markdown, runs } = cardTexts(card);
    expect(markdown.join('\n')).not.toContain('evil');
    const line = runs.find((r) => r.includes('paused by'))!;
    expect(line).toContain('<https://evil.example|click>');
    expect(line).not.toContain('{{DATE(');
    expect((card as { actions: unknown[] }).actions).toEqual([
      { type: 'Action.OpenUrl', title: 'Open the timeline', url: 'https://ops.example/console' },
    ]);
  });
});

describe('the digest in the relay configuration', () => {
  const problems = (over: Record<string, unknown>) => {
    const r = RelayConfig.safeParse(consoleRelayConfigInput(over));
    return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };
  it('names chat sinks of the relay, once each, and has a key to seal its record with', () => {
    const sinks = [
      { name: 'chat', type: 'slack', webhookUrl: 'https://hooks.slack.com/services/T/B/X' },
      { name: 'hook', type: 'webhook', url: 'https://example.com/hook' },
    ];
    expect(problems({ sinks, digest: { sinks: ['chat'] } })).toEqual([]);
    expect(problems({ sinks, digest: { sinks: ['hook', 'nope', 'chat', 'chat'] } })).toEqual([
      'digest.sinks.0: is a webhook sink: the digest goes to a slack or teams sink',
      "digest.sinks.1: names no sink of the relay's sinks",
      'digest.sinks.3: is named twice',
    ]);
    expect(problems({ sinks, digest: { sinks: ['chat'] }, serviceBus: undefined, signingKey: undefined, fleetKey: undefined })).toEqual([
      'digest: needs fleetKey or azure.recordKey: the relay seals the record of its digest messages in the store, which every member may write',
    ]);
  });
});

/** The input of consoleRelayConfig's file, with `over` (a key set to undefined is removed). */
function consoleRelayConfigInput(over: Record<string, unknown>): Record<string, unknown> {
  const base = consoleRelayConfig({});
  const input: Record<string, unknown> = {
    serviceBus: { connectionString: base.serviceBus!.connectionString },
    signingKey: base.signingKey,
    fleetKey: base.fleetKey,
    fleet: { store: { type: 'blob', connectionString: 'UseDevelopmentStorage=true' } },
    ...over,
  };
  for (const [k, v] of Object.entries(input)) if (v === undefined) delete input[k];
  return input;
}
