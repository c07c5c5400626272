/**
 * The chat digest: the real relay, its members' records in Blob Storage (Azurite), written by whole
 * bridges (the IMDS simulator) or, where a test needs a record a member could write, by hand; the
 * digest said through the relay's own slack sink to a stand-in of Slack's Web API (the real
 * @slack/web-api client; no Slack runs here) and its teams sink to a Workflows webhook stand-in
 * (HTTP on 127.0.0.1). Nothing is mocked. Each digest look is made at once by the test
 * (`checkSeconds` is an hour), or with a clock of the test's, never by waiting for a timer.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AZURE_GROUP } from '../../src/fleet/budget/config.ts';
import { memberKey, memberName } from '../../src/fleet/budget/records.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import { RecordSeal } from '../../src/fleet/view/seal.ts';
import { FleetReader } from '../../src/fleet/view/snapshot.ts';
import { DIGEST_RECORD, DigestPoster } from '../../src/relay/digest.ts';
import { startRelay, type RunningRelay } from '../../src/relay/relay.ts';
import { RelaySinks } from '../../src/relay/sinks.ts';
import type { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { cardTexts } from '../../testkit/adaptive-card.ts';
import { fleetKeys, fleetPeer, relayConfig, relayInput } from '../../testkit/fleet.ts';
import { FleetStores } from '../../testkit/fleet-stores.ts';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { SlackStandIn } from '../../testkit/slack-web-api.ts';
import { cli } from '../e2e/process.ts';
import { silentLogger, tempDir, waitFor } from '../helpers.ts';

const TOKEN = 'xoxb-digest-test-token';
let stores: FleetStores;
let peer: AmqpPeer;
let slack: SlackStandIn;
let teams: HttpPeer;
let slackApi: string;
const relays: RunningRelay[] = [];

beforeAll(async () => {
  stores = await FleetStores.start();
  peer = await fleetPeer();
}, 60_000);
afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.close()));
  await stopAll();
  await slack?.close();
  await teams?.close();
});
afterAll(async () => {
  await peer?.close();
  await stores?.stop();
});

async function chats(): Promise<void> {
  slack = new SlackStandIn(TOKEN);
  slackApi = await slack.listen();
  teams = new HttpPeer();
  teams.answer = () => ({ status: 202 });
  await teams.listen();
}

const store = (container: string) => ({ ...stores.config('blob'), container });
const sinks = () => [
  { name: 'ops-slack', type: 'slack', botToken: TOKEN, channel: '#ops', apiUrl: slackApi, delivery: { timeoutMs: 5000 } },
  { name: 'ops-teams', type: 'teams', webhookUrl: `${teams.url}/workflows/digest`, delivery: { timeoutMs: 5000 } },
];
const digestOf = (over: Record<string, unknown> = {}) => ({ sinks: ['ops-slack', 'ops-teams'], hours: 8, checkSeconds: 3600, ...over });

async function relay(container: string, keys = fleetKeys()): Promise<RunningRelay> {
  const config = relayConfig(peer, keys, { fleet: { store: store(container), cacheMs: 0 }, sinks: sinks(), digest: digestOf() });
  const r = await startRelay(config, pino({ level: 'silent' }), { host: '127.0.0.1', port: 0 });
  relays.push(r);
  return r;
}

function member(container: string, group: string, vm: string, budget: number | null): Promise<Harness> {
  return startBridge({
    sim: { vmName: vm, peers: [], tickMs: 10 },
    config: {
      approval: { rules: budget === null ? [] : [{ match: {}, action: 'approve' }] },
      fleet: { group, store: store(container), heartbeatSeconds: 5, ...(budget === null ? {} : { maxUnavailable: budget }) },
    },
  });
}

/** The text a Slack message's blocks show, one line a block. */
const shown = (blocks: unknown[]) =>
  (blocks as { text?: { text: string }; elements?: { text?: string | { text: string } }[] }[])
    .map((b) => b.text?.text ?? (b.elements ?? []).map((e) => (typeof e.text === 'string' ? e.text : (e.text?.text ?? ''))).join(' '))
    .join('\n');
