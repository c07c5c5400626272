/**
 * The servicebus sink over real AMQP 1.0: the official @azure/service-bus client connects over TCP
 * to the project's AMQP peer (testkit/amqp-sinks.ts), which records what arrives on the wire and
 * injects faults.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { amqpPeerPerTest, bodyOf, delivered, send } from '../../testkit/amqp-sinks.ts';
import { bridgeEvents as events } from '../../test/helpers.ts';
import { serviceBusSink, type ServiceBusConfig } from './index.ts';

const amqp = amqpPeerPerTest();
let peer: AmqpPeer;
beforeEach(() => {
  peer = amqp.peer();
});
const serviceBus = (extra: Record<string, unknown> = {}) =>
  amqp.make<ServiceBusConfig>(serviceBusSink, {
    name: 'sb',
    type: 'servicebus',
    connectionString: amqp.peer().connectionString(),
    entity: 'maintenance-queue',
    ...extra,
  });

describe('servicebus sink', () => {
  it('binary mode on the wire: body bytes, properties, message id = CloudEvent id, subject = type', async () => {
    const sink = await serviceBus();
    const [e] = events(1);
    expect(await send(sink, [e!])).toEqual(delivered(1));
    const m = peer.messages[0]!;
    expect(m.address).toBe('maintenance-queue');
    expect(JSON.parse(bodyOf(m))).toEqual(e!.data);
    expect(m.message).toMatchObject({ message_id: e!.id, subject: 'azure.scheduledevent.scheduled', content_type: 'application/json' });
    expect(m.message.application_properties).toMatchObject({
      cloudEvents_id: e!.id,
      cloudEvents_source: e!.source,
      cloudEvents_incarnation: 2,
    });
    expect(m.message.group_id).toBeUndefined();
  });

  it('sets the session id and time to live when configured', async () => {
    const sink = await serviceBus({ sessionId: 'eventId', timeToLiveMs: 3_600_000 });
    await send(sink, events(2));
    expect(peer.messages.map((m) => m.message.group_id).sort()).toEqual(['EV-0', 'EV-1']);
    expect(
      peer.messages.every(
        (m) => (m.message as { ttl?: number }).ttl === 3_600_000 || (m.message.header as { ttl?: number } | undefined)?.ttl === 3_600_000,
      ),
    ).toBe(true);
    peer.messages.length = 0;
    const byVm = await serviceBus({ sessionId: 'vmName' });
    await send(byVm, events(2));
    expect(peer.messages.map((m) => m.message.group_id)).toEqual(['vm0', 'vm0']);
  });

  it('structured mode', async () => {
    const sink = await serviceBus({ mode: 'structured' });
    const [e] = events(1);
    await send(sink, [e!]);
    expect(peer.messages[0]!.message.content_type).toBe('application/cloudevents+json; charset=utf-8');
    expect(JSON.parse(bodyOf(peer.messages[0]!)).id).toBe(e!.id);
  });

  it('classifies faults: busy is retried, too large and unknown entities are rejected', async () => {
    const sink = await serviceBus();
    peer.inject({ kind: 'reject', condition: 'com.microsoft:server-busy', count: 1 });
    expect((await send(sink, events(1)))[0]).toMatchObject({ status: 'retry', reason: expect.stringMatching(/^ServiceBusy/) });
    peer.inject({ kind: 'reject', condition: 'amqp:link:message-size-exceeded', count: 1 });
    expect((await send(sink, events(1)))[0]).toMatchObject({ status: 'reject', reason: expect.stringMatching(/^MessageSizeExceeded/) });
    expect(await send(sink, events(1))).toEqual(delivered(1));
  });

  it('rejects when the queue or topic does not exist', async () => {
    peer.missingEntities.add('no-such-queue');
    const sink = await serviceBus({ entity: 'no-such-queue' });
    expect((await send(sink, events(1)))[0]).toMatchObject({ status: 'reject', reason: expect.stringMatching(/^MessagingEntityNotFound/) });
  });

  it('retries after a dropped connection', async () => {
    const sink = await serviceBus();
    expect(await send(sink, events(1))).toEqual(delivered(1));
    peer.inject({ kind: 'drop', count: 1 });
    expect((await send(sink, events(1)))[0]!.status).toBe('retry');
    expect(await send(sink, events(1))).toEqual(delivered(1));
  });
});
