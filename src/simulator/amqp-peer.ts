/**
 * AmqpPeer: a local AMQP 1.0 broker stand-in, built on rhea, that the real @azure/event-hubs
 * and @azure/service-bus clients connect to over plain TCP (a connection string with
 * `UseDevelopmentEmulator=true` selects TCP and honours the port in `Endpoint`).
 *
 * It answers the claims-based-security handshake (`$cbs` put-token: correlation_id = the
 * request's message_id, status-code 202, sent on the link named in reply_to) and the Event
 * Hubs `$management` READ requests, sets `max_message_size` on every attach, unpacks batches
 * (message format 0x80013700: an envelope whose data sections each hold one encoded message),
 * records every message, and injects faults on demand: reject deliveries, detach links, drop
 * the connection, stall.
 */
import type { AddressInfo, Server } from 'node:net';
import rhea, { type Connection, type Delivery, type EventContext, type Sender } from 'rhea';
import { QueueBroker, type QueueOptions } from './amqp-queues.ts';

/** The parts of an AMQP message the peer reads and writes. */
export interface Message {
  [key: string]: unknown;
  body?: unknown;
  message_id?: unknown;
  reply_to?: unknown;
  application_properties?: Record<string, unknown>;
  message_annotations?: Record<string, unknown>;
}
/** rhea keeps the attach frames on the link; its typings do not show them. */
interface LinkFrames {
  remote: { attach?: { source?: { address?: string; filter?: Record<string, unknown> }; target?: { address?: string } } };
  local: { attach: Record<string, unknown> };
}
const frames = (link: unknown) => link as LinkFrames;

export const BATCH_FORMAT = 0x80013700;