const teamsCards = () => teams.requests.map((r) => cardTexts(JSON.parse(r.body)).runs.join(' '));

describe('the chat digest, said by the relay', () => {
  it("two replicas say one message a period, and the Slack one follows the fleet in place; Teams' card is posted once", async () => {
    await chats();
    const container = 'digest-replicas';
    const [a0, a1, b0] = await Promise.all([
      member(container, 'dg-a', 'a0', 1),
      member(container, 'dg-a', 'a1', 1),
      member(container, 'dg-b', 'b0', null),
    ]);
    a0.sim.addEvent({ noticeMs: 1_800_000 });
    a1.sim.addEvent({ noticeMs: 1_800_000 });
    const keys = fleetKeys();
    const [r1, r2] = [await relay(container, keys), await relay(container, keys)];
    const both = () => Promise.all([r1, r2].map((r) => r.digest!.look('period')));
    // each replica looks once as it starts; then the test looks with both, until the members' records are read
    await waitFor(
      async () => {
        await both();
        return /dg-a\*: 2 maintenances \(2 Reboot\).*1 started, 1 held by the budget · budget 1: 1 down/.test(
          shown(slack.messages[0]?.blocks ?? []),
        );
      },
      "the digest says dg-a's two maintenances, one started and one held",
      60_000,
      200,
    );
    expect(slack.calls.filter((c) => c.method === 'chat.postMessage')).toHaveLength(1);
    expect(slack.messages).toHaveLength(1);
    expect(teams.requests).toHaveLength(1);
    // every update went to the one message the period has
    for (const c of slack.calls.filter((x) => x.method === 'chat.update'))
      expect(c).toMatchObject({ channel: slack.channelId, ts: slack.messages[0]!.ts });

    // nothing changed: both replicas look, and nobody calls the chat
    const calls = slack.calls.length;
    await both();
    await both();
    expect(slack.calls.length).toBe(calls);

    // a change in the fleet: b0's Freeze; one replica's update says it, in place
    b0.sim.addEvent({ noticeMs: 2_400_000, EventType: 'Freeze', DurationInSeconds: 5 });
    await waitFor(
      async () => {
        await both();
        return /dg-b\*: 1 maintenance \(1 Freeze\)/.test(shown(slack.messages[0]!.blocks));
      },
      "the digest says b0's Freeze",
      60_000,
      200,
    );
    expect(slack.messages).toHaveLength(1);
    expect(slack.messages[0]!.text).toMatch(/^Fleet maintenance in the next 8 h: 3 in 2 groups, 1 held$/);
    expect(slack.calls.filter((c) => c.method === 'chat.postMessage')).toHaveLength(1);
    // a Workflows card cannot be updated: the period's one card stays the only one
    expect(teams.requests).toHaveLength(1);
    expect(teams.requests[0]!.url).toBe('/workflows/digest');
    expect(teamsCards()[0]).toMatch(/^Fleet maintenance in the next 8 h: /);
    // one replica posted the period's message, and says so in its metrics
    const posted = async (r: RunningRelay) =>
      (await r.metrics.registry.metrics()).includes('sebridge_relay_digests_total{sink="ops-slack",result="posted"} 1');
    expect([await posted(r1), await posted(r2)].filter(Boolean)).toHaveLength(1);
  }, 120_000);
});

/** A member's record as any member may write it: one Scheduled Reboot of `vm` in `group`, NotBefore `inMs` from now. */
async function writeMember(container: string, group: string, vm: string, inMs: number, eventId = `E-${vm}`): Promise<void> {
  const s = await openFleetStore(store(container) as never, group);
  const key = memberKey({ name: vm, resourceId: null });
  const at = new Date().toISOString();
  const current = await s.get(memberName(key));
  await s.put(
    memberName(key),
    {
      ...{ member: key, vm, resourceId: null, heartbeatAt: at, heartbeatSeconds: 3600, slot: null },
      events: [
        {
          eventId,
          eventType: 'Reboot',
          status: 'Scheduled',
          notBefore: new Date(Date.now() + inMs).toISOString(),
          durationInSeconds: -1,
          approved: false,
        },
      ],
    },
    current?.version ?? null,
  );
  await s.close();
}

