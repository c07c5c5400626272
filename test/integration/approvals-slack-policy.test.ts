/**
 * Approvals through the whole bridge, continued: Slack interactions (signed, acknowledged at
 * once, the message updated through response_url), the policy, and preparation hooks.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { issueToken, slackSignature } from '../../src/approval/signatures.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { responseUrlAllowed } from '../../src/approval/slack.ts';
import { laterReads, waitFor } from '../helpers.ts';
import {
  approvedEvents,
  bridge,
  call,
  delivered,
  dir,
  KEY,
  lines,
  run,
  scheduled,
  sim,
  SLACK_SECRET,
  useApprovalBridge,
} from './approvals-kit.ts';

useApprovalBridge();

describe('POST /v1/slack/interactions', () => {
  async function slackClick(token: string, responseUrl: string, opts: { secret?: string; ts?: number } = {}) {
    const payload = {
      type: 'block_actions',
      user: { id: 'U123', username: 'carol' },
      actions: [{ action_id: 'se_bridge_approve', value: token }],
      response_url: responseUrl,
      message: {
        blocks: [
          { type: 'header', text: { type: 'plain_text', text: 'vm0 will be rebooted' } },
          { type: 'actions', elements: [] },
        ],
      },
    };
    const body = `payload=${encodeURIComponent(JSON.stringify(payload))}`;
    const ts = String(opts.ts ?? Math.floor(Date.now() / 1000));
    return call('POST', '/v1/slack/interactions', body, {
      'content-type': 'application/x-www-form-urlencoded',
      'x-slack-request-timestamp': ts,
      'x-slack-signature': slackSignature(opts.secret ?? SLACK_SECRET, ts, body),
    });
  }

  /** clickOnScheduled: a bridge, a Scheduled event, its Approve button clicked with `responseUrl(slack peer)`. */
  async function clickOnScheduled(responseUrl: (slack: HttpPeer) => string, check: (slack: HttpPeer, eventId: string) => Promise<void>) {
    const slack = new HttpPeer();
    await slack.listen();
    try {
      await run();
      const e = await scheduled({ EventType: 'Reboot' });
      const token = issueToken(KEY, { e: e.eventId, v: 'vm0', x: Math.floor(Date.now() / 1000) + 600 });
      const r = await slackClick(token, responseUrl(slack));
      expect(r.status).toBe(200);
      await check(slack, e.eventId);
    } finally {
      await slack.close();
    }
  }

  it('acknowledges at once, approves, and updates the message through response_url', async () => {
    await clickOnScheduled(
      (slack) => `${slack.url}/response`,
      async (slack, eventId) => {
        await waitFor(() => slack.requests.length === 1, 'the message update');
        const update = JSON.parse(slack.requests[0]!.body) as { replace_original: boolean; blocks: { type: string }[]; text: string };
        expect(update.replace_original).toBe(true);
        expect(update.text).toContain('Approved by <@U123>');
        expect(update.blocks.map((b) => b.type)).toEqual(['header', 'context']);
        expect(sim.startRequests.map((s) => s.eventIds)).toEqual([[eventId]]);
        await waitFor(() => approvedEvents().length === 1, 'approved');
        expect(approvedEvents()[0]!.data.approval).toMatchObject({ by: '@carol', via: 'slack' });
      },
    );
  });

  it('approves, but never posts to a response_url outside slack.responseUrls', async () => {
    // the same peer under another host name: not under http://127.0.0.1:
    await clickOnScheduled(
      (slack) => `${slack.url.replace('127.0.0.1', 'localhost')}/response`,
      async (slack) => {
        await waitFor(() => approvedEvents().length === 1, 'approved');
        await waitFor(() => lines.some((l) => l.code === 'SLACK_RESPONSE_URL'), 'the warning');
        expect(slack.requests).toEqual([]);
      },
    );
  });

  it('approves, but never posts to a response_url with a user name, even one whose text starts like an allowed prefix', async () => {
    // http://127.0.0.1:@localhost:PORT/ starts with the text "http://127.0.0.1:" but is localhost, as user "127.0.0.1"
    await clickOnScheduled(
      (slack) => `http://127.0.0.1:@localhost:${new URL(slack.url).port}/response`,
      async (slack) => {
        await waitFor(() => approvedEvents().length === 1, 'approved');
        await waitFor(() => lines.some((l) => l.code === 'SLACK_RESPONSE_URL'), 'the warning');
        expect(slack.requests).toEqual([]);
      },
    );
  });

  it('compares a response_url by its parts: scheme, host, port and path prefix', () => {
    const allowed = ['https://hooks.slack.com/', 'http://127.0.0.1:', 'https://hooks.example.com:8443/slack/'];
    expect(responseUrlAllowed('https://hooks.slack.com/actions/T1/B2/x', allowed)).toBe(true);
    expect(responseUrlAllowed('https://hooks.slack.com:@evil.example/', allowed)).toBe(false);
    expect(responseUrlAllowed('https://user:pw@hooks.slack.com/actions', allowed)).toBe(false);
    expect(responseUrlAllowed('https://hooks.slack.com.evil.example/actions', allowed)).toBe(false);
    expect(responseUrlAllowed('http://hooks.slack.com/actions', allowed)).toBe(false);
    expect(responseUrlAllowed('https://hooks.slack.com:8443/actions', allowed)).toBe(false);
    expect(responseUrlAllowed('http://127.0.0.1:4711/anything', allowed)).toBe(true);
    expect(responseUrlAllowed('https://hooks.example.com:8443/slack/x', allowed)).toBe(true);
    expect(responseUrlAllowed('https://hooks.example.com:8443/slackx', allowed)).toBe(false);
    expect(responseUrlAllowed('https://hooks.example.com/slack/x', allowed)).toBe(false);
    expect(responseUrlAllowed('not a url', allowed)).toBe(false);
  });

  it('refuses a bad or stale Slack signature, and other interaction types', async () => {
    await run();
    const e = await scheduled();
    const token = issueToken(KEY, { e: e.eventId, v: 'vm0', x: Math.floor(Date.now() / 1000) + 600 });
    expect((await slackClick(token, 'http://127.0.0.1:9/x', { secret: 'wrong' })).status).toBe(401);
    expect((await slackClick(token, 'http://127.0.0.1:9/x', { ts: Math.floor(Date.now() / 1000) - 600 })).json().error!.code).toBe(
      'STALE_TIMESTAMP',
    );
    const body = `payload=${encodeURIComponent(JSON.stringify({ type: 'view_submission' }))}`;
    const ts = String(Math.floor(Date.now() / 1000));
    const other = await call('POST', '/v1/slack/interactions', body, {
      'content-type': 'application/x-www-form-urlencoded',
      'x-slack-request-timestamp': ts,
      'x-slack-signature': slackSignature(SLACK_SECRET, ts, body),
    });
    expect(other.status).toBe(400);
    expect(sim.startRequests).toHaveLength(0);
  });
});

