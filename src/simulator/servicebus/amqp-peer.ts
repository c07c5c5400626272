/**
 * AmqpPeer: a local AMQP 1.0 broker stand-in, built on rhea, that the real @azure/event-hubs
 * and @azure/service-bus clients connect to over plain TCP (a connection string with
 * `UseDevelopmentEmulator=true` selects TCP and honours the port in `Endpoint`), or TLS.
 *
 * It answers the claims-based-security handshake (`$cbs` put-token, judged in amqp-auth.ts);
 * a transfer on a connection whose token for that entity has expired detaches the link with
 * amqp:unauthorized-access, as the service does. It answers the Event Hubs `$management` READ
 * requests, sets `max_message_size` on every attach, unpacks batches, records every message,
 * holds Service Bus queues (amqp-queues.ts), and injects faults on demand: reject deliveries,
 * detach links, drop the connection, stall.
 */
import type { AddressInfo, Server } from 'node:net';
import rhea, { type Connection, type Delivery, type EventContext, type Sender } from 'rhea';
import { QueueBroker } from './amqp-queues.ts';
import type { QueueOptions } from './queue-store.ts';
import { SAS_KEY, SAS_KEY_NAME, TokenLedger, type PeerAuth, type PutToken } from './amqp-auth.ts';
import { BATCH_FORMAT, batchMembers, eventHubsManagement, type Fault, type Message, type ReceivedMessage } from './amqp-messages.ts';
import { must } from '../../lib/must.ts';
import { frames, socketOf } from './rhea-parts.ts';