/** A poster over the real store and the relay's real sinks, with the test's clock. */
async function poster(container: string, key: Buffer, clock: { now: number }) {
  const reader = new FleetReader({ store: store(container) as never, timeoutMs: 5000, cacheMs: 0 });
  await reader.open();
  const made = await RelaySinks.create(relayConfig(peer, fleetKeys(), { sinks: sinks() }).sinks, silentLogger, process.stdout);
  const p = new DigestPoster({
    ...{ config: { ...digestOf(), everyMinutes: 60 }, reader, store: await openFleetStore(store(container) as never, AZURE_GROUP) },
    ...{ seal: new RecordSeal(key), sinks: made.chat(['ops-slack', 'ops-teams']), rules: {}, logger: silentLogger, by: 'test' },
    now: () => clock.now,
  });
  return { p, close: async () => (await p.close(), await made.close(), await reader.close()) };
}

describe('the digest over periods and failures', () => {
  it('posts a new message each period; a message deleted in Slack is posted again; a chat that fails is tried at the next look', async () => {
    await chats();
    const container = 'digest-periods';
    await writeMember(container, 'web', 'web-0', 3_600_000);
    const clock = { now: Date.parse('2026-11-30T10:05:00Z') };
    const { p, close } = await poster(container, Buffer.alloc(32, 1), clock);
    try {
      expect((await p.look('period')).did).toBe('posted');
      clock.now += 20 * 60_000;
      expect((await p.look('period')).did).toBe('unchanged');
      expect(slack.messages).toHaveLength(1);
      clock.now = Date.parse('2026-11-30T11:00:00Z');
      const next = await p.look('period');
      expect(next.did).toBe('posted');
      expect(next.sinks.map((s) => s.result)).toEqual(['posted', 'posted']);
      expect(slack.messages).toHaveLength(2);
      expect(teams.requests).toHaveLength(2);

      // someone deletes the message in Slack; the fleet changes: the update finds it gone and posts it again
      slack.remove(slack.messages[1]!.ts);
      await writeMember(container, 'web', 'web-1', 7_200_000);
      clock.now += 60_000;
      expect((await p.look('period')).did).toBe('updated');
      expect(slack.messages).toHaveLength(2);
      expect(shown(slack.messages[1]!.blocks)).toMatch(/\*web\*: 2 maintenances/);

      // Slack fails: the update is not said, and the next look says it
      await writeMember(container, 'web', 'web-2', 7_200_000);
      slack.failWith = { status: 503 };
      clock.now += 60_000;
      const failed = await p.look('period');
      expect(failed.sinks).toEqual([{ name: 'ops-slack', result: 'failed', why: expect.stringMatching(/Slack HTTP 503/) as unknown }]);
      slack.failWith = null;
      clock.now += 60_000;
      expect((await p.look('period')).sinks).toEqual([{ name: 'ops-slack', result: 'updated' }]);
      expect(shown(slack.messages[1]!.blocks)).toMatch(/\*web\*: 3 maintenances/);
      // Teams was never asked to update: one card a period
      expect(teams.requests).toHaveLength(2);
    } finally {
      await close();
    }
  }, 60_000);

  it('a record a member wrote, or sealed with another key, is no record: the relay neither updates the message it names nor skips its period', async () => {
    await chats();
    const container = 'digest-forged';
    await writeMember(container, 'web', 'web-0', 3_600_000);
    const clock = { now: Date.parse('2026-11-30T10:05:00Z') };
    const period = Math.floor(clock.now / 3_600_000);
    // as the relay's schema reads it (a newer write than any, busy all day, naming a message of the member's choice): only the seal tells it apart
    const forged = {
      ...{ seq: 1000, period, key: 'x', readAt: 0, busyUntil: clock.now + 86_400_000, by: 'a member' },
      refs: { 'ops-slack': JSON.stringify({ channel: 'C0VICTIM01', ts: '1600000000.000001' }) },
    };
    const azure = await openFleetStore(store(container) as never, AZURE_GROUP);
    await azure.put(DIGEST_RECORD, { ...forged, seal: 'AAAA' }, null);
    const { p, close } = await poster(container, Buffer.alloc(32, 2), clock);
    try {
      expect((await p.look('period')).did).toBe('posted');
      expect(slack.calls.map((c) => c.method)).toEqual(['chat.postMessage']);
      // the same record sealed with a key that is not the relay's
      const other = new RecordSeal(Buffer.alloc(32, 3));
      const now = await azure.get(DIGEST_RECORD);
      await azure.put(DIGEST_RECORD, other.seal(DIGEST_RECORD, forged), now!.version);
      await writeMember(container, 'web', 'web-1', 3_600_000);
      clock.now += 60_000;
      // nor does it post the period again: it updates the message it knows it posted, and says its record again
      expect((await p.look('period')).did).toBe('updated');
      expect(slack.calls.map((c) => c.method)).toEqual(['chat.postMessage', 'chat.update']);
      expect(slack.calls.some((c) => c.channel === 'C0VICTIM01')).toBe(false);
      expect(
        new RecordSeal(Buffer.alloc(32, 2)).openAs(
          DIGEST_RECORD,
          (await azure.get(DIGEST_RECORD))!.value,
          z.object({ by: z.string() }).passthrough(),
        ),
      ).toMatchObject({ by: 'test' });
    } finally {
      await azure.close();
      await close();
    }
  }, 60_000);
});

