/**
 * ApprovalService is the one path every approval takes — policy, preparation hooks, the API,
 * an approval link, a Slack button, the CLI: the event must be Scheduled in the latest
 * document; StartRequests goes to IMDS (through the shared rate budget, transient failures
 * retried); the approval is recorded with who, how and when; and exactly one `approved`
 * CloudEvent is emitted. A second approval of the same event is a no-op that says so.
 */
import type { Calendar, Within } from '../calendar/calendar.ts';
import { isDrill } from '../imds/drill-id.ts';
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { BridgeError, errorFields } from '../lib/errors.ts';
import { toApprovedCloudEvent, type BridgeEvent } from '../pipeline/cloudevent.ts';
import type { ImdsClient } from '../imds/client.ts';
import type { ScheduledEvent } from '../imds/wire.ts';
import { ImdsError, noted, startFailed } from '../imds/errors.ts';
import { retryImds } from '../imds/retry.ts';
import type { ApprovalRecord, Approvals, Journal, PendingEvent } from '../store/store.ts';
import type { BridgeView } from '../imds/view.ts';
import type { HoldReason } from '../observability/fleet-metrics.ts';

export type ApprovalErrorCode = 'UNKNOWN_EVENT' | 'NOT_APPROVABLE' | 'IMDS_REFUSED' | 'HELD' | 'FLEET_STORE_UNAVAILABLE' | 'BLACKOUT';

const STATUS = {
  UNKNOWN_EVENT: 404,
  NOT_APPROVABLE: 409,
  HELD: 409,
  IMDS_REFUSED: 502,
  FLEET_STORE_UNAVAILABLE: 503,
  BLACKOUT: 409,
} as const;

/** Who holds a fleet budget's slots, as a held approval names them. */
export interface SlotHolder {
  readonly vm: string;
  readonly eventId: string | null;
  readonly since: string | null;
}

/** A member of the group that counts as unavailable without a slot (not healthy), as a held approval names it. */
export interface UnhealthyMember {
  readonly vm: string;
  readonly since: string;
  readonly why: string;
}

/** ApprovalError carries the HTTP status the API answers with, and for a held approval who holds the slots and who is not healthy. */
export class ApprovalError extends BridgeError<ApprovalErrorCode> {
  readonly status: (typeof STATUS)[ApprovalErrorCode];
  readonly holders: readonly SlotHolder[];
  readonly unhealthy: readonly UnhealthyMember[];
  /** For a held automatic approval, how soon to ask again (ms) when the gate says so (0: at the next IMDS read); else its retryMs. */
  readonly againMs: number | undefined;
  /** What holds it: a blackout the calendar; HELD the brake that says so (else the budget); null when nothing does (a store not answering). */
  readonly reason: HoldReason | null;
  constructor(
    code: ApprovalErrorCode,
    message: string,
    cause?: unknown,
    holders: readonly SlotHolder[] = [],
    unhealthy: readonly UnhealthyMember[] = [],
    againMs?: number,
    reason?: HoldReason,
  ) {
    super(code, message, { cause });
    this.status = STATUS[code];
    this.holders = holders;
    this.unhealthy = unhealthy;
    this.againMs = againMs;
    this.reason = code === 'BLACKOUT' ? 'calendar' : code === 'HELD' ? (reason ?? 'budget') : null;
  }

  /** held: the fleet budget (no slot free, or its store cannot be reached) or a blackout of the calendar holds the approval. */
  get held(): boolean {
    return this.code === 'HELD' || this.code === 'FLEET_STORE_UNAVAILABLE' || this.code === 'BLACKOUT';
  }

  /** body: the JSON answer of the approval API. */
  body(eventId: string): Record<string, unknown> {
    const error = { code: this.code, message: this.message };
    return this.held
      ? {
          eventId,
          status: 'held',
          holders: this.holders.map(({ vm, eventId: e, since }) => ({ vm, eventId: e, since })),
          ...(this.unhealthy.length === 0 ? {} : { unhealthy: this.unhealthy.map(({ vm, since, why }) => ({ vm, since, why })) }),
          error,
        }
      : { error };
  }
}

/** What a fleet budget granted: a slot (or none when forced past an unreachable store), and whether past the budget. */
export interface Grant {
  readonly forced: boolean;
  readonly slot: string | null;
  readonly note?: string;
}

/**
 * ApprovalGate: what an early approval must pass first (the fleet budget). `take` grants, or
 * throws ApprovalError HELD / FLEET_STORE_UNAVAILABLE; `abandon` gives back a grant whose
 * StartRequests IMDS then refused.
 */
export interface ApprovalGate {
  take(event: ScheduledEvent, request: ApprovalRequest): Promise<Grant>;
  abandon(eventId: string): Promise<void>;
}

