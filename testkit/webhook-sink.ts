/** The webhook tests' kit: signing vectors and secrets, events from the fixtures, a fresh peer per test, and a spec-following receiver. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CloudEvent, HTTP } from 'cloudevents';
import { afterEach, beforeEach } from 'vitest';
import { toCloudEvent, type BridgeEvent } from '../src/pipeline/cloudevent.ts';
import { diff } from '../src/pipeline/diff.ts';
import { identityFrom } from '../src/imds/identity.ts';
import { SinkConfig } from '../src/config/schema.ts';
import type { Outcome, Sink } from '../src/sinks/contract.ts';
import { webhookSink, type WebhookConfig } from '../sinks/webhook/index.ts';
import { HttpPeer, type Recorded } from './http-peer.ts';
import { captureLogger, fixtureDocument, ROOT } from './fixtures.ts';

export const vectors = JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'vectors', 'signing.json'), 'utf8')) as {
  standard_webhooks_v1: { secret: string; webhook_id: string; webhook_timestamp: string; body: string; expected_signature: string };
};
export const SECRET_A = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
export const SECRET_B = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

export const [scheduled] = diff(fixtureDocument('live-migration-1.json'), fixtureDocument('live-migration-2.json'));
export const [started] = diff(fixtureDocument('live-migration-2.json'), fixtureDocument('live-migration-3.json'));
const vm = identityFrom(null, { name: 'West NO "1" — ø' });
export const ev = (t = scheduled!): BridgeEvent => toCloudEvent(t, { vm, observedAt: '2022-04-11T22:11:58.000Z' });

export let peer: HttpPeer;
export const sinks: Sink[] = [];

/** usePeer gives each test of the calling file a fresh HTTP peer, and closes it and the sinks made after. */
export function usePeer(): void {
  beforeEach(async () => {
    peer = new HttpPeer();
    await peer.listen();
  });
  afterEach(async () => {
    for (const s of sinks.splice(0)) await s.close();
    await peer.close();
  });
}

export async function makeSink(extra: Record<string, unknown> = {}, url = peer.url) {
  const config = SinkConfig.parse({ name: 'hook', type: 'webhook', url: `${url}/hook`, ...extra }) as WebhookConfig;
  const { logger, lines } = captureLogger();
  const sink = await webhookSink.create(config, { logger, stdout: process.stdout });
  sinks.push(sink);
  return { sink, lines };
}
export const send = (sink: Sink, events: BridgeEvent[], signal = new AbortController().signal): Promise<Outcome[]> =>
  sink.send(events, { signal });

/** A spec-following receiver: percent-decode the ce-* headers, then let the CloudEvents SDK read the message. */
export function receive(r: Recorded): CloudEvent<unknown> | CloudEvent<unknown>[] {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(r.headers)) headers[k] = k.startsWith('ce-') ? decodeURIComponent(String(v)) : String(v);
  return HTTP.toEvent({ headers, body: r.body }) as CloudEvent<unknown> | CloudEvent<unknown>[];
}
