import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decide, Rule } from '../../src/approval/policy.ts';
import { issueToken, readToken, slackSignature, verifySlack, verifyStandardWebhook } from '../../src/approval/signatures.ts';
import { toDomainDocument, WireDocument, type ScheduledEvent } from '../../src/imds/wire.ts';
import { secretKey, signatureHeaders } from '../../src/lib/standard-webhooks.ts';
import { ROOT } from '../helpers.ts';

const vectors = JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'vectors', 'signing.json'), 'utf8')) as {
  slack_v0: { signing_secret: string; timestamp: string; body: string; expected_signature: string };
  standard_webhooks_v1: { secret: string; webhook_id: string; webhook_timestamp: string; body: string; expected_signature: string };
};

const NOW = Date.parse('2026-11-22T05:00:00Z');
function ev(over: Record<string, unknown> = {}): ScheduledEvent {
  return toDomainDocument(
    WireDocument.parse({
      DocumentIncarnation: 1,
      Events: [
        {
          EventId: 'E',
          EventType: 'Freeze',
          EventStatus: 'Scheduled',
          Resources: ['vm0'],
          NotBefore: '2026-11-22T05:15:00Z',
          EventSource: 'Platform',
          DurationInSeconds: 5,
          ...over,
        },
      ],
    }),
  ).document.events[0]!;
}
const rules = (...r: unknown[]) => r.map((x) => Rule.parse(x));
const recommended = rules(
  { match: { eventSource: 'User' }, action: 'approve' },
  { match: { eventType: 'Freeze', maxDurationSeconds: 8 }, action: 'approve' },
  { match: {}, action: 'await' },
);

describe('approval policy', () => {
  it.each<[string, unknown[], Record<string, unknown>, string]>([
    ['no rules: a human decides', [], {}, 'await'],
    ['user-initiated reboot: approve', [recommended], { EventType: 'Reboot', EventSource: 'User', DurationInSeconds: -1 }, 'approve'],
    ['Freeze of 5 s: approve', [recommended], {}, 'approve'],
    ['Freeze of 9 s: await', [recommended], { DurationInSeconds: 9 }, 'await'],
    ['Freeze of unknown duration: await', [recommended], { DurationInSeconds: -1 }, 'await'],
    ['platform reboot: await', [recommended], { EventType: 'Reboot', DurationInSeconds: -1 }, 'await'],
    ['Started events are never approved', [rules({ match: {}, action: 'approve' })], { EventStatus: 'Started', NotBefore: '' }, 'never'],
    ['never', [rules({ match: { eventType: 'Redeploy' }, action: 'never' })], { EventType: 'Redeploy' }, 'never'],
    ['list of types', [rules({ match: { eventType: ['Reboot', 'Freeze'] }, action: 'approveAfterHooks' })], {}, 'approveAfterHooks'],
    ['resources pattern matches', [rules({ match: { resources: 'VM*' }, action: 'approve' })], {}, 'approve'],
    ['resources pattern misses', [rules({ match: { resources: 'web-*' }, action: 'approve' })], {}, 'await'],
    [
      'time left within bounds',
      [rules({ match: { minSecondsToNotBefore: 600, maxSecondsToNotBefore: 1200 }, action: 'approve' })],
      {},
      'approve',
    ],
    ['time left too long', [rules({ match: { maxSecondsToNotBefore: 600 }, action: 'approve' })], {}, 'await'],
    ['min duration', [rules({ match: { minDurationSeconds: 6 }, action: 'approve' })], {}, 'await'],
    [
      'affectsThisVm false matches other VMs',
      [rules({ match: { affectsThisVm: false }, action: 'never' })],
      { Resources: ['other'] },
      'never',
    ],
    ['an event of another VM is not approved from here', [rules({ match: {}, action: 'approve' })], { Resources: ['other'] }, 'await'],
    ['a group event is approved by its leader', [rules({ match: {}, action: 'approve' })], { Resources: ['vm0', 'vm1'] }, 'approve'],
    ['a group event is not approved by a follower', [rules({ match: {}, action: 'approve' })], { Resources: ['vm1', 'vm0'] }, 'await'],
    [
      'unless the rule says any VM may',
      [rules({ match: {}, action: 'approve', approveFrom: 'any' })],
      { Resources: ['vm1', 'vm0'] },
      'approve',
    ],
    ['first match wins', [rules({ match: { eventType: 'Freeze' }, action: 'never' }, { match: {}, action: 'approve' })], {}, 'never'],
  ])('%s', (_n, [r], over, action) => {
    expect(decide((r as Rule[] | undefined) ?? [], ev(over), 'vm0', NOW).action).toBe(action);
  });

  it('rejects unknown keys and actions in rules', () => {
    expect(Rule.safeParse({ match: { eventKind: 'x' }, action: 'approve' }).success).toBe(false);
    expect(Rule.safeParse({ match: {}, action: 'yolo' }).success).toBe(false);
  });
});