describe('se-bridge fleet digest', () => {
  it('prints the digest (--dry-run), and posts it now as a new message that a relay then updates in place', async () => {
    await chats();
    const container = 'digest-cli';
    await writeMember(container, 'api', 'api-0', 3_600_000);
    const keys = fleetKeys();
    const dir = tempDir();
    try {
      const file = join(dir.path, 'relay.json');
      writeFileSync(
        file,
        JSON.stringify(relayInput(peer, keys, { fleet: { store: store(container), cacheMs: 0 }, sinks: sinks(), digest: digestOf() })),
      );
      const dry = await cli(['fleet', 'digest', '--relay-config', file, '--dry-run']);
      expect(dry.stderr).toBe('');
      expect(dry.code).toBe(0);
      expect(dry.stdout).toMatch(
        /^Fleet maintenance in the next 8 h: 1 in 1 group\n {2}api: 1 maintenance \(1 Reboot\) at .* UTC: 1 scheduled\n/,
      );
      expect(slack.calls).toEqual([]);

      const now = await cli(['fleet', 'digest', '--relay-config', file]);
      expect(now.code).toBe(0);
      expect(now.stdout).toContain('Posted to ops-slack.\nPosted to ops-teams.');
      expect(slack.messages).toHaveLength(1);
      expect(teams.requests).toHaveLength(1);

      // a relay of the same file finds the period said, and updates that message when the fleet changes
      const r = await relay(container, keys);
      await writeMember(container, 'api', 'api-1', 3_600_000);
      await waitFor(async () => (await r.digest!.look('period')).did === 'updated', 'the relay updated the message', 20_000, 100);
      expect(slack.messages).toHaveLength(1);
      expect(shown(slack.messages[0]!.blocks)).toMatch(/\*api\*: 2 maintenances/);

      const none = await cli(['fleet', 'digest', '--relay-config', file.replace('relay.json', 'missing.json')]);
      expect(none.code).toBe(2);
    } finally {
      dir.cleanup();
    }
  }, 90_000);
});
