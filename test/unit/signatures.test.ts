/**
 * The approval server's and the relay's request signatures, against the published vectors
 * (Standard Webhooks' specification, Slack's worked example) and the requests an attacker would
 * try: each verdict is the refusal code the server answers (401 MISSING_SIGNATURE,
 * STALE_TIMESTAMP, BAD_SIGNATURE; links 400 TOKEN_MALFORMED, 401 TOKEN_BAD_SIGNATURE, 410
 * TOKEN_EXPIRED). The clock is the vector's, so each bound is tried one second inside and outside.
 */
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { issueToken, peekClaims, readToken, slackSignature, verifySlack, verifyStandardWebhook } from '../../src/approval/signatures.ts';
import { secretKey } from '../../src/lib/standard-webhooks.ts';
import { ROOT } from '../helpers.ts';

const vectors = JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'vectors', 'signing.json'), 'utf8')) as {
  slack_v0: { signing_secret: string; timestamp: string; body: string; expected_signature: string };
  standard_webhooks_v1: { secret: string; webhook_id: string; webhook_timestamp: string; body: string; expected_signature: string };
};

describe('Standard Webhooks (POST /v1/approvals)', () => {
  const v = vectors.standard_webhooks_v1;
  const key = secretKey(v.secret)!;
  const other = secretKey(`whsec_${Buffer.alloc(32, 4).toString('base64')}`)!;
  const at = Number(v.webhook_timestamp);
  const body = Buffer.from(v.body);
  const headers = { 'webhook-id': v.webhook_id, 'webhook-timestamp': v.webhook_timestamp, 'webhook-signature': v.expected_signature };
  const missing = { ok: false, code: 'MISSING_SIGNATURE', message: 'webhook-id, webhook-timestamp and webhook-signature are required' };
  const stale = { ok: false, code: 'STALE_TIMESTAMP', message: 'webhook-timestamp is missing, malformed or more than 5 minutes away' };
  const bad = { ok: false, code: 'BAD_SIGNATURE', message: 'no webhook-signature matches' };

  it.each<[string, Record<string, string | string[] | undefined>, number, readonly Buffer[], unknown]>([
    ['the published vector', headers, at, [key], { ok: true, id: v.webhook_id }],
    ['299 s later', headers, at + 299, [key], { ok: true, id: v.webhook_id }],
    ['300 s later', headers, at + 300, [key], { ok: true, id: v.webhook_id }],
    ['300 s earlier', headers, at - 300, [key], { ok: true, id: v.webhook_id }],
    ['301 s later', headers, at + 301, [key], stale],
    ['301 s earlier', headers, at - 301, [key], stale],
    [
      'its signature among others, space-separated',
      { ...headers, 'webhook-signature': `v1,bogus v2,x ${v.expected_signature}` },
      at,
      [key],
      { ok: true, id: v.webhook_id },
    ],
    ['signed with the second of two secrets (rotation)', headers, at, [other, key], { ok: true, id: v.webhook_id }],
    [
      'headers given twice: the first of each counts',
      { ...headers, 'webhook-id': [v.webhook_id, 'msg_x'] },
      at,
      [key],
      { ok: true, id: v.webhook_id },
    ],
    ['no webhook-id', { ...headers, 'webhook-id': undefined }, at, [key], missing],
    ['an empty webhook-id', { ...headers, 'webhook-id': '' }, at, [key], missing],
    ['no webhook-timestamp', { ...headers, 'webhook-timestamp': undefined }, at, [key], missing],
    ['no webhook-signature', { ...headers, 'webhook-signature': undefined }, at, [key], missing],
    ['a timestamp with a letter after it', { ...headers, 'webhook-timestamp': `${v.webhook_timestamp}x` }, at, [key], stale],
    ['a timestamp with a letter before it', { ...headers, 'webhook-timestamp': `x${v.webhook_timestamp}` }, at, [key], stale],
    ['a timestamp of 13 digits', { ...headers, 'webhook-timestamp': `0${v.webhook_timestamp}00` }, at, [key], stale],
    ['a timestamp in milliseconds', { ...headers, 'webhook-timestamp': `${v.webhook_timestamp}000` }, at * 1000, [key], stale],
    ['a signed timestamp', { ...headers, 'webhook-timestamp': `+${v.webhook_timestamp}` }, at, [key], stale],
    ['another secret', headers, at, [other], bad],
    ['no secret at all', headers, at, [], bad],
    ['another id', { ...headers, 'webhook-id': 'msg_other' }, at, [key], bad],
    ['a short signature', { ...headers, 'webhook-signature': 'v1,abc' }, at, [key], bad],
    [
      'the right signature under another version',
      { ...headers, 'webhook-signature': v.expected_signature.replace('v1,', 'v2,') },
      at,
      [key],
      bad,
    ],
    ['the right signature with no version', { ...headers, 'webhook-signature': v.expected_signature.slice(3) }, at, [key], bad],
    ['the right signature and more', { ...headers, 'webhook-signature': `${v.expected_signature}x` }, at, [key], bad],
  ])('%s', (_what, h, now, keys, verdict) => {
    expect(verifyStandardWebhook(keys, h, body, now)).toEqual(verdict);
  });

  it('another body, however small the change, does not verify', () => {
    expect(verifyStandardWebhook([key], headers, Buffer.from(v.body.replace('2432232314', '2432232315')), at)).toEqual(bad);
    expect(verifyStandardWebhook([key], headers, Buffer.concat([body, Buffer.from(' ')]), at)).toEqual(bad);
  });

  it("without a clock given, the machine's: a request signed now verifies, the published one (2021) is stale", () => {
    const now = String(Math.floor(Date.now() / 1000));
    const sig = `v1,${createHmac('sha256', key).update(`${v.webhook_id}.${now}.${v.body}`).digest('base64')}`;
    expect(verifyStandardWebhook([key], { ...headers, 'webhook-timestamp': now, 'webhook-signature': sig }, body)).toEqual({
      ok: true,
      id: v.webhook_id,
    });
    expect(verifyStandardWebhook([key], headers, body)).toEqual(stale);
  });
});

