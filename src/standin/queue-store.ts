/**
 * What the Service Bus stand-in keeps per queue: its options, the messages in order with their
 * locks and delivery counts, the dead-letter queue, the completed messages, the message ids seen
 * inside the duplicate detection window and the session locks; and the wire forms Service Bus
 * uses for lock tokens (.NET GUID order) and times (.NET ticks).
 */
import type { Delivery, Sender } from 'rhea';

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
}

/** guidOrder: 16 bytes in .NET's GUID byte order (the first three fields little-endian). */
export function guidOrder(b: Buffer): Buffer {
  return Buffer.from([b[3]!, b[2]!, b[1]!, b[0]!, b[5]!, b[4]!, b[7]!, b[6]!, ...b.subarray(8)]);
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
