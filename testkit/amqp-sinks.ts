/**
 * The eventhubs and servicebus sinks' tests over real AMQP 1.0: the official @azure/event-hubs and
 * @azure/service-bus clients connect over TCP to the rhea-based peer (src/simulator/servicebus/),
 * which records what arrives on the wire and injects faults. One peer per test.
 */
import { pino } from 'pino';
import { afterEach, beforeEach } from 'vitest';
import { SinkConfig } from '../src/config/schema.ts';
import type { BridgeEvent } from '../src/pipeline/cloudevent.ts';
import type { Outcome, Sink, SinkContext } from '../src/sinks/contract.ts';
import type { ReceivedMessage } from '../src/simulator/servicebus/amqp-messages.ts';
import { AmqpPeer } from '../src/simulator/servicebus/amqp-peer.ts';

/** amqpPeerPerTest starts a peer before each test and closes it, and every sink made, after. */
export function amqpPeerPerTest() {
  const state: { peer: AmqpPeer | null; sinks: Sink[] } = { peer: null, sinks: [] };
  beforeEach(async () => {
    state.peer = new AmqpPeer();
    await state.peer.listen();
  });
  afterEach(async () => {
    for (const s of state.sinks.splice(0)) await s.close().catch(() => undefined);
    await state.peer?.close();
  });
  const peer = (): AmqpPeer => {
    if (state.peer === null) throw new Error('no AMQP peer: called outside a test');
    return state.peer;
  };
  /** make builds a sink of this module from raw configuration (a 3 s attempt), closed after the test. */
  async function make<C>(module: { create(c: C, ctx: SinkContext): Sink | Promise<Sink> }, raw: Record<string, unknown>): Promise<Sink> {
    const sink = await module.create(SinkConfig.parse({ delivery: { timeoutMs: 3000 }, ...raw }) as C, {
      logger: pino({ level: 'silent' }),
      stdout: process.stdout,
    });
    state.sinks.push(sink);
    return sink;
  }
  return { peer, make };
}

export const send = (sink: Sink, evs: BridgeEvent[]): Promise<Outcome[]> => sink.send(evs, { signal: new AbortController().signal });
export const bodyOf = (m: ReceivedMessage) => Buffer.from((m.message.body as { content: Buffer }).content).toString('utf8');
export const delivered = (n: number) => Array.from({ length: n }, () => ({ status: 'delivered' }));