export class AmqpPeer {
  readonly messages: ReceivedMessage[] = [];
  readonly tokens: PutToken[] = [];
  auth: PeerAuth = { kind: 'sas' };
  /** How far the peer's clock runs ahead of the host's when it judges a token's expiry. */
  clockAheadMs = 0;
  /** Transfers refused because the connection's token for the entity had expired. */
  expiredRefusals = 0;
  /** Links refused at attach for want of a right: `Send` or `Listen` on an entity. */
  readonly refusedLinks: { entity: string; right: 'Send' | 'Listen'; principal: string }[] = [];
  readonly #ledger = new TokenLedger();
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
  readonly #container = rhea.create_container({ id: 'amqp-peer', autoaccept: false });
  #server: Server | null = null;
  #tls = false;
  #host = '127.0.0.1';
  /** The host clients use: the listening address, or the loopback one when it listens on every address. */
  get #reachableHost(): string {
    return this.#host === '0.0.0.0' || this.#host === '' ? '127.0.0.1' : this.#host.includes(':') ? `[${this.#host}]` : this.#host;
  }
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
      const socket = socketOf(ctx.connection);
      socket?.once('close', () => this.queues.connectionGone((link) => link.connection === ctx.connection));
      // no Nagle delay on small frames: a settlement or a session's message goes out at once
      socket?.setNoDelay?.(true);
    });
    const gone = (ctx: EventContext) => {
      this.#open.delete(ctx.connection);
      this.#ledger.forget(ctx.connection);
      this.queues.connectionGone((link) => link.connection === ctx.connection);
    };
    c.on('connection_close', gone);
    c.on('disconnected', gone);
    c.on('sender_close', (ctx: EventContext) => this.queues.detached(must(ctx.sender, 'the sender')));
    c.on('sendable', (ctx: EventContext) => this.queues.sendable(must(ctx.sender, 'the sender')));
    for (const kind of ['accepted', 'rejected', 'released', 'modified'] as const)
      c.on(kind, (ctx: EventContext) => this.queues.disposition(ctx, kind));
    c.on('sender_open', (ctx: EventContext) => {
      const sender = must(ctx.sender, 'the sender');
      const source = frames(sender).remote.attach?.source?.address ?? '';
      // a receiver on a declared queue: a Service Bus consumer
      if (this.queues.has(source)) {
        if (this.#refusedRight(ctx.connection, source, 'Listen', sender)) return;
        return this.queues.attach(sender, frames(sender).remote.attach?.source);
      }
      // otherwise the client's receiving side of $cbs or $management: a reply link
      const target = frames(sender).remote.attach?.target?.address;
      sender.set_source({ address: source });
      if (target) sender.set_target({ address: target });
      this.#replyLinks.set(sender.name, sender);
      if (target) this.#replyLinks.set(target, sender);
    });
    c.on('receiver_open', (ctx: EventContext) => {
      const receiver = must(ctx.receiver, 'the receiver');
      const target = frames(receiver).remote.attach?.target?.address ?? '';
      receiver.set_target({ address: target });
      receiver.set_source({ address: frames(receiver).remote.attach?.source?.address ?? '' });
      frames(receiver).local.attach.max_message_size = this.maxMessageSize;
      if (this.missingEntities.has(target)) {
        receiver.close({ condition: 'amqp:not-found', description: `The messaging entity 'sb://127.0.0.1/${target}' could not be found.` });
        return;
      }
      if (target !== '$cbs' && !target.endsWith('$management')) this.#refusedRight(ctx.connection, target, 'Send', receiver);
    });
    c.on('message', (ctx: EventContext) => this.#onMessage(ctx));
    c.on('error', () => undefined);
  }

  /**
   * listen starts the peer on a free port: plain TCP (clients select it with
   * `UseDevelopmentEmulator=true`), or TLS as the service speaks it, for clients that connect
   * with a namespace and a credential (they always use TLS).
   */
  /** listen starts taking connections on `host:port` (default 127.0.0.1, a free port); it fails when the port is taken. */
  async listen(options: { tls?: { key: string; cert: string }; host?: string; port?: number } = {}): Promise<number> {
    this.#tls = options.tls !== undefined;
    this.#host = options.host ?? '127.0.0.1';
    this.#server = this.#container.listen({
      port: options.port ?? 0,
      host: this.#host,
      ...(options.tls ? { transport: 'tls', key: options.tls.key, cert: options.tls.cert } : {}),
    });
    const server = this.#server;
    await new Promise<void>((resolve, reject) => {
      server.once('listening', () => resolve());
      server.once('error', reject);
    });
    return this.port;
  }

  /** The namespace host a credential-based client is given: 127.0.0.1:port (TLS only). */
  get namespace(): string {
    return `127.0.0.1:${this.port}`;
  }

  get port(): number {
    return (must(this.#server, 'the listening server').address() as AddressInfo).port;
  }

  /** connectionString for the SDKs: plain TCP to this peer. */
  connectionString(entity?: string): string {
    return (
      `Endpoint=sb://${this.#reachableHost}:${this.port};SharedAccessKeyName=${SAS_KEY_NAME};` +
      `SharedAccessKey=${SAS_KEY}${this.#tls ? '' : ';UseDevelopmentEmulator=true'}${entity ? `;EntityPath=${entity}` : ''}`
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
    for (const conn of this.#open) socketOf(conn)?.destroy();
  }

  /** close stops listening first, so a client that reconnects at once cannot hold the server open, then drops every connection. */
  async close(): Promise<void> {
    this.queues.close();
    const closed = new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
    this.dropAll();
    await closed;
  }

  /** takeFault takes the first fault for `address`: one naming it, or (not for queues) one naming none. */
  #takeFault(address: string, queue: boolean): Fault | null {
    const i = this.faults.findIndex((f) => f.address === address || (!queue && f.address === undefined));
    const f = this.faults[i];
    if (f === undefined) return null;
    f.count -= 1;
    if (f.count <= 0) this.faults.splice(i, 1);
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
    const receiver = must(ctx.receiver, 'the receiver');
    const delivery = must(ctx.delivery, 'the delivery');
    const address = (receiver.target as { address?: string } | undefined)?.address ?? '';
    // rhea decodes format-0 transfers; any other format arrives as raw bytes
    const format = (ctx as { format?: number }).format ?? 0;
    const msg = (format === 0 ? must(ctx.message, 'the message') : rhea.message.decode(ctx.message as unknown as Buffer)) as Message;
    if (address === '$cbs' || address === '$management' || address.endsWith('/$management')) {
      delivery.accept();
      return this.#reply(msg, address === '$cbs' ? this.#cbs(msg, ctx.connection) : this.#management(msg, address));
    }
    const expiry = this.#ledger.expiresAt(ctx.connection, address);
    if (expiry !== undefined && expiry <= Date.now() + this.clockAheadMs) {
      this.expiredRefusals += 1;
      receiver.close({
        condition: 'amqp:unauthorized-access',
        description: `ExpiredToken: the token for '${address}' expired at ${new Date(expiry).toISOString()}`,
      });
      return;
    }
    if (this.queues.has(address)) {
      if (this.#takeFault(address, true)?.kind === 'stall') {
        this.#stalled.push(delivery);
        return;
      }
      const members = format === BATCH_FORMAT ? batchMembers(msg) : [msg];
      let refused: string | null = null;
      for (const m of members) {
        this.messages.push({ address, message: m, format });
        refused ??= this.queues.enqueue(address, m);
      }
      if (refused === null) delivery.accept();
      else delivery.reject({ condition: 'amqp:not-allowed', description: refused });
      return;
    }

    const fault = this.#takeFault(address, false);
    if (fault?.kind === 'drop') {
      socketOf(ctx.connection)?.destroy();
      return;
    }
    if (fault?.kind === 'stall') {
      this.#stalled.push(delivery);
      return;
    }
    if (fault?.kind === 'detach') {
      receiver.close({ condition: fault.condition, description: fault.description ?? fault.condition });
      return;
    }
    if (fault?.kind === 'reject') {
      delivery.reject({ condition: fault.condition, description: fault.description ?? fault.condition });
      return;
    }
    if (format === BATCH_FORMAT) {
      const envelope = msg.message_annotations;
      for (const m of batchMembers(msg))
        this.messages.push({ address, message: m, format, ...(envelope ? { envelopeAnnotations: envelope } : {}) });
    } else {
      this.messages.push({ address, message: msg, format });
    }
    delivery.accept();
  }

  #cbs(msg: Message, connection: Connection): Message {
    const options = { auth: this.auth, statusCode: this.cbsStatusCode, now: Date.now() + this.clockAheadMs };
    const { token, answer } = this.#ledger.putToken(msg, connection, options);
    this.tokens.push(token);
    return answer;
  }

  /** #refusedRight closes a link whose connection's token for `entity` lacks `right`; true when it did. */
  #refusedRight(
    connection: Connection,
    entity: string,
    right: 'Send' | 'Listen',
    link: { close(e: { condition: string; description: string }): void },
  ) {
    const principal = this.#ledger.lacksRight(this.auth, connection, entity, right);
    if (principal === null) return false;
    this.refusedLinks.push({ entity, right, principal });
    const description = `Unauthorized access. '${right}' claim(s) are required to perform this operation. Resource: 'sb://${this.namespace}/${entity}'.`;
    link.close({ condition: 'amqp:unauthorized-access', description });
    return true;
  }

  #management(msg: Message, address: string): Message {
    const props = (msg.application_properties ?? {}) as Record<string, string>;
    const queueAnswer = this.queues.management(address.split('/')[0] ?? '', props.operation ?? '', msg.body);
    if (queueAnswer !== null) return queueAnswer;
    return eventHubsManagement(props, address, this.partitionIds);
  }

  #reply(request: Message, response: Message): void {
    const link = this.#replyLinks.get(String(request.reply_to ?? ''));
    if (link === undefined) return;
    link.send({ ...response, correlation_id: request.message_id, to: request.reply_to } as never);
  }
}