describe('policy and preparation hooks', () => {
  it('approves user-initiated events and short freezes by policy; awaits the rest', async () => {
    await run({
      rules: [
        { match: { eventSource: 'User' }, action: 'approve' },
        { match: { eventType: 'Freeze', maxDurationSeconds: 8 }, action: 'approve' },
      ],
    });
    const user = sim.addEvent({ EventType: 'Reboot', EventSource: 'User', noticeMs: 600_000 });
    const freeze = sim.addEvent({ EventType: 'Freeze', DurationInSeconds: 5, noticeMs: 600_000 });
    const platform = sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
    await waitFor(() => sim.startRequests.length === 2, 'two automatic approvals');
    await laterReads(sim);
    expect(sim.startRequests.flatMap((s) => s.eventIds).sort()).toEqual([user.eventId, freeze.eventId].sort());
    expect(sim.events.find((e) => e.eventId === platform.eventId)!.status).toBe('Scheduled');
    await waitFor(() => approvedEvents().length === 2, 'two approved events');
    expect(approvedEvents().every((e) => e.data.approval!.via === 'policy')).toBe(true);
  });

  it('leaves a group event to its leader', async () => {
    await run({ rules: [{ match: {}, action: 'approve' }] });
    const follower = sim.addEvent({ Resources: ['vm1', 'vm0'], noticeMs: 600_000 });
    const leader = sim.addEvent({ Resources: ['vm0', 'vm1'], noticeMs: 600_000 });
    await waitFor(() => sim.startRequests.length === 1, 'the leader approval');
    await laterReads(sim);
    expect(sim.startRequests.flatMap((s) => s.eventIds)).toEqual([leader.eventId]);
    expect(
      lines.some((l) => l.eventId === follower.eventId && typeof l.reason === 'string' && l.reason.includes('approves for the group')),
    ).toBe(true);
  });

  it('in dry run, logs what it would approve and sends nothing', async () => {
    await run({ rules: [{ match: {}, action: 'approve' }] }, [], true);
    sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => lines.some((l) => l.msg === 'dry run: would approve (POST StartRequests)'), 'the dry-run line');
    expect(sim.startRequests).toHaveLength(0);
  });

  it('approves after every preparation hook succeeded; a failing or hanging hook holds it back', async () => {
    const marker = join(dir.path, 'drained');
    const ok = join(dir.path, 'ok.sh');
    writeFileSync(ok, `#!/bin/sh\nread -r line\necho "$SE_EVENT_ID $SE_TRANSITION" >> "${marker}"\nexit 0\n`, { mode: 0o755 });
    const fail = join(dir.path, 'fail.sh');
    writeFileSync(fail, '#!/bin/sh\necho "cannot drain" >&2\nexit 3\n', { mode: 0o755 });
    const hang = join(dir.path, 'hang.sh');
    writeFileSync(hang, '#!/bin/sh\nsleep 30 &\nsleep 30\n', { mode: 0o755 });
    const fast = { initialBackoffMs: 100, maxBackoffMs: 200, maxAttempts: 2 };
    await run({ rules: [{ match: {}, action: 'approveAfterHooks' }] }, [
      { name: 'drain', type: 'exec', command: [ok], prepare: true, filter: { types: ['scheduled'] } },
      {
        name: 'checkpoint',
        type: 'exec',
        command: [fail],
        prepare: true,
        filter: { types: ['scheduled'], eventTypes: ['Redeploy'] },
        delivery: fast,
      },
      {
        name: 'slow',
        type: 'exec',
        command: [hang],
        prepare: true,
        timeoutMs: 300,
        filter: { types: ['scheduled'], eventTypes: ['Terminate'] },
        delivery: fast,
      },
    ]);
    const reboot = sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
    const redeploy = sim.addEvent({ EventType: 'Redeploy', noticeMs: 600_000 });
    const terminate = sim.addEvent({ EventType: 'Terminate', noticeMs: 600_000 });
    await waitFor(() => sim.startRequests.length === 1, 'the reboot approval after its hook');
    expect(sim.startRequests[0]!.eventIds).toEqual([reboot.eventId]);
    expect(readFileSync(marker, 'utf8')).toContain(`${reboot.eventId} scheduled`);
    await waitFor(() => bridge!.store.outbox.deadLetters().length === 2, 'the failed and the hung hook to be dead-lettered', 20_000);
    const dead = bridge!.store.outbox.deadLetters();
    expect(dead.find((d) => d.sink === 'checkpoint')!.lastError).toMatch(/exited with code 3: cannot drain/);
    expect(dead.find((d) => d.sink === 'slow')!.lastError).toMatch(/timed out after 300 ms; process group killed/);
    expect(sim.startRequests.flatMap((s) => s.eventIds)).not.toContain(redeploy.eventId);
    expect(sim.startRequests.flatMap((s) => s.eventIds)).not.toContain(terminate.eventId);
    expect(approvedEvents().map((e) => e.data.approval!.via)).toEqual(['hooks']);
  });

  it('a preparation hook without a filter runs only for what prepares, and approves an EventId with "/" or one long enough to be hashed', async () => {
    const marker = join(dir.path, 'prepared');
    const ok = join(dir.path, 'prepare.sh');
    writeFileSync(ok, `#!/bin/sh\nread -r line\necho "$SE_EVENT_ID $SE_TRANSITION" >> "${marker}"\nexit 0\n`, { mode: 0o755 });
    await run({ rules: [{ match: {}, action: 'approveAfterHooks' }] }, [{ name: 'drain', type: 'exec', command: [ok], prepare: true }]);
    const slash = sim.addEvent({ EventId: 'maintenance/2026/reboot-1', noticeMs: 600_000, startedMs: 200 });
    const long = sim.addEvent({ EventId: `L${'0123456789'.repeat(20)}`, noticeMs: 600_000, startedMs: 200 });
    await waitFor(() => sim.startRequests.flatMap((r) => r.eventIds).length === 2, 'both approvals after the hook');
    expect(new Set(sim.startRequests.flatMap((r) => r.eventIds))).toEqual(new Set([slash.eventId, long.eventId]));
    // a host failure: first seen Started, so the preparation runs for `started`; it stays Started until the bridge has
    // read it so (a read late on a busy machine would not see a Started window of a moment), then it is over
    const failed = sim.addEvent({ EventStatus: 'Started', startedMs: 600_000 });
    await waitFor(
      () => existsSync(marker) && readFileSync(marker, 'utf8').includes(`${failed.eventId} started`),
      'the failure prepared',
      60_000,
    );
    sim.removeEvent(failed.eventId);
    const ids = [slash.eventId, long.eventId, failed.eventId];
    await waitFor(
      () => ids.every((id) => delivered().some((e) => e.subject === id && e.type === 'azure.scheduledevent.completed')),
      'all three completed',
      60_000,
    );
    await waitFor(() => bridge!.store.outbox.depth().size === 0, 'the outbox to drain');
    const runs = readFileSync(marker, 'utf8').trim().split('\n').sort();
    expect(runs).toEqual([`${failed.eventId} started`, `${long.eventId} scheduled`, `${slash.eventId} scheduled`].sort());
    expect(approvedEvents().map((e) => e.data.approval!.via)).toEqual(['hooks', 'hooks']);
  }, 120_000);
});
