/**
 * AmqpPeer: a local AMQP 1.0 broker stand-in, built on rhea, that the real @azure/event-hubs
 * and @azure/service-bus clients connect to over plain TCP (a connection string with
 * `UseDevelopmentEmulator=true` selects TCP and honours the port in `Endpoint`).
 *
 * It answers the claims-based-security handshake (`$cbs` put-token: correlation_id = the
 * request's message_id, status-code 202, sent on the link named in reply_to), and checks the
 * token: a SharedAccessSignature must carry the HMAC of the connection string's key over its
 * resource and expiry; in `auth: jwt` mode only an Entra ID token (JWT) for the configured
 * audience, unexpired, from an allowed principal, is accepted. A transfer on a connection whose
 * token for that entity has expired detaches the link with amqp:unauthorized-access, as the
 * service does. It also answers the Event
 * Hubs `$management` READ requests, sets `max_message_size` on every attach, unpacks batches
 * (message format 0x80013700: an envelope whose data sections each hold one encoded message),
 * records every message, and injects faults on demand: reject deliveries, detach links, drop
 * the connection, stall.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { AddressInfo, Server } from 'node:net';
import rhea, { type Connection, type Delivery, type EventContext, type Sender } from 'rhea';
import { QueueBroker, type QueueOptions } from './amqp-queues.ts';
import { readJwt } from './identity.ts';

const SAS_KEY_NAME = 'RootManageSharedAccessKey';
const SAS_KEY = 'c2VjcmV0LWtleS1mb3ItdGVzdHM=';

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

/** One $cbs put-token, as the peer judged it. */
export interface PutToken {
  /** The `name` of the request: the entity's URL (sb://host/entity). */
  audience: string;
  /** `jwt` or `servicebus.windows.net:sastoken`. */
  type: string;
  status: number;
  /** Why it was refused. */
  refused?: string;
  /** A JWT's claims (aud, oid, appid, exp, jti…). */
  claims?: Record<string, unknown>;
  /** When the token expires (ms). */
  expiresAt?: number;
}

/**
 * What put-token accepts: SAS tokens signed with the connection string's key, or Entra ID tokens
 * for `audience`. `principals`: the only object ids accepted at all (a role on the namespace).
 * `rights`: per entity, who may Send to it and Listen on it (Data Sender / Data Receiver roles),
 * checked when a link attaches, as the service does.
 */
