/**
 * ApprovalInbox: approval commands reach this VM over outbound AMQP, from a Service Bus queue
 * with sessions, so a fleet needs no inbound port on any VM.
 *
 * The bridge accepts only its own session (its resource id, or its name without one) and
 * applies each command through the one ApprovalService: the same checks, StartRequests, the
 * record, exactly one `approved` CloudEvent. A message is completed only after its outcome is
 * recorded; a command that is not valid (bad signature, another VM's, expired, replayed,
 * malformed) is dead-lettered with the reason and never reaches IMDS; one that failed
 * transiently is abandoned, so Service Bus delivers it again. Every outcome is published on
 * the replies queue, to the session the command asked for, signed with this VM's link key.
 * The session is accepted again with backoff whenever it is lost.
 */
import type { ServiceBusClient, ServiceBusReceivedMessage, ServiceBusSender, ServiceBusSessionReceiver } from '@azure/service-bus';
import type { Logger } from 'pino';
import { errorFields, messageOf } from '../../lib/errors.ts';
import { sleep } from '../../lib/time.ts';
import { serviceBusClient } from '../../azure/messaging.ts';
import type { ReplayCache } from '../../store/replay.ts';
import {
  checkCommand,
  forceReasonOk,
  OUTCOME_SUBJECT,
  publicKeyOf,
  SIGNATURE_PROPERTY,
  signOutcome,
  type ApprovalCommand,
  type CommandOutcome,
} from '../keys.ts';
import { ApprovalError, type ApprovalService } from '../../approval/service.ts';
import { holdSession } from '../session.ts';
import { inboxSession, type InboxConfig } from './config.ts';
import type { BridgeView } from '../../imds/view.ts';

export interface InboxOptions {
  readonly config: InboxConfig;
  /** The commands already applied and the tokens already spent. */
  readonly replay: ReplayCache;
  readonly logger: Logger;
  /** The read model: this VM's session id comes from `vm`, and commands are taken once `goodReads` > 0 (an approval needs the document). */
  readonly view: BridgeView;
  /** Every command's result (approved, already-approved, not-approvable, failed, dead-lettered). */
  readonly onCommand?: (result: string) => void;
  readonly onConnected?: (connected: boolean) => void;
  /** Pause before the first abandon of a command that failed, doubled with each delivery up to 30 s. */
  readonly abandonPauseMs?: number;
  /** Pause before the first re-accept after a loss, doubled up to 30 s (tests shorten it). */
  readonly retryBaseMs?: number;
}

export interface InboxStatus {
  readonly connected: boolean;
  readonly queue: string;
  readonly session: string;
  readonly commands: number;
  readonly lastError: string | null;
}

const REPLY_TTL_MS = 10 * 60_000;
/** Commands are remembered this long past their expiry, to tell a replay from a redelivery. */
const REMEMBER_PAST_EXPIRY_MS = 10 * 60_000;

export class ApprovalInbox {
  readonly #o: InboxOptions;
  readonly #key;
  readonly #linkKey: Buffer;
  #client: ServiceBusClient | null = null;
  #replies: ServiceBusSender | null = null;
  #connected = false;
  #commands = 0;
  #lastError: string | null = null;
  #signal: AbortSignal | null = null;
  #service: ApprovalService | null = null;

  constructor(options: InboxOptions) {
    this.#o = options;
    this.#key = publicKeyOf(options.config.relayPublicKey)!;
    this.#linkKey = options.config.linkKeyBytes;
  }
  /** use: the approval service that applies the commands (the daemon's, once it exists); commands wait for it. */
  use(service: ApprovalService): void {
    this.#service = service;
  }

  get #approvals(): ApprovalService {
    if (this.#service === null) throw new Error('the approval inbox was given no approval service');
    return this.#service;
  }

  /** This VM's session: the configured one, or its resource id's. */
  get #sessionId(): string {
    return inboxSession(this.#o.config, this.#o.view.vm);
  }

  status(): InboxStatus {
    return {
      connected: this.#connected,
      queue: this.#o.config.queue,
      session: this.#sessionId,
      commands: this.#commands,
      lastError: this.#lastError,
    };
  }

