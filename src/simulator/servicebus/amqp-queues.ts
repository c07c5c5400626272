/**
 * Service Bus queues for the AMQP peer: what the real @azure/service-bus client needs to
 * receive from a queue with sessions in peek-lock mode. The queues' contents, duplicate
 * detection and the wire forms are in queue-store.ts.
 *
 * - A receiver attaches with `com.microsoft:session-filter`; the peer locks that session to the
 *   link (or refuses with `com.microsoft:session-cannot-be-locked`), echoes the filter and sets
 *   `com.microsoft:locked-until-utc` (.NET ticks). Deliveries carry a 16-byte lock token as the
 *   tag, the sequence number, enqueued and locked-until annotations and the delivery count.
 * - Dispositions settle: accepted completes; rejected with `com.microsoft:dead-letter`
 *   dead-letters with its reason; modified or released (abandon) delivers again, counted
 *   (MaxDeliveryCountExceeded past the limit).
 * - `$management` renews session locks. A lock not renewed in time is lost: the link detaches
 *   with `com.microsoft:session-lock-lost` and its messages come again, as they do when a link
 *   or connection goes away.
 */
import { randomBytes } from 'node:crypto';
import type { Delivery, EventContext, Sender } from 'rhea';
import {
  dispositionRequest,
  Queue,
  OUTCOMES,
  renewSessionLock,
  SESSION_FILTER,
  ticks,
  type Consumer,
  type Message,
  type QueueOptions,
  type StoredMessage,
} from './queue-store.ts';

export class QueueBroker {
  readonly #queues = new Map<string, Queue>();
  readonly #consumers = new Map<Sender, Consumer>();
  readonly #byDelivery = new Map<Delivery, { queue: Queue; item: StoredMessage; consumer: Consumer }>();
  #sequence = 0;
  /** Session lock renewals answered. */
  renewals = 0;
  /** Session locks that expired without renewal. */
  locksLost = 0;
  /** Messages settled through `$management` (by lock token). */
  managementSettlements = 0;
  readonly #timer: NodeJS.Timeout;

  constructor() {
    this.#timer = setInterval(() => this.#expireLocks(), 100);
    this.#timer.unref();
  }

