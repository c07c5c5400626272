/**
 * How the relay approves through a member's bridge, for every way a person asks (the API, a
 * link, Slack, the console): an Ed25519-signed command bound to one VM, one EventId and an
 * expiry, sent on the VM's session of the inbox queue, and the VM's signed outcome when it
 * comes within the wait. One path, so the checks are the same whoever asks.
 */
import type { Logger } from 'pino';
import { errorFields } from '../lib/errors.ts';
import { sessionFor, type ApprovalCommand, type CommandOutcome } from '../fleet/keys.ts';
import { HttpError } from '../approval/requests.ts';
import type { TokenClaims } from '../approval/signatures.ts';
import type { RelayBus } from './bus.ts';
import type { RelayConfig } from './config.ts';

/** The HTTP status of an outcome, for the API and the pages. */
export function statusOf(o: CommandOutcome): number {
  if (o.outcome === 'approved' || o.outcome === 'already-approved') return 200;
  if (o.code === 'UNKNOWN_EVENT') return 404;
  if (o.code === 'TOKEN_USED') return 410;
  if (o.code === 'FLEET_STORE_UNAVAILABLE') return 503;
  return 409;
}

/** What a command asks: who, how, why, and whether past the budget (the console's, with a reason). */
export interface Asked {
  readonly vm: string;
  readonly id: string;
  readonly eventId: string;
  readonly by: string;
  readonly via: ApprovalCommand['via'];
  readonly reason: string;
  readonly token?: TokenClaims | null;
  readonly force?: boolean;
}

export class RelayCommands {
  readonly #config: RelayConfig;
  readonly #bus: RelayBus | null;
  readonly #logger: Logger;

  constructor(config: RelayConfig, bus: RelayBus | null, logger: Logger) {
    [this.#config, this.#bus, this.#logger] = [config, bus, logger];
  }

  /** bus: Service Bus, or the answer of a relay without it. */
  bus(): RelayBus {
    if (this.#bus === null)
      throw new HttpError(
        404,
        'NOT_FOUND',
        'approvals to members go through Service Bus, and this relay has none: set serviceBus, signingKey and fleetKey in its configuration (it serves the fleet view, and approvals via arm when azure is set)',
      );
    return this.#bus;
  }

  /** command: the command for `a`, expiring after commandTtlSeconds (never after its link). */
  command(a: Asked): ApprovalCommand {
    const now = Math.floor(Date.now() / 1000);
    const exp = Math.min(now + this.#config.commandTtlSeconds, a.token?.x ?? Number.MAX_SAFE_INTEGER);
    const force = a.force === true ? { force: true as const } : {};
    return {
      v: 1,
      id: a.id,
      vm: sessionFor(a.vm),
      eventId: a.eventId,
      by: a.by,
      via: a.via,
      reason: a.reason,
      ...force,
      nonce: a.token?.n ?? null,
      iat: now,
      exp,
    };
  }

  /** send: the VM's outcome, or null when it did not come within `waitMs`; 503 when Service Bus cannot take it. */
  async send(command: ApprovalCommand, waitMs: number): Promise<CommandOutcome | null> {
    const bus = this.bus();
    try {
      return await bus.send(command, waitMs);
    } catch (err) {
      this.#logger.warn(
        { ...errorFields(err), code: 'RELAY_SEND_FAILED', vm: command.vm, commandId: command.id },
        'relay: could not send the approval command',
      );
      throw new HttpError(
        503,
        'SERVICE_BUS_UNAVAILABLE',
        'the approval could not be passed on; try again (the same request is applied once)',
        {
          trackingId: command.id,
          vm: command.vm,
        },
      );
    }
  }
}