export type PeerAuth =
  | { kind: 'sas' }
  | { kind: 'jwt'; audience: string; principals?: readonly string[]; rights?: Readonly<Record<string, { send?: readonly string[]; listen?: readonly string[] }>> };

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
  readonly #tokenExpiry = new Map<Connection, Map<string, { expiresAt: number; principal: string }>>();
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
  #tls = false;
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
      this.#tokenExpiry.delete(ctx.connection);
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
      const receiver = ctx.receiver!;
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
  async listen(options: { tls?: { key: string; cert: string } } = {}): Promise<number> {
    this.#tls = options.tls !== undefined;
    this.#server = this.#container.listen({ port: 0, host: '127.0.0.1', ...(options.tls ? { transport: 'tls', key: options.tls.key, cert: options.tls.cert } : {}) }) as unknown as Server;
    await new Promise<void>((resolve) => this.#server!.once('listening', () => resolve()));
    return this.port;
  }

  /** The namespace host a credential-based client is given: 127.0.0.1:port (TLS only). */
  get namespace(): string {
    return `127.0.0.1:${this.port}`;
  }

  get port(): number {
    return (this.#server!.address() as AddressInfo).port;
  }

  /** connectionString for the SDKs: plain TCP to this peer. */
  connectionString(entity?: string): string {
    return (
      `Endpoint=sb://127.0.0.1:${this.port};SharedAccessKeyName=${SAS_KEY_NAME};` +
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
    for (const conn of this.#open) (conn as unknown as { socket?: { destroy(): void } }).socket?.destroy();
  }

  async close(): Promise<void> {
    this.queues.close();
    this.dropAll();
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
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
    const receiver = ctx.receiver!;
    const address = (receiver.target as { address?: string } | undefined)?.address ?? '';
    // rhea decodes format-0 transfers; any other format arrives as raw bytes
    const format = (ctx as { format?: number }).format ?? 0;
    const msg = (format === 0 ? ctx.message! : rhea.message.decode(ctx.message as unknown as Buffer)) as Message;
    if (address === '$cbs' || address === '$management' || address.endsWith('/$management')) {
      ctx.delivery!.accept();
      return this.#reply(msg, address === '$cbs' ? this.#cbs(msg, ctx.connection) : this.#management(msg, address));
    }
    const expiry = this.#tokenExpiry.get(ctx.connection)?.get(address)?.expiresAt;
    if (expiry !== undefined && expiry <= Date.now() + this.clockAheadMs) {
      this.expiredRefusals += 1;
      receiver.close({ condition: 'amqp:unauthorized-access', description: `ExpiredToken: the token for '${address}' expired at ${new Date(expiry).toISOString()}` });
      return;
    }
    if (this.queues.has(address)) {
      if (this.#takeFault(address, true)?.kind === 'stall') {
        this.#stalled.push(ctx.delivery!);
        return;
      }
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

    const fault = this.#takeFault(address, false);
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

  #cbs(msg: Message, connection: Connection): Message {
    const props = (msg.application_properties ?? {}) as Record<string, string>;
    const audience = props.name ?? '';
    const type = props.type ?? '';
    const judged = this.cbsStatusCode !== 202 ? { refused: 'Unauthorized: InvalidSignature' } : this.#judge(type, audience, typeof msg.body === 'string' ? msg.body : '');
    const status = judged.refused === undefined ? 202 : this.cbsStatusCode !== 202 ? this.cbsStatusCode : 401;
    this.tokens.push({ audience, type, status, ...judged });
    if (status === 202 && judged.expiresAt !== undefined) {
      const entity = entityOf(audience);
      const map = this.#tokenExpiry.get(connection) ?? new Map<string, { expiresAt: number; principal: string }>();
      map.set(entity, { expiresAt: judged.expiresAt, principal: String(judged.claims?.oid ?? '') });
      this.#tokenExpiry.set(connection, map);
    }
    return { application_properties: { 'status-code': status, 'status-description': status === 202 ? 'Accepted' : judged.refused } };
  }

  /** #refusedRight closes a link whose connection's token for `entity` lacks `right`; true when it did. */
  #refusedRight(connection: Connection, entity: string, right: 'Send' | 'Listen', link: { close(error: { condition: string; description: string }): void }): boolean {
    const rights = this.auth.kind === 'jwt' ? this.auth.rights?.[entity] : undefined;
    if (rights === undefined) return false;
    const principal = this.#tokenExpiry.get(connection)?.get(entity)?.principal ?? '';
    const allowed = right === 'Send' ? rights.send : rights.listen;
    if (allowed?.includes(principal)) return false;
    this.refusedLinks.push({ entity, right, principal });
    link.close({ condition: 'amqp:unauthorized-access', description: `Unauthorized access. '${right}' claim(s) are required to perform this operation. Resource: 'sb://${this.namespace}/${entity}'.` });
    return true;
  }

  /** #judge checks a put-token's token: what it proves, or why it is refused. */
  #judge(type: string, audience: string, token: string): Omit<PutToken, 'audience' | 'type' | 'status'> {
    const now = Date.now() + this.clockAheadMs;
    if (this.auth.kind === 'jwt') {
      if (type !== 'jwt') return { refused: `Unauthorized: expected an Entra ID token (jwt), got ${type || 'no type'}` };
      const claims = readJwt(token);
      if (claims === null) return { refused: 'Unauthorized: InvalidToken: not a JWT' };
      const exp = typeof claims.exp === 'number' ? claims.exp * 1000 : 0;
      const base = { claims, expiresAt: exp };
      if (claims.aud !== this.auth.audience) return { ...base, refused: `Unauthorized: InvalidAudience: the token is for '${String(claims.aud)}', not '${this.auth.audience}'` };
      if (exp <= now) return { ...base, refused: `Unauthorized: ExpiredToken: expired at ${new Date(exp).toISOString()}` };
      if (this.auth.principals !== undefined && !this.auth.principals.includes(String(claims.oid))) {
        return { ...base, refused: `Unauthorized access. 'Send' claim(s) are required to perform this operation (principal ${String(claims.oid)} has no role on the entity)` };
      }
      return base;
    }
    if (type !== 'servicebus.windows.net:sastoken') return { refused: `Unauthorized: expected a shared access signature, got ${type || 'no type'}` };
    const fields = new Map(token.replace(/^SharedAccessSignature /, '').split('&').map((kv) => kv.split('=', 2) as [string, string]));
    const sr = fields.get('sr') ?? '';
    const se = Number(fields.get('se'));
    const sig = Buffer.from(decodeURIComponent(fields.get('sig') ?? ''), 'base64');
    const expected = createHmac('sha256', SAS_KEY).update(`${sr}\n${fields.get('se') ?? ''}`).digest();
    if (fields.get('skn') !== SAS_KEY_NAME || sig.length !== expected.length || !timingSafeEqual(sig, expected)) return { refused: 'Unauthorized: InvalidSignature: the token is not signed with the key of the connection string' };
    if (decodeURIComponent(sr) !== audience) return { refused: `Unauthorized: the token is for '${decodeURIComponent(sr)}', not '${audience}'` };
    if (!(se * 1000 > now)) return { refused: 'Unauthorized: ExpiredToken' };
    return { expiresAt: se * 1000 };
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

/** entityOf is the entity a put-token's audience names: sb://host/entity → entity. */
function entityOf(audience: string): string {
  const m = /^[a-z]+:\/\/[^/]+\/(.*)$/i.exec(audience);
  return m?.[1] ?? audience;
}