  #setConnected(v: boolean): void {
    this.#connected = v;
    this.#o.onConnected?.(v);
  }

  /** run accepts this VM's session and handles commands until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const { config, logger } = this.#o;
    this.#signal = signal;
    this.#client = await serviceBusClient(config, {
      retryOptions: { maxRetries: 2, timeoutInMs: 15_000 },
      userAgentOptions: { userAgentPrefix: 'se-bridge' },
    });
    this.#replies = this.#client.createSender(config.replies);
    while (!signal.aborted && (this.#o.view.goodReads === 0 || this.#service === null)) await sleep(100, signal).catch(() => undefined);
    await holdSession({
      client: this.#client,
      queue: config.queue,
      session: () => this.#sessionId,
      signal,
      maxConcurrentCalls: 1,
      ...(this.#o.retryBaseMs !== undefined ? { retryBaseMs: this.#o.retryBaseMs } : {}),
      process: (receiver, m) =>
        this.#handle(receiver, m).catch(async (err: unknown) => {
          // an unexpected failure (the state database, say): the message comes again
          logger.error(
            { ...errorFields(err), code: 'INBOX_COMMAND_FAILED', messageId: m.messageId },
            'approval inbox: a command could not be handled; it is abandoned',
          );
          await this.#abandon(receiver, m);
          this.#count('failed');
        }),
      state: (event, session, err) => {
        this.#setConnected(event === 'accepted');
        if (event === 'accepted') {
          this.#lastError = null;
          logger.info({ queue: config.queue, session }, 'approval inbox: session accepted');
          return;
        }
        this.#lastError = messageOf(err);
        if (event === 'lost')
          logger.warn({ ...errorFields(err), code: 'INBOX_SESSION_LOST' }, 'approval inbox: the session was lost; accepting it again');
        else
          logger.warn(
            { ...errorFields(err), code: 'INBOX_ACCEPT_FAILED', queue: config.queue, session },
            'approval inbox: cannot accept the session; trying again',
          );
      },
    });
    this.#setConnected(false);
  }

  async close(): Promise<void> {
    this.#setConnected(false);
    await this.#replies?.close().catch(() => undefined);
    await this.#client?.close().catch(() => undefined);
  }

  async #handle(receiver: ServiceBusSessionReceiver, m: ServiceBusReceivedMessage): Promise<void> {
    const { logger, replay } = this.#o;
    const session = this.#sessionId;
    const check = checkCommand(this.#key, m.body, m.applicationProperties?.[SIGNATURE_PROPERTY], session);
    const fields = { messageId: m.messageId, sequence: m.sequenceNumber?.toString(), deliveryCount: m.deliveryCount };
    const deadLetter = async (code: string, message: string, command?: ApprovalCommand) => {
      logger.warn({ ...fields, code, reason: message }, 'approval inbox: command refused and dead-lettered');
      await this.#reply(m, this.#outcome(command, m, 'rejected', code, message));
      await receiver.deadLetterMessage(m, { deadLetterReason: code, deadLetterErrorDescription: message });
      this.#count('dead-lettered');
    };
    if (!check.ok) return deadLetter(check.code, check.message, check.command);
    const command = check.command;
    if (String(m.messageId) !== command.id) return deadLetter('MALFORMED', 'the messageId is not the command id', command);
    const sequence = m.sequenceNumber?.toString() ?? '';
    const remembered = replay.command(command.id);
    if (remembered !== undefined) {
      const before = JSON.parse(remembered) as { sequence: string; outcome: CommandOutcome };
      // the same message again (its settlement was lost): answer as before; a new copy is a replay
      if (before.sequence !== sequence) return deadLetter('REPLAYED', `command ${command.id} was already applied`, command);
      await this.#reply(m, before.outcome);
      await receiver.completeMessage(m);
      return;
    }
    if (command.nonce !== null && replay.tokenSpent(command.nonce)) {
      return deadLetter('TOKEN_USED', 'this approval link has already been used', command);
    }
    let outcome: CommandOutcome;
    try {
      // forced only with a reason that says something
      const force = command.force === true && forceReasonOk(command.reason) ? { force: true } : {};
      const r = await this.#approvals.approve(command.eventId, { by: command.by, via: command.via, reason: command.reason, ...force });
      outcome = {
        ...this.#outcome(command, m, r.status, null, r.status === 'approved' ? 'approved' : `already approved by ${r.by} (${r.via})`),
        by: r.by,
        via: r.via,
      };
    } catch (err) {
      if (err instanceof ApprovalError && err.held) {
        // held by the fleet budget: answered, but neither remembered nor spent, so asking again later can succeed
        await this.#reply(m, this.#outcome(command, m, 'not-approvable', err.code, err.message));
        await receiver.completeMessage(m);
        this.#count('held');
        return;
      }
      if (err instanceof ApprovalError && err.code !== 'IMDS_REFUSED') {
        outcome = this.#outcome(command, m, 'not-approvable', err.code, err.message);
      } else {
        // transient: Service Bus delivers it again (and dead-letters it past its delivery limit)
        const message = messageOf(err);
        logger.warn(
          { ...fields, eventId: command.eventId, ...errorFields(err) },
          'approval inbox: the approval failed; the command is abandoned and will come again',
        );
        await this.#reply(m, this.#outcome(command, m, 'failed', (err as ApprovalError).code ?? 'FAILED', message));
        await this.#abandon(receiver, m);
        this.#count('failed');
        return;
      }
    }
    const ttl = Math.max(60_000, command.exp * 1000 - Date.now()) + REMEMBER_PAST_EXPIRY_MS;
    replay.rememberCommand(command.id, JSON.stringify({ sequence, outcome }), ttl);
    if (command.nonce !== null) replay.spendToken(command.nonce, ttl);
    logger.info(
      { ...fields, eventId: command.eventId, outcome: outcome.outcome, by: command.by, via: command.via },
      'approval inbox: command applied',
    );
    await this.#reply(m, outcome);
    await receiver.completeMessage(m);
    this.#count(outcome.outcome);
  }

  /**
   * abandon gives a message back for another delivery, after a pause that doubles with each
   * delivery (0.5 s, 1 s, 2 s … 30 s): Service Bus delivers an abandoned message again at once,
   * and a short IMDS outage must not use up its delivery count in a second.
   */
  async #abandon(receiver: ServiceBusSessionReceiver, m: ServiceBusReceivedMessage): Promise<void> {
    const pause = Math.min(30_000, (this.#o.abandonPauseMs ?? 500) * 2 ** Math.min(m.deliveryCount ?? 0, 10));
    if (this.#signal !== null) await sleep(pause, this.#signal).catch(() => undefined);
    await receiver.abandonMessage(m).catch(() => undefined);
  }

  #count(result: string): void {
    this.#commands += 1;
    this.#o.onCommand?.(result);
  }

  #outcome(
    command: ApprovalCommand | undefined,
    m: ServiceBusReceivedMessage,
    outcome: CommandOutcome['outcome'],
    code: string | null,
    message: string,
  ): CommandOutcome {
    return {
      v: 1,
      commandId: command?.id ?? String(m.messageId ?? ''),
      vm: this.#sessionId,
      eventId: command?.eventId ?? null,
      outcome,
      code,
      message,
      by: null,
      via: null,
      at: new Date().toISOString(),
    };
  }

  /** reply publishes an outcome; a failure is logged, never fatal: the approval itself stands. */
  async #reply(m: ServiceBusReceivedMessage, outcome: CommandOutcome): Promise<void> {
    const body = Buffer.from(JSON.stringify(outcome));
    try {
      await this.#replies!.sendMessages({
        body,
        contentType: 'application/json',
        subject: OUTCOME_SUBJECT,
        sessionId: m.replyToSessionId ?? this.#sessionId,
        correlationId: m.messageId,
        // an outcome nobody waits for (its relay replica is gone) does not pile up
        timeToLive: REPLY_TTL_MS,
        applicationProperties: { [SIGNATURE_PROPERTY]: signOutcome(this.#linkKey, body), vm: outcome.vm },
      });
    } catch (err) {
      this.#o.logger.warn(
        { ...errorFields(err), code: 'INBOX_REPLY_FAILED', messageId: m.messageId },
        'approval inbox: could not publish the outcome',
      );
    }
  }
}