describe('Slack v0 (POST /v1/slack/interactions)', () => {
  const v = vectors.slack_v0;
  const at = Number(v.timestamp);
  const body = Buffer.from(v.body);
  const headers = { 'x-slack-request-timestamp': v.timestamp, 'x-slack-signature': v.expected_signature };
  const ok = { ok: true, id: `${v.timestamp}:${v.expected_signature}` };
  const missing = { ok: false, code: 'MISSING_SIGNATURE', message: 'X-Slack-Signature and X-Slack-Request-Timestamp are required' };
  const stale = { ok: false, code: 'STALE_TIMESTAMP', message: 'X-Slack-Request-Timestamp is more than 5 minutes away' };
  const bad = { ok: false, code: 'BAD_SIGNATURE', message: 'X-Slack-Signature does not match' };

  it('signs as the published example does', () => {
    expect(slackSignature(v.signing_secret, v.timestamp, v.body)).toBe(v.expected_signature);
  });

  it.each<[string, Record<string, string | string[] | undefined>, number, string, unknown]>([
    ['the published example', headers, at, v.signing_secret, ok],
    ['300 s later', headers, at + 300, v.signing_secret, ok],
    ['300 s earlier', headers, at - 300, v.signing_secret, ok],
    ['301 s later', headers, at + 301, v.signing_secret, stale],
    ['301 s earlier', headers, at - 301, v.signing_secret, stale],
    [
      'headers given twice: the first of each counts',
      { ...headers, 'x-slack-signature': [v.expected_signature, 'v0=00'] },
      at,
      v.signing_secret,
      ok,
    ],
    ['no timestamp', { ...headers, 'x-slack-request-timestamp': undefined }, at, v.signing_secret, missing],
    ['no signature', { ...headers, 'x-slack-signature': '' }, at, v.signing_secret, missing],
    ['a timestamp with a letter after it', { ...headers, 'x-slack-request-timestamp': `${v.timestamp}x` }, at, v.signing_secret, stale],
    ['a timestamp with a letter before it', { ...headers, 'x-slack-request-timestamp': `x${v.timestamp}` }, at, v.signing_secret, stale],
    ['a timestamp of 13 digits', { ...headers, 'x-slack-request-timestamp': `${v.timestamp}000` }, at * 1000, v.signing_secret, stale],
    ['another secret', headers, at, 'another-secret', bad],
    ['a short signature', { ...headers, 'x-slack-signature': 'v0=abc' }, at, v.signing_secret, bad],
    ['the right signature in capitals', { ...headers, 'x-slack-signature': v.expected_signature.toUpperCase() }, at, v.signing_secret, bad],
  ])('%s', (_what, h, now, secret, verdict) => {
    expect(verifySlack(secret, h, body, now)).toEqual(verdict);
  });

  it('another body does not verify; without a clock given, the published example (2018) is stale', () => {
    expect(verifySlack(v.signing_secret, headers, Buffer.from(`${v.body}&x=1`), at)).toEqual(bad);
    expect(verifySlack(v.signing_secret, headers, body)).toEqual(stale);
    const now = String(Math.floor(Date.now() / 1000));
    expect(
      verifySlack(
        v.signing_secret,
        { ...headers, 'x-slack-request-timestamp': now, 'x-slack-signature': slackSignature(v.signing_secret, now, v.body) },
        body,
      ),
    ).toMatchObject({ ok: true });
  });
});