describe('signatures', () => {
  it('Standard Webhooks: the published vector verifies; tampering, staleness and missing headers do not', () => {
    const v = vectors.standard_webhooks_v1;
    const key = secretKey(v.secret)!;
    const headers = {
      'webhook-id': v.webhook_id,
      'webhook-timestamp': v.webhook_timestamp,
      'webhook-signature': `v1,bogus ${v.expected_signature}`,
    };
    const at = Number(v.webhook_timestamp);
    expect(verifyStandardWebhook([key], headers, Buffer.from(v.body), at)).toEqual({ ok: true, id: v.webhook_id });
    expect(verifyStandardWebhook([key], headers, Buffer.from(`${v.body} `), at)).toMatchObject({ ok: false, code: 'BAD_SIGNATURE' });
    expect(verifyStandardWebhook([key], headers, Buffer.from(v.body), at + 301)).toMatchObject({ ok: false, code: 'STALE_TIMESTAMP' });
    expect(verifyStandardWebhook([key], headers, Buffer.from(v.body), at - 301)).toMatchObject({ ok: false, code: 'STALE_TIMESTAMP' });
    expect(verifyStandardWebhook([key], { ...headers, 'webhook-id': undefined }, Buffer.from(v.body), at)).toMatchObject({
      ok: false,
      code: 'MISSING_SIGNATURE',
    });
    expect(verifyStandardWebhook([key], { ...headers, 'webhook-id': 'msg_other' }, Buffer.from(v.body), at)).toMatchObject({
      ok: false,
      code: 'BAD_SIGNATURE',
    });
  });

  it('Standard Webhooks: what the sink signs, the server verifies', () => {
    const key = secretKey(`whsec_${Buffer.alloc(32, 1).toString('base64')}`)!;
    const h = signatureHeaders([key], 'msg_1', '{"a":1}');
    expect(verifyStandardWebhook([key], h, Buffer.from('{"a":1}')).ok).toBe(true);
  });

  it('Slack v0: the published vector verifies; tampering and staleness do not', () => {
    const v = vectors.slack_v0;
    expect(slackSignature(v.signing_secret, v.timestamp, v.body)).toBe(v.expected_signature);
    const headers = { 'x-slack-request-timestamp': v.timestamp, 'x-slack-signature': v.expected_signature };
    const at = Number(v.timestamp);
    expect(verifySlack(v.signing_secret, headers, Buffer.from(v.body), at).ok).toBe(true);
    expect(verifySlack(v.signing_secret, headers, Buffer.from(`${v.body}&x=1`), at)).toMatchObject({ ok: false, code: 'BAD_SIGNATURE' });
    expect(verifySlack(v.signing_secret, headers, Buffer.from(v.body), at + 600)).toMatchObject({ ok: false, code: 'STALE_TIMESTAMP' });
    expect(verifySlack('another-secret', headers, Buffer.from(v.body), at)).toMatchObject({ ok: false, code: 'BAD_SIGNATURE' });
  });

  it('approval tokens: URL-safe, bound to event and VM, expiring, unforgeable', () => {
    const key = Buffer.alloc(32, 9);
    const t = issueToken(key, { e: 'E-1', v: 'vm0', x: 2000 });
    expect(t).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(readToken(key, t, 1999)).toMatchObject({ ok: true, claims: { e: 'E-1', v: 'vm0', x: 2000 } });
    expect(readToken(key, t, 2000)).toMatchObject({ ok: false, code: 'TOKEN_EXPIRED' });
    expect(readToken(Buffer.alloc(32, 8), t, 1)).toMatchObject({ ok: false, code: 'TOKEN_BAD_SIGNATURE' });
    const [payload, mac] = t.split('.') as [string, string];
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), e: 'E-2' })).toString(
      'base64url',
    );
    expect(readToken(key, `${forged}.${mac}`, 1)).toMatchObject({ ok: false, code: 'TOKEN_BAD_SIGNATURE' });
    expect(readToken(key, 'nonsense', 1)).toMatchObject({ ok: false, code: 'TOKEN_MALFORMED' });
    expect(issueToken(key, { e: 'E-1', v: 'vm0', x: 2000 })).not.toBe(t);
  });
});