/** batchMembers decodes the messages of a batch envelope: each data section holds one. */
function batchMembers(envelope: Message): Message[] {
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

export type Fault =
  | { kind: 'reject'; condition: string; description?: string; count: number }
  | { kind: 'detach'; condition: string; description?: string; count: number }
  | { kind: 'drop'; count: number }
  | { kind: 'stall'; count: number };

export class AmqpPeer {
  readonly messages: ReceivedMessage[] = [];
  readonly tokens: { audience: string; type: string }[] = [];
  readonly faults: Fault[] = [];
  /** max_message_size advertised on every receiving link's attach. */
  maxMessageSize = 1024 * 1024;
  /** Partition ids the Event Hubs management endpoint reports. */
  partitionIds = ['0', '1'];
  connections = 0;
  /** Entities that do not exist: attaching to them is refused with amqp:not-found. */
  readonly missingEntities = new Set<string>();
  /** The status the $cbs put-token answers (202 Accepted; 401 to refuse the token). */
  cbsStatusCode = 202;
  // every delivery is settled by the peer itself, so a fault can leave it unsettled or reject it
  readonly #container = rhea.create_container({ id: 'amqp-peer', autoaccept: false } as never);
  #server: Server | null = null;
  readonly #open = new Set<Connection>();
  readonly #replyLinks = new Map<string, Sender>();
  readonly #stalled: Delivery[] = [];
  /** Service Bus queues (sessions, peek-lock settlement, lock renewal, duplicate detection). */
  readonly queues = new QueueBroker();

  constructor() {
    const c = this.#container;
    c.on('connection_open', (ctx: EventContext) => {
      this.connections += 1;
      this.#open.add(ctx.connection);
      // a connection whose socket closed (a killed client, a dropped network) lets go of its sessions at once
      const socket = (ctx.connection as unknown as { socket?: { once(event: 'close', f: () => void): void; setNoDelay?(v: boolean): void } }).socket;
      socket?.once('close', () => this.queues.connectionGone((link) => link.connection === ctx.connection));
      // no Nagle delay on small frames: a settlement or a session's message goes out at once
      socket?.setNoDelay?.(true);
    });
    const gone = (ctx: EventContext) => {
      this.#open.delete(ctx.connection);
      this.queues.connectionGone((link) => link.connection === ctx.connection);
    };
    c.on('connection_close', gone);
    c.on('disconnected', gone);
    c.on('sender_close', (ctx: EventContext) => this.queues.detached(ctx.sender!));
    c.on('sendable', (ctx: EventContext) => this.queues.sendable(ctx.sender!));
    for (const kind of ['accepted', 'rejected', 'released', 'modified'] as const) c.on(kind, (ctx: EventContext) => this.queues.disposition(ctx, kind));
    c.on('sender_open', (ctx: EventContext) => {
      const sender = ctx.sender!;
      const source = frames(sender).remote.attach?.source?.address ?? '';
      // a receiver on a declared queue: a Service Bus consumer
      if (this.queues.has(source)) return this.queues.attach(sender, frames(sender).remote.attach?.source);
      // otherwise the client's receiving side of $cbs or $management: a reply link
      const target = frames(sender).remote.attach?.target?.address;
      sender.set_source({ address: source });
      if (target) sender.set_target({ address: target });
      this.#replyLinks.set(sender.name, sender);
      if (target) this.#replyLinks.set(target, sender);
    });
    c.on('receiver_open', (ctx: EventContext) => {
      const receiver = ctx.receiver!;
      const target = frames(receiver).remote.attach?.target?.address ?? '';
      receiver.set_target({ address: target });
      receiver.set_source({ address: frames(receiver).remote.attach?.source?.address ?? '' });
      frames(receiver).local.attach.max_message_size = this.maxMessageSize;
      if (this.missingEntities.has(target)) {
        receiver.close({ condition: 'amqp:not-found', description: `The messaging entity 'sb://127.0.0.1/${target}' could not be found.` });
      }
    });
    c.on('message', (ctx: EventContext) => this.#onMessage(ctx));
    c.on('error', () => undefined);
  }

  async listen(): Promise<number> {
    this.#server = this.#container.listen({ port: 0, host: '127.0.0.1' }) as unknown as Server;
    await new Promise<void>((resolve) => this.#server!.once('listening', () => resolve()));
    return this.port;
  }

  get port(): number {
    return (this.#server!.address() as AddressInfo).port;
  }

  /** connectionString for the SDKs: plain TCP to this peer. */
  connectionString(entity?: string): string {
    return (
      `Endpoint=sb://127.0.0.1:${this.port};SharedAccessKeyName=RootManageSharedAccessKey;` +
      `SharedAccessKey=c2VjcmV0LWtleS1mb3ItdGVzdHM=;UseDevelopmentEmulator=true${entity ? `;EntityPath=${entity}` : ''}`
    );
  }

  /** queue declares a Service Bus queue: messages sent to it are kept and can be received. */
  queue(name: string, options: QueueOptions = {}): void {
    this.queues.declare(name, options);
  }

  inject(fault: Fault): void {
    this.faults.push(fault);
  }

  /** releaseStalled settles every stalled delivery as accepted. */
  releaseStalled(): void {
    for (const d of this.#stalled.splice(0)) d.accept();
  }

  /** dropAll closes every client connection abruptly. */
  dropAll(): void {
    for (const conn of this.#open) (conn as unknown as { socket?: { destroy(): void } }).socket?.destroy();
  }

  async close(): Promise<void> {
    this.queues.close();
    this.dropAll();
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }

  #takeFault(): Fault | null {
    const f = this.faults[0];
    if (f === undefined) return null;
    f.count -= 1;
    if (f.count <= 0) this.faults.shift();
    return f;
  }

  #onMessage(ctx: EventContext): void {
    try {
      this.#handleMessage(ctx);
    } catch (err) {
      // a broken peer must fail the test loudly, not stall it
      process.stderr.write(`amqp-peer: ${String((err as Error).stack ?? err)}\n`);
      throw err;
    }
  }

  #handleMessage(ctx: EventContext): void {
    const receiver = ctx.receiver!;
    const address = (receiver.target as { address?: string } | undefined)?.address ?? '';
    // rhea decodes format-0 transfers; any other format arrives as raw bytes
    const format = (ctx as { format?: number }).format ?? 0;
    const msg = (format === 0 ? ctx.message! : rhea.message.decode(ctx.message as unknown as Buffer)) as Message;
    if (address === '$cbs' || address === '$management' || address.endsWith('/$management')) {
      ctx.delivery!.accept();
      return this.#reply(msg, address === '$cbs' ? this.#cbs(msg) : this.#management(msg, address));
    }
    if (this.queues.has(address)) {
      const members = format === BATCH_FORMAT ? batchMembers(msg) : [msg];
      let refused: string | null = null;
      for (const m of members) {
        this.messages.push({ address, message: m, format });
        refused ??= this.queues.enqueue(address, m as never);
      }
      if (refused === null) ctx.delivery!.accept();
      else ctx.delivery!.reject({ condition: 'amqp:not-allowed', description: refused });
      return;
    }

    const fault = this.#takeFault();
    if (fault?.kind === 'drop') {
      (ctx.connection as unknown as { socket?: { destroy(): void } }).socket?.destroy();
      return;
    }
    if (fault?.kind === 'stall') {
      this.#stalled.push(ctx.delivery!);
      return;
    }
    if (fault?.kind === 'detach') {
      receiver.close({ condition: fault.condition, description: fault.description ?? fault.condition });
      return;
    }
    if (fault?.kind === 'reject') {
      ctx.delivery!.reject({ condition: fault.condition, description: fault.description ?? fault.condition });
      return;
    }
    if (format === BATCH_FORMAT) {
      const envelope = msg.message_annotations as Record<string, unknown> | undefined;
      for (const m of batchMembers(msg)) this.messages.push({ address, message: m, format, ...(envelope ? { envelopeAnnotations: envelope } : {}) });
    } else {
      this.messages.push({ address, message: msg, format });
    }
    ctx.delivery!.accept();
  }

  #cbs(msg: Message): Message {
    const props = (msg.application_properties ?? {}) as Record<string, string>;
    this.tokens.push({ audience: props.name ?? '', type: props.type ?? '' });
    const ok = this.cbsStatusCode < 300;
    return { application_properties: { 'status-code': this.cbsStatusCode, 'status-description': ok ? 'Accepted' : 'Unauthorized: InvalidSignature' } };
  }

  #management(msg: Message, address: string): Message {
    const props = (msg.application_properties ?? {}) as Record<string, string>;
    const queueAnswer = this.queues.management(address.split('/')[0] ?? '', props.operation ?? '', msg.body);
    if (queueAnswer !== null) return queueAnswer;
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
      body: { name, created_at: new Date(0), partition_count: this.partitionIds.length, partition_ids: this.partitionIds },
    };
  }

  #reply(request: Message, response: Message): void {
    const link = this.#replyLinks.get(String(request.reply_to ?? ''));
    if (link === undefined) return;
    link.send({ ...response, correlation_id: request.message_id, to: request.reply_to } as never);
  }
}