describe('approval link tokens (GET and POST /v1/approve, Slack buttons)', () => {
  const key = Buffer.alloc(32, 9);
  /** signed: a token with `payload` as it is written, signed as the bridge signs one (its link format's HMAC). */
  const signed = (payload: string) => {
    const p = Buffer.from(payload).toString('base64url');
    return `${p}.${createHmac('sha256', key).update('se-bridge approval link v1\n').update(p).digest('base64url')}`;
  };
  const claims = { e: 'E-1', v: 'vm0', x: 2000, n: 'nonce-1' };
  const malformed = { ok: false, code: 'TOKEN_MALFORMED', message: 'the approval token is not well-formed' };
  const forged = { ok: false, code: 'TOKEN_BAD_SIGNATURE', message: 'the approval token is not valid' };

  it('an issued token reads back with its claims and its own nonce until its expiry, not at it', () => {
    const t = issueToken(key, { e: 'E-1', v: 'vm0', x: 2000 });
    const read = readToken(key, t, 1999);
    expect(read).toMatchObject({ ok: true, claims: { e: 'E-1', v: 'vm0', x: 2000 } });
    expect(read.ok && read.nonce).toMatch(/^[A-Za-z0-9_-]{12}$/);
    expect(read.ok && read.nonce).toBe(read.ok && read.claims.n);
    expect(readToken(key, t, 2000)).toEqual({ ok: false, code: 'TOKEN_EXPIRED', message: 'the approval link has expired' });
    expect(readToken(key, t)).toMatchObject({ ok: false, code: 'TOKEN_EXPIRED' });
    // without a clock given, the machine's: a link that expires in ten minutes reads now
    const fresh = issueToken(key, { e: 'E-1', v: 'vm0', x: Math.floor(Date.now() / 1000) + 600 });
    expect(readToken(key, fresh)).toMatchObject({ ok: true, claims: { e: 'E-1' } });
    // the format as the bridge writes it: the claims' JSON, and the link format's HMAC over it
    expect(signed(Buffer.from(t.split('.')[0]!, 'base64url').toString())).toBe(t);
    expect(peekClaims(t)).toMatchObject({ e: 'E-1', v: 'vm0', x: 2000 });
  });

  it.each<[string, string, unknown]>([
    ['claims signed as the bridge signs them', signed(JSON.stringify(claims)), { ok: true, claims, nonce: 'nonce-1' }],
    ['signed with another key', issueToken(Buffer.alloc(32, 8), { e: 'E-1', v: 'vm0', x: 2000 }), forged],
    [
      'claims changed under the signature',
      `${Buffer.from(JSON.stringify({ ...claims, e: 'E-2' })).toString('base64url')}.${signed(JSON.stringify(claims)).split('.')[1]}`,
      forged,
    ],
    ['nonsense', 'nonsense', malformed],
    ['a payload of 9 characters', `${'a'.repeat(9)}.${'b'.repeat(43)}`, malformed],
    ['a payload of 10 characters', `${'a'.repeat(10)}.${'b'.repeat(43)}`, forged],
    ['a payload of 2048 characters', `${'a'.repeat(2048)}.${'b'.repeat(43)}`, forged],
    ['a payload of 2049 characters', `${'a'.repeat(2049)}.${'b'.repeat(43)}`, malformed],
    ['a signature of 42 characters', `${'a'.repeat(20)}.${'b'.repeat(42)}`, malformed],
    ['a signature of 44 characters', `${'a'.repeat(20)}.${'b'.repeat(44)}`, malformed],
    ['a character before the token', `!${signed(JSON.stringify(claims))}`, malformed],
    ['a character after the token', `${signed(JSON.stringify(claims))}!`, malformed],
    ['a payload of other characters', `${'a'.repeat(9)}+.${'b'.repeat(43)}`, malformed],
    ['a signature of other characters', `${'a'.repeat(20)}.${'b'.repeat(42)}+`, malformed],
    ['signed claims that are no JSON', signed('{"e": "E-1", '), malformed],
    ['signed claims without an EventId', signed(JSON.stringify({ ...claims, e: 7 })), malformed],
    ['signed claims without a VM', signed(JSON.stringify({ ...claims, v: null })), malformed],
    ['signed claims with an expiry that is no number', signed(JSON.stringify({ ...claims, x: '2000' })), malformed],
    ['signed claims without a nonce', signed(JSON.stringify({ ...claims, n: undefined })), malformed],
  ])('%s', (_what, token, verdict) => {
    expect(readToken(key, token, 1000)).toEqual(verdict);
  });

  it('each token issued has a nonce of its own', () => {
    const nonces = new Set(Array.from({ length: 50 }, () => peekClaims(issueToken(key, { e: 'E-1', v: 'vm0', x: 2000 }))?.n));
    expect(nonces.size).toBe(50);
  });

  it('peekClaims reads an object of claims unchecked, and nothing else', () => {
    expect(peekClaims(signed(JSON.stringify({ v: 'vm9' })))).toEqual({ v: 'vm9' });
    expect(peekClaims(`${Buffer.from(JSON.stringify({ v: 'vm9', e: 'E' })).toString('base64url')}.${'x'.repeat(43)}`)).toEqual({
      v: 'vm9',
      e: 'E',
    });
    for (const [what, token] of [
      ['not a token', 'nonsense'],
      ['no JSON', signed('{"v":')],
      ['null', signed('null')],
      ['a list', signed('["vm9", "E-1"]')],
      ['a string', signed('"vm9 vm9 vm9"')],
      ['a character before it', `!${signed(JSON.stringify({ v: 'vm9' }))}`],
      ['a character after it', `${signed(JSON.stringify({ v: 'vm9' }))}!`],
      // 8 characters of {"":1} and one more: an object, were it read
      ['a payload of 9 characters', `${Buffer.from('{"":1}').toString('base64url')}A.${'x'.repeat(43)}`],
    ] as const)
      expect(peekClaims(token), what).toBeNull();
  });
});
