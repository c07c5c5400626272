/**
 * The AMQP peer's Service Bus queues, driven by the real @azure/service-bus client: what the
 * fleet tests rely on, checked on its own (session locks held, lost and refused; delivery
 * counts; dead-lettering past the delivery limit; duplicate detection).
 */
import { ServiceBusClient } from '@azure/service-bus';
import { afterEach, describe, expect, it } from 'vitest';
import { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { waitFor } from '../helpers.ts';

let peer: AmqpPeer | null = null;
let client: ServiceBusClient | null = null;
afterEach(async () => {
  await client?.close();
  await peer?.close();
  client = null;
  peer = null;
});

async function setUp(options: Parameters<AmqpPeer['queue']>[1]) {
  peer = new AmqpPeer();
  peer.queue('q', options);
  await peer.listen();
  client = new ServiceBusClient(peer.connectionString());
  return { peer, client };
}

describe('the AMQP peer as a Service Bus queue with sessions', () => {
  it('locks a session to one receiver, refuses a second, and drops a duplicate messageId', async () => {
    const { peer, client } = await setUp({ sessions: true });
    const sender = client.createSender('q');
    await sender.sendMessages({ body: 'one', sessionId: 's1', messageId: 'm1' });
    await sender.sendMessages({ body: 'again', sessionId: 's1', messageId: 'm1' });
    await sender.sendMessages({ body: 'two', sessionId: 's1', messageId: 'm2' });
    expect(peer.queues.queue('q').duplicatesDropped).toBe(1);
    const first = await client.acceptSession('q', 's1');
    expect(first.sessionLockedUntilUtc.getTime()).toBeGreaterThan(Date.now());
    await expect(client.acceptSession('q', 's1')).rejects.toMatchObject({ code: 'SessionCannotBeLocked' });
    const got = await first.receiveMessages(2, { maxWaitTimeInMs: 3000 });
    expect(got.map((m) => m.body)).toEqual(['one', 'two']);
    await first.completeMessage(got[0]!);
    await first.deadLetterMessage(got[1]!, { deadLetterReason: 'BAD', deadLetterErrorDescription: 'a reason' });
    expect(peer.queues.queue('q').completed.map((m) => m.message.message_id)).toEqual(['m1']);
    expect(peer.queues.queue('q').deadLetters).toMatchObject([
      { reason: 'BAD', description: 'a reason', sessionId: 's1', deliveryCount: 1 },
    ]);
    await first.close();
  });

  it('loses a session lock nobody renews, and delivers its message again with a higher count', async () => {
    const { peer, client } = await setUp({ sessions: true, lockDurationMs: 1200 });
    await client.createSender('q').sendMessages({ body: 'held', sessionId: 's1', messageId: 'm1' });
    const idle = await client.acceptSession('q', 's1', { maxAutoLockRenewalDurationInMs: 0 });
    const [m] = await idle.receiveMessages(1, { maxWaitTimeInMs: 3000 });
    expect(m!.deliveryCount).toBe(0);
    // lost at the peer, and seen by the client (its link detached): a settlement sent before the
    // detach arrives would wait out the SDK's 20 s disposition timeout, as it would against Service Bus
    await waitFor(() => peer.queues.locksLost === 1 && idle.isClosed, 'the lock to be lost, and the receiver to know it');
    await expect(idle.completeMessage(m!)).rejects.toBeTruthy();
    const next = await client.acceptSession('q', 's1');
    const [again] = await next.receiveMessages(1, { maxWaitTimeInMs: 3000 });
    expect([again!.body, again!.deliveryCount]).toEqual(['held', 1]);
    await next.completeMessage(again!);
    await next.close();
  });

  it('dead-letters a message abandoned up to the delivery limit', async () => {
    const { peer, client } = await setUp({ sessions: true, maxDeliveryCount: 3 });
    await client.createSender('q').sendMessages({ body: 'flaky', sessionId: 's1', messageId: 'm1' });
    const r = await client.acceptSession('q', 's1');
    for (let i = 0; i < 3; i++) {
      const [m] = await r.receiveMessages(1, { maxWaitTimeInMs: 3000 });
      expect(m!.deliveryCount).toBe(i);
      await r.abandonMessage(m!);
    }
    expect(peer.queues.queue('q').deadLetters).toMatchObject([{ reason: 'MaxDeliveryCountExceeded', deliveryCount: 3 }]);
    expect(peer.queues.queue('q').messages).toEqual([]);
    await r.close();
  });

  it('settles through $management by lock token once the link a message came on is gone', async () => {
    const { peer, client } = await setUp({ lockDurationMs: 1500 });
    await client.createSender('q').sendMessages([
      { body: 'a', messageId: 'a' },
      { body: 'b', messageId: 'b' },
      { body: 'c', messageId: 'c' },
    ]);
    const r = client.createReceiver('q');
    const got = await r.receiveMessages(3, { maxWaitTimeInMs: 3000 });
    expect(got.map((m) => m.body)).toEqual(['a', 'b', 'c']);
    const detached = peer.queues.detachConsumers('q');
    expect(detached).toHaveLength(1);
    // a settlement sent before the client has the detach is lost with the link: wait for its answering detach
    await waitFor(() => detached.every((l) => l.is_closed()), 'the client answering the detach');
    // the message locks outlive the link: the receiver settles through $management
    await r.completeMessage(got[0]!);
    await r.deadLetterMessage(got[1]!, { deadLetterReason: 'BAD', deadLetterErrorDescription: 'by lock token' });
    expect(peer.queues.managementSettlements).toBe(2);
    expect(peer.queues.queue('q').completed.map((m) => m.message.message_id)).toEqual(['a']);
    expect(peer.queues.queue('q').deadLetters).toMatchObject([{ reason: 'BAD', description: 'by lock token' }]);
    // the third one's lock expires unsettled: it is delivered again
    const [again] = await r.receiveMessages(1, { maxWaitTimeInMs: 5000 });
    expect([again!.body, again!.deliveryCount]).toEqual(['c', 1]);
    await r.completeMessage(again!);
    expect(peer.queues.queue('q').messages).toEqual([]);
    await r.close();
  });
});
