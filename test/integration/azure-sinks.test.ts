/**
 * The eventhubs and servicebus sinks over real AMQP 1.0: the official @azure/event-hubs and
 * @azure/service-bus clients connect over TCP to the rhea-based peer in testkit, which
 * records what arrives on the wire and injects faults.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SinkConfig } from '../../src/config/schema.ts';
import type { BridgeEvent } from '../../src/pipeline/cloudevent.ts';
import { eventHubsSink, type EventHubsConfig } from '../../sinks/eventhubs.ts';
import { serviceBusSink, type ServiceBusConfig } from '../../sinks/servicebus.ts';
import type { Outcome, Sink } from '../../src/sinks/contract.ts';
import { BATCH_FORMAT, type ReceivedMessage } from '../../src/simulator/servicebus/amqp-messages.ts';
import { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { bridgeEvents as events, silentLogger } from '../helpers.ts';

let peer: AmqpPeer;
const sinks: Sink[] = [];
beforeEach(async () => {
  peer = new AmqpPeer();
  await peer.listen();
});
afterEach(async () => {
  for (const s of sinks.splice(0)) await s.close().catch(() => undefined);
  await peer.close();
});

async function eventHubs(extra: Record<string, unknown> = {}) {
  const config = SinkConfig.parse({
    name: 'eh',
    type: 'eventhubs',
    connectionString: peer.connectionString('maintenance'),
    delivery: { timeoutMs: 3000 },
    ...extra,
  }) as EventHubsConfig;
  const sink = await eventHubsSink.create(config, { logger: silentLogger, stdout: process.stdout });
  sinks.push(sink);
  return sink;
}
async function serviceBus(extra: Record<string, unknown> = {}) {
  const config = SinkConfig.parse({
    name: 'sb',
    type: 'servicebus',
    connectionString: peer.connectionString(),
    entity: 'maintenance-queue',
    delivery: { timeoutMs: 3000 },
    ...extra,
  }) as ServiceBusConfig;
  const sink = await serviceBusSink.create(config, { logger: silentLogger, stdout: process.stdout });
  sinks.push(sink);
  return sink;
}
const send = (sink: Sink, evs: BridgeEvent[]): Promise<Outcome[]> => sink.send(evs, { signal: new AbortController().signal });
const bodyOf = (m: ReceivedMessage) => Buffer.from((m.message.body as { content: Buffer }).content).toString('utf8');
const delivered = (n: number) => Array.from({ length: n }, () => ({ status: 'delivered' }));

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

describe('Azure sink configuration', () => {
  it.each<[string, Record<string, unknown>, string]>([
    [
      'neither connection string nor namespace',
      { type: 'eventhubs', eventHubName: 'h' },
      'connectionString: set either connectionString or fullyQualifiedNamespace (with credential)',
    ],
    [
      'no hub name anywhere',
      { type: 'eventhubs', connectionString: 'Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=v' },
      'eventHubName: is required when the connection string has no EntityPath',
    ],
    [
      'credential with a connection string',
      {
        type: 'servicebus',
        entity: 'q',
        connectionString: 'Endpoint=sb://x/;SharedAccessKeyName=k;SharedAccessKey=v',
        credential: { kind: 'default' },
      },
      'credential: goes with fullyQualifiedNamespace, not with connectionString',
    ],
    [
      'not a connection string',
      { type: 'servicebus', entity: 'q', connectionString: 'hello' },
      'connectionString: must be a Service Bus connection string',
    ],
  ])('%s', (_n, raw, message) => {
    const r = SinkConfig.safeParse({ name: 'x', ...raw });
    expect(r.success).toBe(false);
    const text = r.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('\n');
    expect(text).toContain(message);
  });

  it('accepts a namespace with a managed identity (user-assigned) or the default credential', () => {
    expect(
      SinkConfig.safeParse({
        name: 'x',
        type: 'eventhubs',
        fullyQualifiedNamespace: 'myns.servicebus.windows.net',
        eventHubName: 'h',
        credential: { kind: 'managedIdentity', clientId: '5d1c4a9e-0b7f-4e2a-9c3d-1f2e3a4b5c6d' },
      }).success,
    ).toBe(true);
    expect(
      SinkConfig.safeParse({
        name: 'x',
        type: 'servicebus',
        fullyQualifiedNamespace: 'myns.servicebus.windows.net',
        entity: 'q',
        credential: { kind: 'default' },
      }).success,
    ).toBe(true);
  });
});
