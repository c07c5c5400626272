/**
 * What the Service Bus stand-in keeps per queue: its options, the messages in order with their
 * locks and delivery counts, the dead-letter queue, the completed messages, the message ids seen
 * inside the duplicate detection window and the session locks; and the wire forms Service Bus
 * uses for lock tokens (.NET GUID order) and times (.NET ticks).
 */
import rhea, { type Delivery, type Sender } from 'rhea';

export interface QueueOptions {
  /** Messages must carry a session id (group_id); receivers lock one session. */
  readonly sessions?: boolean;
  /** Duplicate detection window in ms; 0 turns it off. */
  readonly duplicateDetectionMs?: number;
  /** Session (or message) lock duration in ms. */
  readonly lockDurationMs?: number;
  readonly maxDeliveryCount?: number;
}

export type Message = Record<string, unknown> & { message_id?: unknown; group_id?: unknown; message_annotations?: Record<string, unknown> };

export interface StoredMessage {
  readonly sequence: number;
  readonly message: Message;
  readonly sessionId: string | null;
  readonly enqueuedAt: Date;
  deliveryCount: number;
  /** The delivery holding its lock, while one does. */
  delivery: Delivery | null;
  /** Its lock token (the delivery tag) while it is locked, and until when (a message lock, without sessions). */
  lock: { token: Buffer; until: number } | null;
}

export interface DeadLetter {
  readonly message: Message;
  readonly sessionId: string | null;
  readonly reason: string;
  readonly description: string;
  readonly deliveryCount: number;
}

export interface Consumer {
  readonly link: Sender;
  readonly queue: Queue;
  readonly sessionId: string | null;
}

export const SESSION_FILTER = 'com.microsoft:session-filter';

export class Queue {
  readonly messages: StoredMessage[] = [];
  readonly deadLetters: DeadLetter[] = [];
  readonly completed: StoredMessage[] = [];
  readonly seen = new Map<string, number>();
  /** Sessions locked by a link, with the time the lock ends. */
  readonly locks = new Map<string, { consumer: Consumer; until: number }>();
  duplicatesDropped = 0;
  readonly name: string;
  readonly options: Required<QueueOptions>;
  constructor(name: string, options: Required<QueueOptions>) {
    this.name = name;
    this.options = options;
  }

  /** Sessions locked by a live receiver. */
  liveSessions(): string[] {
    return [...this.locks.entries()].filter(([, l]) => l.consumer.link.is_open()).map(([id]) => id);
  }

  /** store keeps a message sent to the queue (a copy inside the duplicate detection window is accepted and dropped); an error text refuses it. */
  store(message: Message, nextSequence: () => number): string | null {
    const sessionId = message.group_id === undefined || message.group_id === null ? null : String(message.group_id);
    if (this.options.sessions && sessionId === null) return 'the queue requires sessions: a message must have a session id';
    const id = message.message_id === undefined ? null : String(message.message_id);
    const now = Date.now();
    if (id !== null && this.options.duplicateDetectionMs > 0) {
      const at = this.seen.get(id);
      if (at !== undefined && now - at < this.options.duplicateDetectionMs) {
        this.duplicatesDropped += 1;
        return null;
      }
      this.seen.set(id, now);
    }
    this.messages.push({
      sequence: nextSequence(),
      message,
      sessionId,
      enqueuedAt: new Date(now),
      deliveryCount: 0,
      delivery: null,
      lock: null,
    });
    return null;
  }
}

/** guidOrder: 16 bytes in .NET's GUID byte order (the first three fields little-endian). */
export function guidOrder(b: Buffer): Buffer {
  const reversed = (from: number, to: number) => Buffer.from(b.subarray(from, to)).reverse();
  return Buffer.concat([reversed(0, 4), reversed(4, 6), reversed(6, 8), b.subarray(8)]);
}

/** .NET ticks (100 ns since 0001-01-01) as the 8 big-endian bytes Service Bus sends. */
export function ticks(ms: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(BigInt(ms) * 10_000n + 621_355_968_000_000_000n);
  return b;
}

/** renewSessionLock answers `com.microsoft:renew-session-lock` for a queue: the new expiry, or 410 when the lock is gone. */
export function renewSessionLock(q: Queue, body: unknown): { application_properties: Record<string, unknown>; body?: unknown } {
  const sessionId = String((body as Record<string, unknown> | undefined)?.['session-id'] ?? '');
  const lock = q.locks.get(sessionId);
  if (lock === undefined || lock.until <= Date.now()) {
    return {
      application_properties: {
        'status-code': 410,
        'error-condition': 'com.microsoft:session-lock-lost',
        'status-description': `the session lock on ${sessionId} was lost`,
      },
    };
  }
  lock.until = Date.now() + q.options.lockDurationMs;
  return { application_properties: { 'status-code': 200 }, body: { expiration: new Date(lock.until) } };
}

/**
 * dispositionRequest reads a `com.microsoft:update-disposition` body: the status, the locked
 * messages its lock tokens name (in the delivery tag's byte order or .NET's GUID order), and the
 * answer: 400 for a status it does not take, 410 from the first token whose lock is gone (the
 * messages before it are still settled, as one by one).
 */
export function dispositionRequest(
  q: Queue,
  body: Record<string, unknown> | undefined,
): { status: 'completed' | 'suspended' | 'abandoned' | null; items: StoredMessage[]; answer: Record<string, unknown> } {
  const given = String(body?.['disposition-status'] ?? '');
  const status = given === 'completed' || given === 'suspended' || given === 'abandoned' ? given : null;
  if (status === null)
    return {
      status,
      items: [],
      answer: { application_properties: { 'status-code': 400, 'status-description': `disposition-status ${given} is not supported` } },
    };
  const items: StoredMessage[] = [];
  const now = Date.now();
  for (const token of ((body?.['lock-tokens'] as unknown[] | undefined) ?? []).map((t) => Buffer.from(t as Uint8Array))) {
    const item = q.messages.find(
      (m) => m.lock !== null && m.lock.until > now && (m.lock.token.equals(token) || guidOrder(m.lock.token).equals(token)),
    );
    if (item === undefined) {
      const lost = {
        'status-code': 410,
        'error-condition': 'com.microsoft:message-lock-lost',
        'status-description': 'the lock on the message was lost',
      };
      return { status, items, answer: { application_properties: lost } };
    }
    items.push(item);
  }
  return { status, items, answer: { application_properties: { 'status-code': 200 } } };
}

/** The outcome a settlement carries back (the client's own, without its details). */
const m = rhea.message as unknown as Record<string, () => { described(): unknown }>;
export const OUTCOMES = {
  accepted: () => m.accepted!(),
  rejected: () => m.rejected!(),
  released: () => m.released!(),
  modified: () => m.modified!(),
};
