/**
 * With every secret configured, run every sink and its error paths, the approval server's
 * refusals, and read back every log line, metric and file the bridge writes: no secret
 * appears anywhere.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Bridge } from '../../src/daemon/bridge.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { createLogger, scrub, secretForms } from '../../src/lib/log.ts';
import { secretsOf } from '../../src/config/schema.ts';
import { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { validateConfig } from '../../src/config/load.ts';
import { startBridge } from '../../testkit/harness.ts';
import { tempDir, waitFor } from '../helpers.ts';

const S = {
  webhookSecret: `whsec_${Buffer.from('webhook-signing-key-0123456789ab').toString('base64')}`,
  bearer: 'bearer-token-Zq8s7xv2',
  sasKey: 'c2FzLWtleS12YWx1ZS1kby1ub3QtbG9n',
  slackBot: 'xoxb-1111-2222-SECRETslackbot',
  slackHookPath: 'T0000/B0000/SecretHookPart123',
  teamsSig: 'teamsSIGsecret987654321',
  approvalSecret: `whsec_${Buffer.from('approval-signing-key-0123456789').toString('base64')}`,
  slackSigning: 'slack-signing-secret-abcdef',
  basicPassword: 'basic-password-5f3c',
  apiKey: 'api-key-header-77d1e0',
  gridKey: 'eventgrid-access-key-3e9a51',
  gridNamespaceKey: 'eventgrid-namespace-key-8c2d07',
};

let sim: ImdsSimulator;
let http: HttpPeer;
let amqp: AmqpPeer;
let dir: ReturnType<typeof tempDir>;
let bridge: Bridge;
let output = '';

beforeAll(async () => {
  sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
  // the managed identity of the webhook below gets its tokens from this simulator
  process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = await sim.listen(0);
  http = new HttpPeer();
  await http.listen();
  http.answer = (r) =>
    r.url.startsWith('/api/')
      ? { status: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":false,"error":"invalid_auth"}' }
      : {
          status: r.url.includes('teams') ? 401 : 500,
          body: `echo ${r.url} ${String(r.headers.authorization)} ${String(r.headers.authorization).replace(/^Bearer /, 'token=')} ${String(r.headers['x-api-key'])} ${String(r.headers['aeg-sas-key'])}`,
        };
  amqp = new AmqpPeer();
  await amqp.listen();
  amqp.cbsStatusCode = 401;
  dir = tempDir();
  const cs = (entity?: string) => amqp.connectionString(entity).replace('c2VjcmV0LWtleS1mb3ItdGVzdHM=', S.sasKey);
  const fast = { initialBackoffMs: 20, maxBackoffMs: 50, maxAttempts: 2, timeoutMs: 3000 };
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      output += chunk.toString();
      cb();
    },
  });
  const h = await startBridge({
    sim,
    dir: dir.path,
    sinks: [
      {
        name: 'hook',
        type: 'webhook',
        url: `${http.url}/hook?code=${S.teamsSig}`,
        secret: S.webhookSecret,
        auth: { bearer: S.bearer },
        delivery: fast,
      },
      {
        name: 'basic',
        type: 'webhook',
        url: `${http.url}/basic`,
        auth: { basic: { username: 'u', password: S.basicPassword } },
        headers: { 'X-Api-Key': S.apiKey },
        delivery: fast,
      },
      { name: 'dead', type: 'webhook', url: 'http://127.0.0.1:1/x', secret: S.webhookSecret, delivery: fast },
      { name: 'hub', type: 'eventhubs', connectionString: cs('maintenance'), delivery: fast },
      { name: 'queue', type: 'servicebus', connectionString: cs(), entity: 'q', delivery: fast },
      { name: 'slackhook', type: 'slack', webhookUrl: `${http.url}/services/${S.slackHookPath}`, delivery: fast },
      { name: 'slackbot', type: 'slack', botToken: S.slackBot, channel: '#c', apiUrl: `${http.url}/api/`, delivery: fast },
      { name: 'teams', type: 'teams', webhookUrl: `${http.url}/teams/workflows/x/invoke?api-version=1&sig=${S.teamsSig}`, delivery: fast },
      { name: 'grid', type: 'eventgrid', endpoint: `${http.url}/grid`, accessKey: S.gridKey, delivery: fast },
      {
        name: 'gridns',
        type: 'eventgrid',
        endpoint: `${http.url}/gridns`,
        namespaceTopic: 'maintenance',
        accessKey: S.gridNamespaceKey,
        delivery: fast,
      },
      {
        name: 'entra',
        type: 'webhook',
        url: `${http.url}/entra`,
        auth: { kind: 'managedIdentity', scope: 'api://se-bridge-secrets/.default' },
        delivery: fast,
      },
      { name: 'file', type: 'file', path: join(dir.path, 'events.jsonl') },
    ],
    config: {
      approval: { secret: S.approvalSecret, slack: { signingSecret: S.slackSigning } },
      server: { listen: '127.0.0.1:0' },
      observability: { listen: '127.0.0.1:0' },
      log: { level: 'debug' },
    },
    logger: (config) => createLogger({ level: 'debug', destination: sink, secrets: secretsOf(config) }),
  });
  bridge = h.bridge;
});
afterAll(async () => {
  await bridge.stop(1000);
  await Promise.all([amqp.close(), http.close(), sim.close()]);
  delete process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST;
  dir.cleanup();
});

describe('secrets', () => {
  it('never appear in logs, metrics or files, whatever fails', async () => {
    sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
    await waitFor(() => bridge.store.outbox.deadLetters().length >= 10, 'every failing sink to dead-letter', 30_000);
    // the Entra ID tokens the webhook sent, which the failing peer echoed back
    const tokens = http.requests.filter((r) => r.url === '/entra').map((r) => String(r.headers.authorization).replace(/^Bearer /, ''));
    expect(tokens.length).toBeGreaterThanOrEqual(2);
    // the approval server refusing forged requests
    await request(`${bridge.approvalServerUrl}/v1/approvals`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': 'x',
        'webhook-timestamp': '1',
        'webhook-signature': `v1,${'A'.repeat(44)}`,
      },
      body: '{}',
    }).then((r) => r.body.dump());
    const metrics = await (await fetch(`${bridge.observabilityUrl}/metrics`)).text();
    // every file the bridge wrote (its control socket is no file to read)
    const files = readdirSync(dir.path, { withFileTypes: true })
      .filter((f) => f.isFile())
      .map((f) => readFileSync(join(dir.path, f.name)).toString('latin1'));
    const everything = [output, metrics, ...files, ...bridge.store.outbox.deadLetters().map((d) => d.lastError)].join('\n');
    expect(output).toContain('DELIVERY_');
    for (const [name, value] of Object.entries(S)) {
      expect(everything.includes(value), `${name} leaked`).toBe(false);
    }
    expect(everything).not.toMatch(/SharedAccessKey=(?!\[redacted\])/);
    for (const token of new Set(tokens)) expect(everything.includes(token), 'an Entra ID token leaked').toBe(false);
    // the sink cut the tokens it sent out of the echo before shortening it
    expect(everything).toContain('echo /entra Bearer [redacted] token=[redacted]');
  });

  it('takes every value the schema marks as a secret, and nothing else', () => {
    const config = validateConfig(
      {
        sinks: [
          {
            name: 'w',
            type: 'webhook',
            url: 'https://example.com/ok?code=querysecret1',
            headers: { 'X-Api-Key': 'header-secret-1', 'X-Team': 'platform-team' },
            auth: { bearer: 'bearer-secret-1' },
          },
          { name: 'e', type: 'exec', command: ['/bin/true'], env: { MODE: 'graceful-drain' } },
        ],
        approval: { secret: S.approvalSecret },
      },
      't',
      {},
    );
    const secrets = secretsOf(config);
    expect(secrets).toEqual(
      expect.arrayContaining(['header-secret-1', 'platform-team', 'bearer-secret-1', 'querysecret1', S.approvalSecret]),
    );
    expect(secrets).not.toContain('graceful-drain');
    expect(secrets).not.toContain('https://example.com/ok?code=querysecret1');
  });

  it('scrubs secret shapes from any text', () => {
    const line = scrub(
      `Endpoint=sb://x/;SharedAccessKeyName=k;SharedAccessKey=abc123==;EntityPath=h https://hooks.slack.com/services/T/B/XYZ xoxb-1-2-abc whsec_QUJD https://x.logic.azure.com/w?api-version=1&sig=zzz Bearer abc.def v0=${'a'.repeat(64)}` +
        ` SharedAccessKey nskey123 aeg-sas-key: topickey456 eyJ0eXAiOiJKV1QifQ.eyJhdWQiOiJ4In0.c2ln`,
    );
    expect(line).toBe(
      'Endpoint=sb://x/;SharedAccessKeyName=k;SharedAccessKey=[redacted];EntityPath=h https://hooks.slack.com/services/[redacted] xox?-[redacted] whsec_[redacted] https://x.logic.azure.com/w?api-version=1&sig=[redacted] Bearer [redacted] v0=[redacted]' +
        ' SharedAccessKey [redacted] aeg-sas-key: [redacted] [redacted-jwt]',
    );
  });

  it('scrubs a secret echoed percent-encoded, or inside base64 at any alignment (a Basic authorization header)', () => {
    const password = 'hunter2/long+password=ok';
    for (const user of ['a', 'ab', 'abc']) {
      const header = Buffer.from(`${user}:${password}`).toString('base64');
      const clean = scrub(`the server saw ${header} and ${Buffer.from(`${user}:${password}`).toString('base64url')}`, [password]);
      expect(clean, user).toContain('[redacted]');
      // no run of 8 characters of the password's base64 survives
      for (let k = 0; k < 3; k++) {
        const forms = Buffer.concat([Buffer.alloc(k), Buffer.from(password)])
          .toString('base64')
          .slice(4, 12);
        expect(clean.includes(forms), `${user} at alignment ${k}`).toBe(false);
      }
    }
    expect(scrub(`token=${encodeURIComponent(password)}&x=1`, [password])).toBe('token=[redacted]&x=1');
    expect(secretForms('short')).toEqual([]);
  });
});
