/**
 * The relay's side of Service Bus: approval commands out on the VM's session of the inbox queue,
 * outcomes back on this replica's session of the replies queue, believed only when signed with
 * the link key of the VM they name; and the relay's metrics.
 */
import { randomUUID } from 'node:crypto';
import type { ServiceBusClient, ServiceBusReceivedMessage, ServiceBusSender } from '@azure/service-bus';
import type { Logger } from 'pino';
import { errorFields, messageOf } from '../lib/errors.ts';
import { withDeadline } from '../lib/time.ts';
import type { RelayMetrics } from './metrics.ts';
import { serviceBusClient } from '../azure/messaging.ts';
import {
  COMMAND_SUBJECT,
  decodeKey,
  linkKeyFor,
  outcomeVerifies,
  privateKeyOf,
  SIGNATURE_PROPERTY,
  signCommand,
  type ApprovalCommand,
  type CommandOutcome,
} from '../fleet/keys.ts';
import { holdSession } from '../fleet/session.ts';
import type { RelayBusConfig, RelayConfig } from './config.ts';

// ----- Service Bus: commands out, outcomes back --------------------------------------------

interface Waiter {
  readonly vm: string;
  resolve(outcome: CommandOutcome | null): void;
}

export class RelayBus {
  readonly #config: RelayConfig;
  readonly #bus: RelayBusConfig;
  readonly #logger: Logger;
  readonly #fleetKey: Buffer;
  readonly #signingKey;
  /** This replica's session on the replies queue. */
  readonly replySession = `relay-${randomUUID()}`;
  readonly #waiting = new Map<string, Set<Waiter>>();
  /** The final outcome of each command this replica has seen answered, the newest OUTCOMES_KEPT. */
  readonly #outcomes = new Map<string, CommandOutcome>();
  /** Commands this replica sent whose outcome has not come (yet), the newest OUTCOMES_KEPT. */
  readonly #sent = new Map<string, { vm: string; eventId: string }>();
  readonly #metrics: RelayMetrics;
  #client: ServiceBusClient | null = null;
  #sender: ServiceBusSender | null = null;
  #listening = false;
  #lastError: string | null = null;

  constructor(config: RelayConfig, bus: RelayBusConfig, logger: Logger, metrics: RelayMetrics) {
    this.#config = config;
    this.#bus = bus;
    this.#logger = logger;
    this.#metrics = metrics;
    this.#fleetKey = decodeKey(bus.fleetKey);
    this.#signingKey = privateKeyOf(bus.signingKey)!;
  }

  get listening(): boolean {
    return this.#listening;
  }

  get lastError(): string | null {
    return this.#lastError;
  }

