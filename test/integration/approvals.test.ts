/**
 * Approvals through the whole bridge: the approval server on 127.0.0.1 port 0 in front of the
 * approval service, the IMDS simulator receiving the StartRequests, the file sink receiving the
 * `approved` CloudEvents. The API and approval links: every error path, replays, tokens.
 */
import { describe, expect, it } from 'vitest';
import { issueToken } from '../../src/approval/signatures.ts';
import { secretKey, signatureHeaders } from '../../src/lib/standard-webhooks.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { waitFor } from '../helpers.ts';
import {
  type Answer,
  approvedEvents,
  bridge,
  call,
  delivered,
  KEY,
  run,
  scheduled,
  signedApproval,
  sim,
  useApprovalBridge,
} from './approvals-kit.ts';

useApprovalBridge();

describe('POST /v1/approvals', () => {
  it('approves a Scheduled event: StartRequests reaches IMDS, one approved CloudEvent, repeat says already-approved', async () => {
    await run();
    const e = await scheduled();
    const r = await signedApproval(JSON.stringify({ eventId: e.eventId, approver: 'alice', reason: 'maintenance window' }));
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ eventId: e.eventId, status: 'approved' });
    expect(sim.startRequests.map((s) => s.eventIds)).toEqual([[e.eventId]]);
    await waitFor(() => approvedEvents().length === 1, 'the approved CloudEvent');
    expect(approvedEvents()[0]!.data.approval).toMatchObject({ by: 'alice', via: 'api' });
    const again = await signedApproval(JSON.stringify({ eventId: e.eventId, approver: 'bob' }));
    expect(again.status).toBe(200);
    expect(again.json()).toMatchObject({ status: 'already-approved' });
    expect(sim.startRequests).toHaveLength(1);
  });

  it('answers a replayed webhook-id with the first answer and changes nothing', async () => {
    await run();
    const e = await scheduled();
    const body = JSON.stringify({ eventId: e.eventId, approver: 'alice' });
    const first = await signedApproval(body, 'msg_replayed');
    const replay = await signedApproval(body, 'msg_replayed');
    expect(replay.status).toBe(first.status);
    expect(replay.body).toBe(first.body);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(sim.startRequests).toHaveLength(1);
  });

  it('makes one StartRequests and one approved event out of 50 concurrent approvals', async () => {
    await run({}, [], false, 100);
    const e = await scheduled();
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => signedApproval(JSON.stringify({ eventId: e.eventId, approver: `user${i}` }))),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers.filter((a) => a.json().status === 'approved')).toHaveLength(1);
    expect(answers.filter((a) => a.json().status === 'already-approved')).toHaveLength(49);
    expect(sim.startRequests).toHaveLength(1);
    await waitFor(() => approvedEvents().length === 1, 'the approved event');
    // a later event delivered through the same sink: every approval made before it was delivered too
    const later = sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => delivered().some((x) => x.subject === later.eventId), 'a later event delivered');
    expect(approvedEvents()).toHaveLength(1);
  });

  it.each<[string, () => Promise<Answer>, number, string]>([
    [
      'no signature',
      () => call('POST', '/v1/approvals', '{"eventId":"X"}', { 'content-type': 'application/json' }),
      401,
      'MISSING_SIGNATURE',
    ],
    [
      'a wrong signature',
      () => signedApproval('{"eventId":"X"}', 'msg_1', secretKey(`whsec_${Buffer.alloc(32, 4).toString('base64')}`)!),
      401,
      'BAD_SIGNATURE',
    ],
    ['a stale timestamp', () => signedApproval('{"eventId":"X"}', 'msg_2', KEY, Date.now() - 6 * 60_000), 401, 'STALE_TIMESTAMP'],
    ['a body that is not JSON', () => signedApproval('{"eventId":'), 400, 'MALFORMED'],
    ['no eventId', () => signedApproval('{"approver":"a"}'), 400, 'MALFORMED'],
    ['an unknown field', () => signedApproval('{"eventId":"X","force":true}'), 400, 'MALFORMED'],
    ['a JSON array', () => signedApproval('[]'), 400, 'MALFORMED'],
    ['an unknown event', () => signedApproval('{"eventId":"NO-SUCH-EVENT"}'), 404, 'UNKNOWN_EVENT'],
    ['a body over 64 KiB', () => signedApproval(JSON.stringify({ eventId: 'X', reason: 'r'.repeat(70_000) })), 413, 'BODY_TOO_LARGE'],
    [
      'a wrong content type',
      () =>
        call('POST', '/v1/approvals', '{"eventId":"X"}', {
          'content-type': 'text/plain',
          ...signatureHeaders([KEY], 'msg_3', '{"eventId":"X"}'),
        }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ],
    ['a GET', () => call('GET', '/v1/approvals', undefined), 405, 'METHOD_NOT_ALLOWED'],
    ['an unknown route', () => call('POST', '/v1/approvals/../admin', '{}'), 404, 'NOT_FOUND'],
  ])('answers %s with a JSON %i', async (_n, send, status, code) => {
    await run();
    await scheduled();
    const r = await send();
    expect(r.status).toBe(status);
    expect(String(r.headers['content-type'])).toMatch(/^application\/json/);
    expect(r.json().error!.code).toBe(code);
    expect(sim.startRequests).toHaveLength(0);
  });

  it('answers non-UTF-8 bodies with 400', async () => {
    await run();
    const body = Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]);
    const r = await call('POST', '/v1/approvals', body, {
      'content-type': 'application/json',
      ...signatureHeaders([KEY], 'msg_bin', body),
    });
    expect(r.status).toBe(400);
  });

  it('answers 409 for an event already Started, and for one that is gone', async () => {
    await run();
    const started = await scheduled();
    sim.startEvent(started.eventId);
    await waitFor(() => delivered().some((x) => x.type.endsWith('started')), 'started');
    expect((await signedApproval(JSON.stringify({ eventId: started.eventId }))).json().error!.code).toBe('NOT_APPROVABLE');
    const gone = await scheduled();
    sim.removeEvent(gone.eventId);
    await waitFor(() => delivered().some((x) => x.type.endsWith('canceled')), 'canceled');
    const r = await signedApproval(JSON.stringify({ eventId: gone.eventId }));
    expect(r.status).toBe(409);
    expect(sim.startRequests).toHaveLength(0);
  });

  it('answers 502 when IMDS refuses StartRequests, and records nothing', async () => {
    await run();
    const e = await scheduled();
    sim.injectFault({ kind: 'status', status: 400, target: 'start' });
    const r = await signedApproval(JSON.stringify({ eventId: e.eventId }));
    expect(r.status).toBe(502);
    expect(r.json().error!.code).toBe('IMDS_REFUSED');
    expect(bridge!.store.approvals.of(e.eventId)).toBeNull();
    // a transient IMDS failure is retried inside the same approval
    sim.injectFault({ kind: 'status', status: 500, target: 'start', count: 2 });
    expect((await signedApproval(JSON.stringify({ eventId: e.eventId }))).status).toBe(200);
  });

  it('rate-limits a client with 429', async () => {
    await run();
    const answers = await Promise.all(
      Array.from({ length: 60 }, () => call('POST', '/v1/approvals', '{}', { 'content-type': 'application/json' })),
    );
    const limited = answers.filter((a) => a.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    expect(limited[0]!.json().error!.code).toBe('RATE_LIMITED');
    expect(limited[0]!.headers['retry-after']).toBeDefined();
  });
});

