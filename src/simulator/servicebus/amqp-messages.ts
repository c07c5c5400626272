/**
 * The AMQP messages the stand-in reads and records: the parts of a message it uses, batches
 * (message format 0x80013700: an envelope whose data sections each hold one encoded message),
 * what it recorded, and the faults it can inject.
 */
import rhea from 'rhea';

/** The parts of an AMQP message the peer reads and writes. */
export interface Message {
  [key: string]: unknown;
  body?: unknown;
  message_id?: unknown;
  reply_to?: unknown;
  application_properties?: Record<string, unknown>;
  message_annotations?: Record<string, unknown>;
}

export const BATCH_FORMAT = 0x80013700;

/** batchMembers decodes the messages of a batch envelope: each data section holds one. */
export function batchMembers(envelope: Message): Message[] {
  const body = envelope.body as { content: Buffer | Buffer[]; multiple?: boolean };
  const sections = body.multiple ? (body.content as Buffer[]) : [body.content as Buffer];
  return sections.map((bytes) => rhea.message.decode(bytes) as Message);
}

export interface ReceivedMessage {
  /** The entity the sender link is attached to (event hub, queue or topic). */
  address: string;
  message: Message;
  /** The message format of the transfer (0 for one message, BATCH_FORMAT for a batch member). */
  format: number;
  /** For a batch member, the envelope's message annotations. */
  envelopeAnnotations?: Record<string, unknown>;
}

/**
 * A fault for the next `count` transfers. Without `address` it applies to Event Hubs (every
 * entity that is not a queue); with it, to that entity only, a queue included.
 */
export type Fault = (
  | { kind: 'reject'; condition: string; description?: string; count: number }
  | { kind: 'detach'; condition: string; description?: string; count: number }
  | { kind: 'drop'; count: number }
  | { kind: 'stall'; count: number }
) & { address?: string };

/** eventHubsManagement answers the Event Hubs `$management` READ requests: the hub, or one partition (always empty). */
export function eventHubsManagement(props: Record<string, string>, address: string, partitionIds: readonly string[]): Message {
  const name = props.name ?? address.split('/')[0] ?? '';
  if (props.type === 'com.microsoft:partition') {
    return {
      application_properties: { 'status-code': 200 },
      body: {
        name,
        partition: props.partition,
        begin_sequence_number: 0,
        last_enqueued_sequence_number: -1,
        last_enqueued_offset: '-1',
        last_enqueued_time_utc: new Date(0),
        is_partition_empty: true,
      },
    };
  }
  return {
    application_properties: { 'status-code': 200 },
    body: { name, created_at: new Date(0), partition_count: partitionIds.length, partition_ids: partitionIds },
  };
}