  linkKey(vm: string): Buffer {
    return linkKeyFor(this.#fleetKey, vm);
  }

  async open(): Promise<void> {
    const c = this.#bus;
    this.#client = await serviceBusClient(c, {
      retryOptions: { maxRetries: 2, timeoutInMs: 10_000 },
      userAgentOptions: { userAgentPrefix: 'se-bridge-relay' },
    });
    this.#sender = this.#client.createSender(c.queue);
  }

  /** listen keeps this replica's replies session accepted until `signal` aborts. */
  async listen(signal: AbortSignal): Promise<void> {
    await holdSession({
      client: this.#client!,
      queue: this.#bus.replies,
      session: () => this.replySession,
      signal,
      // outcomes are answered as they come: no settlement round trip (and no lock) holds up the next
      // one, which in peekLock with a few concurrent calls made a burst's answers wait for each other
      maxConcurrentCalls: 256,
      receiveMode: 'receiveAndDelete',
      process: async (_receiver, m) => this.#onReply(m),
      state: (event, _session, err) => {
        this.#setListening(event === 'accepted');
        if (event === 'accepted') return;
        this.#lastError = messageOf(err);
        if (event === 'lost')
          this.#logger.warn({ ...errorFields(err), code: 'RELAY_REPLIES_LOST' }, 'relay: the replies session was lost; accepting it again');
        else
          this.#logger.warn(
            { ...errorFields(err), code: 'RELAY_REPLIES_ACCEPT' },
            'relay: cannot accept the replies session; trying again',
          );
      },
    });
    this.#setListening(false);
  }

  #setListening(v: boolean): void {
    this.#listening = v;
    this.#metrics.repliesConnected?.set(v ? 1 : 0);
  }

  #onReply(m: ServiceBusReceivedMessage): void {
    const body = Buffer.isBuffer(m.body) ? m.body : m.body instanceof Uint8Array ? Buffer.from(m.body) : null;
    const vm = String(m.applicationProperties?.vm ?? '');
    if (body === null || vm === '' || !outcomeVerifies(this.linkKey(vm), body, m.applicationProperties?.[SIGNATURE_PROPERTY])) {
      this.#metrics.outcomes.inc({ outcome: 'unverified' });
      this.#logger.warn(
        { code: 'RELAY_OUTCOME_UNVERIFIED', correlationId: m.correlationId, vm },
        'relay: an outcome that does not verify was dropped',
      );
      return;
    }
    let outcome: CommandOutcome;
    try {
      outcome = JSON.parse(body.toString('utf8')) as CommandOutcome;
    } catch {
      return;
    }
    if (outcome.vm !== vm) return;
    this.#metrics.outcomes.inc({ outcome: outcome.outcome });
    // an interim "failed" (the VM will try again) does not end the wait
    if (outcome.outcome === 'failed') return;
    const id = String(m.correlationId ?? '');
    if (this.#sent.get(id)?.vm === vm) {
      this.#sent.delete(id);
      keep(this.#outcomes, id, outcome);
    }
    for (const w of this.#waiting.get(id) ?? []) if (w.vm === vm) w.resolve(outcome);
  }

  /** tracked: what this replica knows of a command: its outcome, or that it was sent and is pending. */
  tracked(id: string): { outcome: CommandOutcome } | { pending: { vm: string; eventId: string } } | null {
    const outcome = this.#outcomes.get(id);
    if (outcome !== undefined) return { outcome };
    const pending = this.#sent.get(id);
    return pending === undefined ? null : { pending };
  }

  /**
   * send puts a signed command on the VM's session and waits up to `waitMs` for its outcome
   * (null when none came). The same command id twice is one message (duplicate detection).
   */
  async send(command: ApprovalCommand, waitMs: number): Promise<CommandOutcome | null> {
    // a repeat of a request already answered gets the first answer, and sends nothing
    const known = this.#outcomes.get(command.id);
    if (known !== undefined) return known;
    const { body, signature } = signCommand(this.#signingKey, command);
    let waiter!: Waiter;
    const outcome = new Promise<CommandOutcome | null>((resolve) => (waiter = { vm: command.vm, resolve }));
    const set = this.#waiting.get(command.id) ?? new Set<Waiter>();
    set.add(waiter);
    this.#waiting.set(command.id, set);
    const started = performance.now();
    keep(this.#sent, command.id, { vm: command.vm, eventId: command.eventId });
    // Service Bus may accept the connection and then say nothing: the send is bounded well
    // below a client's patience, so the client gets a 503 and its tracking id, never silence
    const limit = this.#config.sendTimeoutMs;
    const abort = new AbortController();
    try {
      const sending = this.#sender!.sendMessages(
        {
          body,
          contentType: 'application/json',
          subject: COMMAND_SUBJECT,
          messageId: command.id,
          sessionId: command.vm,
          replyToSessionId: this.replySession,
          replyTo: this.#bus.replies,
          timeToLive: Math.max(1000, command.exp * 1000 - Date.now()),
          applicationProperties: { [SIGNATURE_PROPERTY]: signature },
        },
        { abortSignal: abort.signal },
      );
      await withDeadline(sending, limit, () => {
        abort.abort();
        return Object.assign(new Error(`Service Bus did not take the command within ${limit} ms`), { code: 'SEND_TIMEOUT' });
      });
      this.#metrics.commands.inc({ result: 'sent' });
      const timer = setTimeout(() => waiter.resolve(null), waitMs);
      const r = await outcome;
      clearTimeout(timer);
      if (r !== null) this.#metrics.replySeconds.observe({}, (performance.now() - started) / 1000);
      return r;
    } catch (err) {
      this.#metrics.commands.inc({ result: 'send-failed' });
      this.#lastError = messageOf(err);
      throw err;
    } finally {
      set.delete(waiter);
      if (set.size === 0) this.#waiting.delete(command.id);
    }
  }

  async close(): Promise<void> {
    for (const set of this.#waiting.values()) for (const w of set) w.resolve(null);
    await this.#sender?.close().catch(() => undefined);
    await this.#client?.close().catch(() => undefined);
    this.#setListening(false);
  }
}

/** How many answered (and pending) commands each replica remembers, for repeats and GET /v1/approvals/{trackingId}. */
const OUTCOMES_KEPT = 10_000;

/** keep sets `key` as the newest entry of a map that holds at most OUTCOMES_KEPT. */
function keep<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > OUTCOMES_KEPT) map.delete(map.keys().next().value!);
}

/**
 * relayReadiness: ready while this replica holds its replies session (always, without Service
 * Bus: it serves the fleet view). The fleet store's state (`fleet`) is said beside it and never
 * makes the replica unready: approvals do not need it.
 */
export function relayReadiness(
  bus: RelayBus | null,
  fleet?: { state(): Record<string, unknown> } | null,
): { ready: boolean; reason: string; details?: Record<string, unknown> } {
  const ready = bus?.listening ?? true;
  const reason =
    bus === null
      ? 'serving the fleet view'
      : ready
        ? 'the replies session is held'
        : `no replies session: ${bus.lastError ?? 'connecting'}`;
  return { ready, reason, ...(fleet ? { details: { fleet: fleet.state() } } : {}) };
}