export interface ApprovalRequest {
  readonly by: string;
  /** policy | hooks | api | link | slack | cli */
  readonly via: string;
  readonly reason?: string;
  /** Past a fleet budget or a blackout, on the record (a person's decision; never a policy's). */
  readonly force?: boolean;
  /** How the policy's rule is bound by the calendar (always: not by its blackouts); a person's approval is bound by blackouts. */
  readonly within?: Within;
}

export interface ApprovalResult {
  readonly eventId: string;
  readonly status: 'approved' | 'already-approved';
  readonly by: string;
  readonly via: string;
  readonly at: string;
  /** Approved past the fleet budget. */
  readonly forced?: boolean;
  /** What the fleet budget says of a forced approval (how many members go down, a store that did not answer). */
  readonly warning?: string;
  /** What a forced approval went past: "the fleet budget", "the blackout year-end". */
  readonly past?: readonly string[];
}

export interface ApprovalServiceOptions {
  /** Who approved what. */
  records: Approvals;
  /** Which events this VM has seen (an unknown EventId is a 404, a known one no longer listed a 409). */
  journal: Journal;
  client: ImdsClient;
  logger: Logger;
  /** The read model: who this VM is, the latest IMDS document. */
  view: BridgeView;
  /** Routes the `approved` CloudEvent to its sinks; called before IMDS is told anything, so it may throw. */
  route: (event: BridgeEvent) => PendingEvent;
  /** Journals the routed `approved` CloudEvent with the approval record (one transaction). */
  emit: (event: BridgeEvent, routed: PendingEvent, record: ApprovalRecord) => void;
  dryRun?: boolean;
  /** The fleet budget every early approval must pass first, when one is configured. */
  gate?: ApprovalGate;
  /** The calendar, whose blackouts hold every early approval but a forced one. */
  calendar?: Calendar;
  /** The clock the calendar is read on (tests set it). */
  now?: () => number;
  /** Called with every approval attempt's result, for metrics (`held`: what holds it, when something does). */
  onResult?: (via: string, result: string, eventId: string, held: HoldReason | null) => void;
}

/** StartRequests is tried 4 times within a few seconds: a human or a policy is waiting on the answer. */
const START_RETRY = { intervalMs: 250, maxPauseMs: 2000, maxAttempts: 4 };

export class ApprovalService {
  readonly #o: ApprovalServiceOptions;
  readonly #inFlight = new Map<string, Promise<ApprovalResult>>();

  constructor(options: ApprovalServiceOptions) {
    this.#o = options;
  }

  /** check tells what approve would do, without doing it: throws the same errors. */
  check(eventId: string): { alreadyApproved: ApprovalResult | null } {
    const done = this.#o.records.of(eventId);
    if (done !== null) return { alreadyApproved: { eventId, status: 'already-approved', by: done.by, via: done.via, at: done.at } };
    this.#scheduledEvent(eventId);
    return { alreadyApproved: null };
  }

