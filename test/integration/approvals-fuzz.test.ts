/**
 * Generated hostile requests against the approval server (seeded, so a failure replays):
 * missing, malformed, wrong and stale signatures, replays of ids used for other bodies,
 * oversized, truncated and non-UTF-8 bodies, wrong content types and methods, path tricks,
 * unknown and vanished events, forged and other-VM tokens. Not one may reach IMDS, every
 * answer must be a JSON 4xx, and a valid approval must still work afterwards.
 */
import { startBridge } from '../../testkit/harness.ts';
import { prng } from '../../testkit/prng.ts';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueToken } from '../../src/approval/signatures.ts';
import { Bridge } from '../../src/daemon/bridge.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { secretKey, signatureHeaders } from '../../src/lib/standard-webhooks.ts';
import { tempDir, waitFor } from '../helpers.ts';

/** 600 in the regular suite; the reliability suite (npm run test:reliability) sends 10,000. */
const COUNT = Number(process.env.SE_BRIDGE_FUZZ_COUNT ?? 600);
const SECRET = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
const KEY = secretKey(SECRET)!;
const OTHER = secretKey(`whsec_${Buffer.alloc(32, 4).toString('base64')}`)!;

let sim: ImdsSimulator;
let bridge: Bridge;
let dir: ReturnType<typeof tempDir>;
let scheduledId = '';
let goneId = '';

beforeAll(async () => {
  sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
  await sim.listen(0);
  dir = tempDir();
  bridge = (
    await startBridge({
      sim,
      dir: dir.path,
      config: {
        approval: { secret: SECRET, slack: { signingSecret: 'slack-secret' } },
        server: { listen: '127.0.0.1:0', rateLimit: { perSecond: 10_000, burst: 10_000 } },
      },
    })
  ).bridge;
  scheduledId = sim.addEvent({ noticeMs: 600_000 }).eventId;
  goneId = sim.addEvent({ noticeMs: 600_000 }).eventId;
  await waitFor(() => bridge.store.journal.knowsEvent(goneId), 'the events');
  sim.removeEvent(goneId);
  await waitFor(() => bridge.store.journal.all().some((j) => j.id === `${goneId}/canceled`), 'the cancellation');
});
afterAll(async () => {
  await bridge.stop(1000);
  await sim.close();
  dir.cleanup();
});

