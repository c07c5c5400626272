/**
 * Drills: one maintenance played for this VM as if IMDS had listed it. A drill is an event of its
 * own in every IMDS read the bridge makes (the overlay below), so it goes through the same diff,
 * store, routing, filters, sinks and approvals as a real one: Scheduled until it is approved or
 * its NotBefore comes, then Started for its duration, then gone (completed); or gone while
 * Scheduled (canceled). Its EventId starts `drill-`, which no IMDS EventId (a GUID) can, so
 * neither it nor its CloudEvent ids can ever equal a real event's. A real event for this VM
 * ends a drill at once, in the same read that brings it.
 */
import { randomUUID } from 'node:crypto';
import type { EventsDocument, ScheduledEvent } from '../imds/wire.ts';
import { affects } from '../imds/identity.ts';
import { BridgeError } from '../lib/errors.ts';
import { DRILL_PREFIX, isDrill } from '../imds/drill-id.ts';

export const DRILL_TYPES = ['Reboot', 'Redeploy', 'Freeze', 'Preempt', 'Terminate'] as const;

export interface DrillRequest {
  readonly type: (typeof DRILL_TYPES)[number];
  /** From the drill's start to its NotBefore. */
  readonly noticeMs: number;
  /** How long it stays Started. */
  readonly durationMs: number;
  readonly source: 'Platform' | 'User';
  /** Only these sinks get its CloudEvents; null: every sink whose filter passes them. */
  readonly sinks: readonly string[] | null;
  /** rehearse: preparations say what they would do; real: they do it, and give it back at the end. */
  readonly prepare: 'rehearse' | 'real';
  /** complete: Started, then completed; cancel: canceled while Scheduled, at NotBefore. */
  readonly end: 'complete' | 'cancel';
}

export type DrillEnd = 'completed' | 'canceled' | 'ended by a real event' | 'ended by hand';

export interface DrillState {
  readonly eventId: string;
  readonly request: DrillRequest;
  readonly vmName: string;
  readonly createdAt: number;
  readonly notBefore: number;
  /** When a read first listed it (Scheduled): it starts no earlier than the read after. */
  readonly listedAt: number | null;
  /** When it became Started (approved, or NotBefore reached). */
  readonly startedAt: number | null;
  readonly endedAt: number | null;
  readonly ended: DrillEnd | null;
  /** When an approval for it reached the point where StartRequests would be posted (never posted). */
  readonly approvedAt: number | null;
}

/** DrillRefused: a drill that cannot start now (one plays, or a real event is pending): 409. */
export class DrillRefused extends BridgeError<'DRILL_REFUSED'> {
  readonly status = 409;
  constructor(message: string) {
    super('DRILL_REFUSED', message);
  }
}

export class Drills {
  #current: DrillState | null = null;
  /** The last document read showed the drill as it was: false when it changed since. */
  #shown = true;
  readonly #now: () => number;
  readonly #listeners: ((drill: DrillState) => void)[] = [];

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** onChange: called with the drill after each change of its state. */
  onChange(listener: (drill: DrillState) => void): void {
    this.#listeners.push(listener);
  }

  current(): DrillState | null {
    return this.#current;
  }

  /** active: a drill is being played (not ended). */
  get active(): boolean {
    return this.#current !== null && this.#current.ended === null;
  }

  /** A read must fetch the whole document: the drill changed since the last one showed it. */
  get stale(): boolean {
    return !this.#shown;
  }