  async approve(eventId: string, request: ApprovalRequest, signal?: AbortSignal): Promise<ApprovalResult> {
    const running = this.#inFlight.get(eventId);
    // a person's forced approval never waits behind another attempt (a policy's, held up by the
    // fleet store): it goes its own way, and whichever is recorded first is the approval
    if (running !== undefined && request.force !== true) {
      const first = await running;
      return { ...first, status: 'already-approved' };
    }
    const p = this.#approve(eventId, request, signal);
    if (running === undefined) this.#inFlight.set(eventId, p);
    try {
      const r = await p;
      this.#o.onResult?.(request.via, r.status, eventId, null);
      return r;
    } catch (err) {
      this.#o.onResult?.(request.via, (err as ApprovalError).code ?? 'error', eventId, err instanceof ApprovalError ? err.reason : null);
      throw err;
    } finally {
      if (this.#inFlight.get(eventId) === p) this.#inFlight.delete(eventId);
    }
  }

  #scheduledEvent(eventId: string) {
    const doc = this.#o.view.document;
    const event = doc?.events.find((e) => e.eventId === eventId);
    if (event === undefined) {
      if (this.#o.journal.knowsEvent(eventId)) throw new ApprovalError('NOT_APPROVABLE', `event ${eventId} is no longer listed by IMDS`);
      throw new ApprovalError('UNKNOWN_EVENT', `no event ${eventId} is known to this VM`);
    }
    if (event.eventStatus !== 'Scheduled')
      throw new ApprovalError('NOT_APPROVABLE', `event ${eventId} is ${event.eventStatus}, not Scheduled`);
    return { event, incarnation: doc!.incarnation };
  }

  async #approve(eventId: string, request: ApprovalRequest, signal?: AbortSignal): Promise<ApprovalResult> {
    const { records, logger } = this.#o;
    const done = records.of(eventId);
    if (done !== null) return { eventId, status: 'already-approved', by: done.by, via: done.via, at: done.at };
    const { event, incarnation } = this.#scheduledEvent(eventId);
    const fields = { eventId, by: request.by, via: request.via };
    if (this.#o.dryRun) {
      logger.info(fields, 'dry run: would approve (POST StartRequests)');
      return { eventId, status: 'approved', by: request.by, via: request.via, at: new Date().toISOString() };
    }
    // The record and the `approved` CloudEvent are built and routed first: IMDS is never told
    // about an approval that could then not be recorded and reported.
    // a blackout holds every early approval (a forced one goes past it, on the record); a drill is never held
    const blackout = this.#blackout(eventId, request);
    // the fleet budget next: no slot, no early approval (a forced one goes past it, on the record)
    // a drill never takes a slot: it would hold back a real maintenance of another member
    const gate = isDrill(eventId) ? undefined : this.#o.gate;
    const grant = gate === undefined ? null : await gate.take(event, request);
    // another attempt (a forced one beside a held-up policy's) may have been recorded while this one waited
    const meanwhile = records.of(eventId);
    if (meanwhile !== null) return { eventId, status: 'already-approved', by: meanwhile.by, via: meanwhile.via, at: meanwhile.at };
    const forced = grant?.forced === true || blackout !== null;
    const at = new Date().toISOString();
    const recordId = createHash('sha256').update(`${request.by}\n${request.via}\n${at}`).digest('hex').slice(0, 12);
    const reason = [request.reason ?? '', blackout ?? '', grant?.note ?? ''].filter(Boolean).join('; ');
    const approval = { by: request.by, via: request.via, at, ...(forced ? { forced: true as const, ...(reason ? { reason } : {}) } : {}) };
    const ce = toApprovedCloudEvent(event, incarnation, approval, recordId, { vm: this.#o.view.vm, observedAt: at });
    const record: ApprovalRecord = { eventId, by: request.by, via: request.via, reason, at, ceId: ce.id };
    let routed: PendingEvent;
    const asked = { unanswered: false };
    try {
      routed = this.#o.route(ce);
      await this.#startRequest(eventId, asked, signal);
    } catch (err) {
      // a StartRequests IMDS may have taken (its answer never came) keeps its slot: the maintenance may be going on
      if (gate !== undefined && grant !== null && !asked.unanswered) await gate.abandon(eventId);
      throw err;
    }
    this.#o.emit(ce, routed, record);
    logger.info(
      { ...fields, transition: 'approved', ceId: ce.id, ...(grant === null ? {} : { slot: grant.slot, forced }) },
      'event approved',
    );
    return {
      eventId,
      status: 'approved',
      by: request.by,
      via: request.via,
      at,
      ...(forced
        ? {
            forced,
            past: [...(grant?.forced ? ['the fleet budget'] : []), ...(blackout === null ? [] : [blackout.slice('inside '.length)])],
          }
        : {}),
      ...(grant?.note ? { warning: grant.note } : {}),
    };
  }

  /**
   * blackout: null outside a blackout (or for a drill, or a rule bound `always`); inside one, an
   * approval is held (BLACKOUT), and a forced one goes on with what it went past, for the record.
   */
  #blackout(eventId: string, request: ApprovalRequest): string | null {
    const calendar = this.#o.calendar;
    if (calendar === undefined || isDrill(eventId) || request.within === 'always') return null;
    const now = (this.#o.now ?? Date.now)();
    const name = calendar.stateAt(now).blackout;
    if (name === null) return null;
    const until = calendar.blackoutEnd(now);
    const ends = until === null ? '' : ` until ${new Date(until).toISOString()}`;
    if (request.force !== true)
      throw new ApprovalError(
        'BLACKOUT',
        `no early approval inside the blackout ${name}${ends} (${calendar.config.timeZone}); the maintenance starts at NotBefore, or a person forces it with a reason`,
      );
    return `inside the blackout ${name}`;
  }

  async #startRequest(eventId: string, asked: { unanswered: boolean }, signal?: AbortSignal): Promise<void> {
    try {
      await retryImds(() => noted(asked, this.#o.client.startEvents([eventId], { signal })), { ...START_RETRY, signal });
    } catch (err) {
      const [said, what] = startFailed(asked.unanswered);
      this.#o.logger.error({ eventId, ...errorFields(err) }, said);
      throw new ApprovalError('IMDS_REFUSED', `${what}: ${(err as ImdsError).code ?? (err as Error).message}`, err);
    }
  }
}