describe('approval links', () => {
  const link = (eventId: string, over: Partial<{ v: string; x: number }> = {}) =>
    issueToken(KEY, { e: eventId, v: over.v ?? 'vm0', x: over.x ?? Math.floor(Date.now() / 1000) + 600 });
  const html = { accept: 'text/html' };

  it('shows the event on a strict, plain page, and approves on POST; the token is single-use', async () => {
    await run();
    const e = await scheduled({ EventType: 'Reboot', Resources: ['vm0', 'vm1'] });
    const token = link(e.eventId);
    const page = await call('GET', `/v1/approve?token=${token}`, undefined, html);
    expect(page.status).toBe(200);
    expect(page.body).toContain('vm0 will be rebooted');
    expect(page.body).toContain('vm0 (this VM), vm1');
    expect(page.headers['content-security-policy']).toMatch(/default-src 'none'.*frame-ancestors 'none'/);
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.body).not.toContain('<script');
    const post = await call('POST', '/v1/approve', `token=${token}`, { ...html, 'content-type': 'application/x-www-form-urlencoded' });
    expect(post.status).toBe(200);
    expect(post.body).toContain('Approved');
    expect(sim.events.find((x) => x.eventId === e.eventId)!.status).toBe('Started');
    const reused = await call('POST', '/v1/approve', `token=${token}`, { 'content-type': 'application/x-www-form-urlencoded' });
    expect(reused.status).toBe(410);
    expect(reused.json().error!.code).toBe('TOKEN_USED');
    await waitFor(() => approvedEvents().length === 1, 'approved');
    expect(approvedEvents()[0]!.data.approval).toMatchObject({ via: 'link' });
  });

  it.each<[string, (id: string) => string, number, string]>([
    ['expired', (id) => link(id, { x: Math.floor(Date.now() / 1000) - 1 }), 410, 'TOKEN_EXPIRED'],
    ['tampered', (id) => `${link(id).slice(0, -2)}AA`, 401, 'TOKEN_BAD_SIGNATURE'],
    [
      'forged with another key',
      (id) => issueToken(Buffer.alloc(32, 1), { e: id, v: 'vm0', x: Math.floor(Date.now() / 1000) + 600 }),
      401,
      'TOKEN_BAD_SIGNATURE',
    ],
    ['from another VM', (id) => link(id, { v: 'vm1' }), 403, 'TOKEN_OTHER_VM'],
    ['malformed', () => 'not-a-token', 400, 'TOKEN_MALFORMED'],
    ['for an unknown event', () => link('NO-SUCH-EVENT'), 404, 'UNKNOWN_EVENT'],
  ])('refuses a link that is %s', async (_n, make, status, code) => {
    await run();
    const e = await scheduled();
    const token = make(e.eventId);
    const get = await call('GET', `/v1/approve?token=${encodeURIComponent(token)}`, undefined);
    expect(get.status).toBe(status);
    expect(get.json().error!.code).toBe(code);
    const post = await call('POST', '/v1/approve', `token=${encodeURIComponent(token)}`, {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'text/html',
    });
    expect(post.status).toBe(status);
    expect(post.body).toContain('<!doctype html>');
    expect(sim.startRequests).toHaveLength(0);
  });

  it('puts links, expiring no later than NotBefore, into chat messages for events a human decides', async () => {
    const teams = new HttpPeer();
    await teams.listen();
    teams.answer = () => ({ status: 202 });
    try {
      await run({ rules: [{ match: { eventType: 'Freeze', maxDurationSeconds: 8 }, action: 'approve' }] }, [
        { name: 'teams', type: 'teams', webhookUrl: teams.url },
      ]);
      const reboot = sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
      await waitFor(() => teams.requests.length >= 1, 'the Teams message');
      const card = JSON.parse(teams.requests[0]!.body) as { attachments: { content: { actions: { url: string }[] } }[] };
      const url = new URL(card.attachments[0]!.content.actions[0]!.url);
      expect(url.origin + url.pathname).toBe('https://bridge.example.com/v1/approve');
      const claims = JSON.parse(Buffer.from(url.searchParams.get('token')!.split('.')[0]!, 'base64url').toString()) as {
        e: string;
        v: string;
        x: number;
      };
      expect(claims).toMatchObject({ e: reboot.eventId, v: 'vm0' });
      expect(claims.x).toBeLessThanOrEqual(Math.ceil(sim.events[0]!.notBefore! / 1000));
      // an event the policy approves itself gets no button
      sim.addEvent({ EventType: 'Freeze', DurationInSeconds: 5, noticeMs: 600_000 });
      await waitFor(() => teams.requests.length >= 2, 'the second message');
      const second = JSON.parse(teams.requests.at(-1)!.body) as { attachments: { content: { actions: unknown[] } }[] };
      expect(second.attachments[0]!.content.actions).toEqual([]);
    } finally {
      await teams.close();
    }
  });
});