  declare(name: string, options: QueueOptions = {}): void {
    this.#queues.set(
      name,
      new Queue(name, { sessions: false, duplicateDetectionMs: 10 * 60_000, lockDurationMs: 30_000, maxDeliveryCount: 10, ...options }),
    );
  }

  has(address: string): boolean {
    return this.#queues.has(address);
  }

  /** queue is a declared queue, to read what it holds: messages (waiting or locked, in order), completed, dead letters, duplicates dropped, live sessions. */
  queue(name: string): Queue {
    const q = this.#queues.get(name);
    if (q === undefined) throw new Error(`no queue ${name} was declared`);
    return q;
  }

  /** enqueue stores a message sent to a queue; an error text refuses it. */
  enqueue(address: string, message: Message): string | null {
    const q = this.queue(address);
    const refused = q.store(message, () => ++this.#sequence);
    if (refused === null) this.#pump(q);
    return refused;
  }

  /** attach handles a client's receiving link on a queue; false when it was refused. */
  attach(link: Sender, remoteSource: { address?: string; filter?: Record<string, unknown> } | undefined): void {
    const q = this.queue(remoteSource?.address ?? '');
    const local = (link as unknown as { local: { attach: Record<string, unknown> } }).local.attach;
    let sessionId: string | null = null;
    if (q.options.sessions) {
      const wanted = remoteSource?.filter?.[SESSION_FILTER];
      const requested = wanted === undefined || wanted === null ? null : String((wanted as { value?: unknown }).value ?? wanted);
      sessionId = requested ?? this.#nextFreeSession(q);
      const lock = sessionId === null ? undefined : q.locks.get(sessionId);
      if (sessionId === null || (lock !== undefined && lock.until > Date.now() && lock.consumer.link.is_open())) {
        link.set_source({ address: q.name });
        link.close({
          condition: 'com.microsoft:session-cannot-be-locked',
          description: `The requested session '${sessionId ?? ''}' cannot be accepted. It may be locked by another receiver.`,
        });
        return;
      }
      link.set_source({ address: q.name, filter: { [SESSION_FILTER]: sessionId } });
      const until = Date.now() + q.options.lockDurationMs;
      local.properties = { 'com.microsoft:locked-until-utc': ticks(until) };
      const consumer = { link, queue: q, sessionId };
      q.locks.set(sessionId, { consumer, until });
      this.#consumers.set(link, consumer);
    } else {
      link.set_source({ address: q.name });
      this.#consumers.set(link, { link, queue: q, sessionId: null });
    }
  }

  #nextFreeSession(q: Queue): string | null {
    for (const m of q.messages) {
      if (m.sessionId !== null && !q.locks.has(m.sessionId)) return m.sessionId;
    }
    return null;
  }

  /** sendable: the link has credit. */
  sendable(link: Sender): void {
    const c = this.#consumers.get(link);
    if (c !== undefined) this.#pump(c.queue);
  }

  #pump(q: Queue): void {
    for (const c of this.#consumers.values()) {
      if (c.queue !== q || !c.link.is_open()) continue;
      for (const item of q.messages) {
        if (!c.link.sendable()) break;
        if (item.delivery !== null || item.lock !== null || item.sessionId !== c.sessionId) continue;
        const lockedUntil = new Date(q.locks.get(c.sessionId ?? '')?.until ?? Date.now() + q.options.lockDurationMs);
        const annotations = {
          ...(item.message.message_annotations ?? {}),
          'x-opt-sequence-number': item.sequence,
          'x-opt-enqueued-time': item.enqueuedAt,
          'x-opt-locked-until': lockedUntil,
        };
        const token = randomBytes(16);
        const delivery = c.link.send(
          { ...item.message, message_annotations: annotations, delivery_count: item.deliveryCount } as never,
          token,
        );
        item.delivery = delivery;
        if (c.sessionId === null) item.lock = { token, until: lockedUntil.getTime() };
        this.#byDelivery.set(delivery, { queue: q, item, consumer: c });
      }
    }
  }

  /** disposition: the client settled (or abandoned) a delivery. */
  disposition(ctx: EventContext, kind: 'accepted' | 'rejected' | 'released' | 'modified'): void {
    const delivery = ctx.delivery!;
    const entry = this.#byDelivery.get(delivery);
    if (entry === undefined) return;
    this.#byDelivery.delete(delivery);
    // settled with the outcome the client chose (an update without one carries a null state)
    delivery.update(true, OUTCOMES[kind]().described());
    const error = (delivery.remote_state as { error?: { condition?: string; info?: Record<string, unknown> } } | undefined)?.error;
    const info = error?.info ?? {};
    this.#settle(
      entry.queue,
      entry.item,
      kind === 'accepted' ? 'completed' : kind === 'rejected' ? 'suspended' : 'abandoned',
      String(info.DeadLetterReason ?? error?.condition ?? 'rejected'),
      String(info.DeadLetterErrorDescription ?? ''),
    );
  }

  /** settle applies a settlement, from a disposition or from `$management`. */
  #settle(queue: Queue, item: StoredMessage, status: 'completed' | 'suspended' | 'abandoned', reason: string, description: string): void {
    item.delivery = null;
    item.lock = null;
    if (status === 'completed') {
      queue.messages.splice(queue.messages.indexOf(item), 1);
      queue.completed.push(item);
    } else if (status === 'suspended') {
      this.#deadLetter(queue, item, reason, description, item.deliveryCount + 1);
    } else {
      this.#returnToQueue(queue, item);
    }
    this.#pump(queue);
  }

  /** deadLetter moves a message to the dead-letter queue; `deliveries`: how often it was delivered. */
  #deadLetter(q: Queue, item: StoredMessage, reason: string, description: string, deliveries: number): void {
    q.messages.splice(q.messages.indexOf(item), 1);
    q.deadLetters.push({ message: item.message, sessionId: item.sessionId, reason, description, deliveryCount: deliveries });
  }

  #returnToQueue(q: Queue, item: StoredMessage): void {
    item.delivery = null;
    item.lock = null;
    item.deliveryCount += 1;
    if (item.deliveryCount >= q.options.maxDeliveryCount)
      this.#deadLetter(q, item, 'MaxDeliveryCountExceeded', `delivered ${item.deliveryCount} times`, item.deliveryCount);
  }

  /** detachConsumers detaches every receiving link of a queue, as the service may (a fault); it returns the links, closed once the client answers the detach. */
  detachConsumers(name: string, condition = 'amqp:link:detach-forced'): Sender[] {
    const links: Sender[] = [];
    for (const c of [...this.#consumers.values()]) {
      if (c.queue.name !== name) continue;
      c.link.close({ condition, description: 'The link was detached by the peer.' });
      this.detached(c.link);
      links.push(c.link);
    }
    return links;
  }

  /** detached: a receiving link or its connection went away; its unsettled messages return. */
  detached(link: Sender): void {
    const c = this.#consumers.get(link);
    if (c === undefined) return;
    this.#consumers.delete(link);
    this.#release(c);
  }

  #release(c: Consumer): void {
    for (const [delivery, entry] of this.#byDelivery) {
      if (entry.consumer !== c) continue;
      this.#byDelivery.delete(delivery);
      // a session's messages go with its lock; a message lock outlives its link, until it expires
      if (entry.item.lock === null) this.#returnToQueue(c.queue, entry.item);
      else entry.item.delivery = null;
    }
    if (c.sessionId !== null && c.queue.locks.get(c.sessionId)?.consumer === c) c.queue.locks.delete(c.sessionId);
    this.#pump(c.queue);
  }

  /** connectionGone releases every link of a connection. */
  connectionGone(isOf: (link: Sender) => boolean): void {
    for (const link of [...this.#consumers.keys()]) if (isOf(link)) this.detached(link);
  }

  /** management answers `<queue>/$management` requests the session receiver makes, or null. */
  management(queueName: string, operation: string, body: unknown): Record<string, unknown> | null {
    const q = this.#queues.get(queueName);
    if (q === undefined) return null;
    if (operation === 'com.microsoft:renew-session-lock') {
      const answer = renewSessionLock(q, body);
      if (answer.application_properties['status-code'] === 200) this.renewals += 1;
      return answer;
    }
    if (operation === 'com.microsoft:update-disposition') return this.#updateDisposition(q, body as Record<string, unknown> | undefined);
    return { application_properties: { 'status-code': 501, 'status-description': `the peer does not implement ${operation}` } };
  }

  /**
   * updateDisposition settles messages by lock token through `$management`, as a receiver does
   * when the link it received them on is gone. The SDK sends the token as a UUID, in the
   * delivery tag's byte order or in .NET's GUID order: both are accepted.
   */
  #updateDisposition(q: Queue, body: Record<string, unknown> | undefined): Record<string, unknown> {
    const r = dispositionRequest(q, body);
    const status = r.status;
    if (status !== null)
      for (const item of r.items) {
        for (const [d, e] of this.#byDelivery) if (e.item === item) this.#byDelivery.delete(d);
        this.managementSettlements += 1;
        this.#settle(q, item, status, String(body?.['deadletter-reason'] ?? 'rejected'), String(body?.['deadletter-description'] ?? ''));
      }
    return r.answer;
  }

  #expireLocks(): void {
    const now = Date.now();
    for (const q of this.#queues.values()) {
      for (const item of [...q.messages]) {
        if (item.lock !== null && item.delivery === null && item.lock.until <= now) {
          this.#returnToQueue(q, item);
          this.#pump(q);
        }
      }
      for (const [sessionId, lock] of [...q.locks]) {
        if (lock.until > now) continue;
        q.locks.delete(sessionId);
        this.locksLost += 1;
        this.#consumers.delete(lock.consumer.link);
        this.#release(lock.consumer);
        if (lock.consumer.link.is_open())
          lock.consumer.link.close({
            condition: 'com.microsoft:session-lock-lost',
            description: `The session lock has expired on the session with id ${sessionId}.`,
          });
      }
    }
  }

  close(): void {
    clearInterval(this.#timer);
  }
}
