/**
 * The eventhubs sink over real AMQP 1.0: the official @azure/event-hubs client connects over TCP
 * to the project's AMQP peer (testkit/amqp-sinks.ts), which records what arrives on the wire and
 * injects faults.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { BATCH_FORMAT } from '../../src/simulator/servicebus/amqp-messages.ts';
import { amqpPeerPerTest, bodyOf, delivered, send } from '../../testkit/amqp-sinks.ts';
import { bridgeEvents as events } from '../../test/helpers.ts';
import { eventHubsSink, type EventHubsConfig } from './index.ts';

const amqp = amqpPeerPerTest();
let peer: AmqpPeer;
beforeEach(() => {
  peer = amqp.peer();
});
const eventHubs = (extra: Record<string, unknown> = {}) =>
  amqp.make<EventHubsConfig>(eventHubsSink, {
    name: 'eh',
    type: 'eventhubs',
    connectionString: amqp.peer().connectionString('maintenance'),
    ...extra,
  });

describe('eventhubs sink', () => {
  it('binary mode on the wire: JSON data as body bytes, cloudEvents_* properties, message id, partition key = EventId', async () => {
    const sink = await eventHubs();
    const [e] = events(1);
    expect(await send(sink, [e!])).toEqual(delivered(1));
    expect(peer.tokens[0]).toMatchObject({ audience: expect.stringMatching(/\/maintenance$/), type: 'servicebus.windows.net:sastoken' });
    const m = peer.messages[0]!;
    expect(m.address).toBe('maintenance');
    expect(m.format).toBe(BATCH_FORMAT);
    expect((m.message.body as { typecode: number }).typecode).toBe(0x75);
    expect(JSON.parse(bodyOf(m))).toEqual(e!.data);
    expect(m.message.content_type).toBe('application/json');
    expect(m.message.message_id).toBe(e!.id);
    expect(m.message.application_properties).toEqual({
      cloudEvents_id: e!.id,
      cloudEvents_type: 'azure.scheduledevent.scheduled',
      cloudEvents_source: e!.source,
      cloudEvents_specversion: '1.0',
      cloudEvents_subject: 'EV-0',
      cloudEvents_time: '2022-04-11T22:11:58.000Z',
      cloudEvents_incarnation: 2,
    });
    expect(m.message.message_annotations).toMatchObject({ 'x-opt-partition-key': 'EV-0' });
    expect(m.envelopeAnnotations).toMatchObject({ 'x-opt-partition-key': 'EV-0' });
  });

  it('structured mode: the whole event as application/cloudevents+json', async () => {
    const sink = await eventHubs({ mode: 'structured' });
    const [e] = events(1);
    await send(sink, [e!]);
    const m = peer.messages[0]!;
    expect(m.message.content_type).toBe('application/cloudevents+json; charset=utf-8');
    expect(JSON.parse(bodyOf(m))).toEqual(JSON.parse(JSON.stringify(e)));
    expect(m.message.application_properties ?? {}).toEqual({});
  });

  it('batches by partition key: one batch per EventId, or one for the VM', async () => {
    const byEvent = await eventHubs();
    expect(await send(byEvent, events(3))).toEqual(delivered(3));
    expect(new Set(peer.messages.map((m) => m.envelopeAnnotations?.['x-opt-partition-key']))).toEqual(new Set(['EV-0', 'EV-1', 'EV-2']));
    peer.messages.length = 0;
    const byVm = await eventHubs({ partitionKey: 'vmName' });
    expect(await send(byVm, events(3))).toEqual(delivered(3));
    expect(peer.messages.map((m) => m.message.message_annotations?.['x-opt-partition-key'])).toEqual(['vm0', 'vm0', 'vm0']);
    peer.messages.length = 0;
    const none = await eventHubs({ partitionKey: 'none' });
    await send(none, events(2));
    expect(peer.messages.every((m) => m.message.message_annotations?.['x-opt-partition-key'] === undefined)).toBe(true);
  });

  it('splits a batch when it is full, and rejects an event larger than the hub accepts', async () => {
    peer.maxMessageSize = 4096;
    const sink = await eventHubs({ partitionKey: 'vmName' });
    const outcomes = await send(sink, events(6));
    expect(outcomes).toEqual(delivered(6));
    expect(peer.messages).toHaveLength(6);
    peer.maxMessageSize = 600;
    const small = await eventHubs();
    const [o] = await send(small, events(1));
    expect(o).toMatchObject({ status: 'reject', reason: expect.stringMatching(/^MessageSizeExceeded: .* at most 600/) });
  });

  it('retries after the hub rejects a delivery as busy, then delivers', async () => {
    const sink = await eventHubs();
    peer.inject({ kind: 'reject', condition: 'com.microsoft:server-busy', description: 'busy', count: 1 });
    const [first] = await send(sink, events(1));
    expect(first).toMatchObject({ status: 'retry', reason: expect.stringMatching(/^ServerBusyError/) });
    expect(await send(sink, events(1))).toEqual(delivered(1));
  });

  it('retries after the connection drops, then reconnects and delivers', async () => {
    const sink = await eventHubs();
    expect(await send(sink, events(1))).toEqual(delivered(1));
    peer.inject({ kind: 'drop', count: 1 });
    const [o] = await send(sink, events(1));
    expect(o!.status).toBe('retry');
    expect(await send(sink, events(1))).toEqual(delivered(1));
    expect(peer.connections).toBeGreaterThanOrEqual(2);
  });

  it('rejects when the hub does not exist', async () => {
    peer.missingEntities.add('maintenance');
    const sink = await eventHubs();
    const [o] = await send(sink, events(1));
    expect(o).toMatchObject({ status: 'reject', reason: expect.stringMatching(/^MessagingEntityNotFoundError/) });
  });

  it('retries when the hub detaches the link in the middle of a send', async () => {
    const sink = await eventHubs({ delivery: { timeoutMs: 1000 } });
    await send(sink, events(1));
    peer.inject({ kind: 'detach', condition: 'amqp:link:detach-forced', description: 'detached by the peer', count: 1 });
    const [o] = await send(sink, events(1));
    expect(o!.status).toBe('retry');
    expect(await send(sink, events(1))).toEqual(delivered(1));
  });

  it('retries when the token is refused (authentication failures are retried, then dead-lettered by age)', async () => {
    peer.cbsStatusCode = 401;
    const sink = await eventHubs();
    const [o] = await send(sink, events(1));
    expect(o).toMatchObject({ status: 'retry', reason: expect.stringMatching(/^UnauthorizedError/) });
  });

  it('stops waiting when the attempt is aborted (a stalled hub)', async () => {
    const sink = await eventHubs();
    await send(sink, events(1));
    peer.inject({ kind: 'stall', count: 1 });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 200);
    const [o] = await sink.send(events(1), { signal: ac.signal });
    expect(o!.status).toBe('retry');
    peer.releaseStalled();
  });
});