describe('approval server under generated hostile requests', () => {
  it(`answers ${COUNT} of them with JSON 4xx, lets none reach IMDS, and still approves afterwards`, async () => {
    const rnd = prng(20261122);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const nowS = () => Math.floor(Date.now() / 1000);
    const ids = () =>
      pick([scheduledId, goneId, 'NO-SUCH-EVENT', '', 'x'.repeat(300), '../../etc/passwd', scheduledId.toLowerCase() + '0']);
    const statuses = new Map<number, number>();
    for (let i = 0; i < COUNT; i++) {
      const kind = Math.floor(rnd() * 12);
      const eventId = ids();
      let method = 'POST';
      let path = '/v1/approvals';
      let headers: Record<string, string> = { 'content-type': 'application/json' };
      let body: string | Buffer = JSON.stringify({ eventId, approver: 'fuzz' });
      switch (kind) {
        case 0: // no signature
          break;
        case 1: // signed with another key
          headers = { ...headers, ...signatureHeaders([OTHER], `msg_${i}`, body) };
          break;
        case 2: // stale or future timestamp
          headers = {
            ...headers,
            ...signatureHeaders([KEY], `msg_${i}`, body, Date.now() + (rnd() < 0.5 ? -1 : 1) * (6 + rnd() * 1000) * 60_000),
          };
          break;
        case 3: // a valid signature over another body
          headers = { ...headers, ...signatureHeaders([KEY], `msg_${i}`, '{"eventId":"other"}') };
          break;
        case 4: // valid signature, broken JSON or shapes, for unknown or gone events
          body = pick([
            '{',
            '[]',
            'null',
            '"x"',
            '{"eventId":7}',
            `{"eventId":"${goneId}"}`,
            '{"eventId":"NO-SUCH-EVENT"}',
            '{"eventId":"a","extra":1}',
            '{"approver":"x"}',
          ]);
          headers = { ...headers, ...signatureHeaders([KEY], `msg_${i}`, body) };
          break;
        case 5: // non-UTF-8 and binary garbage, signed
          body = Buffer.from(Array.from({ length: 1 + Math.floor(rnd() * 200) }, () => Math.floor(rnd() * 256)));
          headers = { ...headers, ...signatureHeaders([KEY], `msg_${i}`, body) };
          break;
        case 6: // oversized
          body = 'x'.repeat(64 * 1024 + 1 + Math.floor(rnd() * 100_000));
          break;
        case 7: // wrong content type, signed
          headers = {
            'content-type': pick(['text/plain', 'application/xml', 'multipart/form-data']),
            ...signatureHeaders([KEY], `msg_${i}`, body),
          };
          break;
        case 8: // wrong methods and path tricks
          method = pick(['GET', 'PUT', 'DELETE', 'PATCH', 'POST']);
          path = pick([
            '/v1/approvals/',
            '/v1/approvals/..%2fadmin',
            '/v1/../v1/approvals',
            '/V1/APPROVALS',
            '/v1/approvals%00',
            '/',
            '/v2/approvals',
            '/v1/approve/../approvals',
          ]);
          break;
        case 9: // forged, expired, malformed and other-VM tokens on the page
          method = pick(['GET', 'POST']);
          path = '/v1/approve';
          headers = { 'content-type': 'application/x-www-form-urlencoded' };
          {
            const token = pick([
              issueToken(OTHER, { e: scheduledId, v: 'vm0', x: nowS() + 600 }),
              issueToken(KEY, { e: scheduledId, v: 'vm0', x: nowS() - 1 }),
              issueToken(KEY, { e: scheduledId, v: 'vm1', x: nowS() + 600 }),
              issueToken(KEY, { e: goneId, v: 'vm0', x: nowS() + 600 }),
              issueToken(KEY, { e: 'NO-SUCH-EVENT', v: 'vm0', x: nowS() + 600 }),
              'garbage',
              '',
              `${'a'.repeat(20)}.${'b'.repeat(43)}`,
            ]);
            if (method === 'GET') path = `/v1/approve?token=${encodeURIComponent(token)}`;
            body = method === 'GET' ? '' : `token=${encodeURIComponent(token)}`;
          }
          break;
        case 10: // Slack with bad signatures
          path = '/v1/slack/interactions';
          headers = {
            'content-type': 'application/x-www-form-urlencoded',
            'x-slack-request-timestamp': String(nowS()),
            'x-slack-signature': `v0=${'0'.repeat(64)}`,
          };
          body = `payload=${encodeURIComponent(JSON.stringify({ type: 'block_actions', actions: [{ action_id: 'se_bridge_approve', value: 'x' }] }))}`;
          break;
        default: // a signed request reusing an id already used for another body
          headers = { ...headers, ...signatureHeaders([KEY], 'msg_reused', '{"eventId":"NO-SUCH-EVENT"}') };
          body = '{"eventId":"NO-SUCH-EVENT"}';
      }
      const res = await request(`${bridge.approvalServerUrl}${path}`, {
        method: method as 'POST',
        headers,
        body: method === 'GET' ? undefined : body,
      });
      const text = await res.body.text();
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      expect(res.statusCode, `request ${i} (kind ${kind}) ${method} ${path}`).toBeGreaterThanOrEqual(400);
      expect(res.statusCode).toBeLessThan(500);
      expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
      expect((JSON.parse(text) as { error: { code: string } }).error.code).toMatch(/^[A-Z_]+$/);
    }
    expect(sim.startRequests).toEqual([]);
    expect([...statuses.keys()].sort()).toEqual(expect.arrayContaining([400, 401, 404, 405, 409, 413, 415]));
    // the server is still up and a valid approval goes through
    const body = JSON.stringify({ eventId: scheduledId, approver: 'after-fuzz' });
    const ok = await request(`${bridge.approvalServerUrl}/v1/approvals`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signatureHeaders([KEY], 'msg_final', body) },
      body,
    });
    expect(ok.statusCode).toBe(200);
    expect(sim.startRequests.map((s) => s.eventIds)).toEqual([[scheduledId]]);
  });
});