  /** start begins a drill for `vmName`, refused while one runs or a real event is listed for this VM. */
  start(request: DrillRequest, vmName: string, listed: readonly ScheduledEvent[], before?: (eventId: string) => void): DrillState {
    if (this.active) throw new DrillRefused(`drill ${this.#current!.eventId} is being played; one drill at a time`);
    const real = listed.filter((e) => !isDrill(e.eventId) && affects(e.resources, vmName));
    if (real.length > 0)
      throw new DrillRefused(
        `a real event is pending for this VM (${real.map((e) => `${e.eventType} ${e.eventId}`).join(', ')}); no drill now`,
      );
    const now = this.#now();
    const eventId = `${DRILL_PREFIX}${randomUUID()}`;
    before?.(eventId);
    this.#set({
      eventId,
      request,
      vmName,
      createdAt: now,
      notBefore: now + request.noticeMs,
      listedAt: null,
      startedAt: null,
      endedAt: null,
      ended: null,
      approvedAt: null,
    });
    return this.#current!;
  }

  /** endNow ends the drill being played: completed once Started, else canceled. */
  endNow(): DrillState | null {
    const d = this.#current;
    if (d === null || d.ended !== null) return null;
    this.#end(d, 'ended by hand');
    return this.#current;
  }

  /** approved: StartRequests would be posted for `eventId` now; true when it is the drill's (and nothing is posted). */
  approved(eventId: string): boolean {
    if (!isDrill(eventId)) return false;
    const d = this.#current;
    if (d?.eventId === eventId && d.ended === null && d.approvedAt === null) this.#set({ ...d, approvedAt: this.#now() });
    return true;
  }

  /**
   * overlay: the document IMDS answered, with the drill's event in it as it is now. A real event
   * for this VM in `read` ends the drill in this very read.
   */
  overlay(read: EventsDocument, vmName: string): EventsDocument {
    this.#advance(read, vmName);
    const first = this.#current;
    if (first !== null && first.ended === null && first.listedAt === null) this.#set({ ...first, listedAt: this.#now() });
    this.#shown = true;
    const d = this.#current;
    if (d === null || d.ended !== null) return read;
    return { incarnation: read.incarnation, events: [...read.events, eventOf(d)] };
  }

  #advance(read: EventsDocument, vmName: string): void {
    const d = this.#current;
    if (d === null || d.ended !== null) return;
    const now = this.#now();
    if (read.events.some((e) => !isDrill(e.eventId) && affects(e.resources, vmName))) return this.#end(d, 'ended by a real event');
    // listed Scheduled in one read at least, as every maintenance with notice is
    if (d.listedAt === null) return;
    if (d.startedAt === null) {
      if (d.approvedAt === null && now < d.notBefore) return;
      if (d.request.end === 'cancel') return this.#end(d, 'canceled');
      this.#set({ ...d, startedAt: now });
      return;
    }
    if (now >= d.startedAt + d.request.durationMs) this.#end(d, 'completed');
  }

  #end(d: DrillState, how: DrillEnd): void {
    this.#set({ ...d, ended: how, endedAt: this.#now() });
  }

  #set(d: DrillState): void {
    this.#current = d;
    this.#shown = false;
    for (const l of this.#listeners) l(d);
  }
}

/** eventOf: the drill as IMDS would list it. */
function eventOf(d: DrillState): ScheduledEvent {
  const started = d.startedAt !== null;
  const notBefore = started ? null : new Date(Math.floor(d.notBefore / 1000) * 1000).toISOString().replace('.000Z', 'Z');
  const description = `se-bridge drill: a rehearsal of a ${d.request.type}; nothing is asked of Azure`;
  const raw = {
    EventId: d.eventId,
    EventType: d.request.type,
    ResourceType: 'VirtualMachine',
    Resources: [d.vmName],
    EventStatus: started ? 'Started' : 'Scheduled',
    NotBefore: notBefore === null ? '' : new Date(notBefore).toUTCString(),
    Description: description,
    EventSource: d.request.source,
    DurationInSeconds: Math.round(d.request.durationMs / 1000),
  };
  return {
    eventId: d.eventId,
    eventType: d.request.type,
    eventStatus: raw.EventStatus,
    resourceType: 'VirtualMachine',
    resources: [d.vmName],
    notBefore,
    description,
    eventSource: d.request.source,
    durationInSeconds: raw.DurationInSeconds,
    raw,
  };
}
