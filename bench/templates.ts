/**
 * Benchmark phase T: payload templates. Events per second through the webhook sink to a local
 * peer, one request per event, in the CloudEvents binary mode and with the PagerDuty recipe
 * (examples/templates/pagerduty.yaml): what rendering a template costs on the way out.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfigText } from '../src/config/load.ts';
import { identityFrom } from '../src/imds/identity.ts';
import type { BridgeEvent } from '../src/pipeline/cloudevent.ts';
import { webhookSink, type WebhookConfig } from '../sinks/webhook/index.ts';
import { scenarioTimeline } from '../src/simulator/timeline.ts';
import { HttpPeer } from '../testkit/http-peer.ts';
import { quick, ROOT, silent } from './common.ts';

/** The PagerDuty recipe's sink, sending to `url`. */
export function recipeSink(url: string): Record<string, unknown> {
  const text = readFileSync(join(ROOT, 'examples', 'templates', 'pagerduty.yaml'), 'utf8').replace(
    'https://events.pagerduty.com/v2/enqueue',
    url,
  );
  const config = parseConfigText(text, 'pagerduty.yaml', { PAGERDUTY_ROUTING_KEY: 'R0123456789abcdefABCDEF012345678' });
  return config.sinks[0] as unknown as Record<string, unknown>;
}

async function rate(config: WebhookConfig, events: readonly BridgeEvent[]): Promise<number> {
  const sink = await webhookSink.create(config, { logger: silent, stdout: process.stdout });
  try {
    const send = (from: number, to: number) => sink.send(events.slice(from, to), { signal: AbortSignal.timeout(30_000) });
    await send(0, 50); // warm: connections, the template's first evaluation
    const t0 = performance.now();
    for (let i = 0; i < events.length; i += 10) {
      const outcomes = await send(i, i + 10);
      if (outcomes.some((o) => o.status !== 'delivered')) throw new Error(`not delivered: ${JSON.stringify(outcomes[0])}`);
    }
    return Math.round(events.length / ((performance.now() - t0) / 1000));
  } finally {
    await sink.close();
  }
}

export async function phaseTemplates() {
  const hook = new HttpPeer();
  await hook.listen();
  hook.answer = () => ({ status: 202, body: '{"status":"success"}' });
  const vm = identityFrom(null, { name: 'bench-vm' });
  const one = scenarioTimeline('degraded-hardware', vm);
  const events = Array.from({ length: quick ? 500 : 3000 }, (_, i) => one[i % one.length]!);
  try {
    const plain = await rate(webhookSink.configSchema.parse({ name: 'plain', type: 'webhook', url: `${hook.url}/hook` }), events);
    const templated = await rate(webhookSink.configSchema.parse(recipeSink(`${hook.url}/v2/enqueue`)), events);
    return { events: events.length, plainPerSecond: plain, templatePerSecond: templated };
  } finally {
    await hook.close();
  }
}
