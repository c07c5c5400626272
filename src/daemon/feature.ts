/**
 * The seam through which a feature attaches to the daemon: the drills (drill/attach.ts), the
 * fleet budget (fleet/budget/attach.ts) and the approval inbox (fleet/inbox/attach.ts). compose
 * builds the core (IMDS client, router, dispatcher, approvals, poll loop, auto-approver,
 * endpoints) and calls each hook a feature has; it never asks which feature it holds.
 *
 * A feature's folder stands below daemon/, so its attach function does not import this file: it
 * returns an object of this shape, and compose's `Feature[]` checks it. A hook is added here only
 * when a second feature needs it (the IMDS client and the routing rule have one user, the drills,
 * and are the exceptions the daemon cannot do without).
 */
import type { ApprovalGate, ApprovalService } from '../approval/service.ts';
import type { OutcomeReport } from '../delivery/dispatcher.ts';
import type { ImdsClient, ImdsClientOptions } from '../imds/client.ts';
import type { EventsDocument } from '../imds/wire.ts';
import type { PendingEvent } from '../store/store.ts';

export interface Feature {
  /** Its key in /readyz's details. */
  readonly name: string;
  /** Makes the IMDS client every part uses (drills: one whose reads carry the drill). At most one feature has it. */
  readonly client?: (options: ImdsClientOptions) => ImdsClient;
  /** Changes where a routed CloudEvent goes (drills: a drill's go only to the sinks it names). */
  readonly route?: (routed: PendingEvent) => PendingEvent;
  /**
   * What an early approval must pass first (the fleet budget), how soon one it held is asked again,
   * and whom it tells when one it held may be granted now (a slot given back: ask again at once).
   */
  readonly gate?: ApprovalGate & { readonly retryMs: number; readonly onWake?: (listener: () => void) => void };
  /** Every good IMDS read, changed or not. */
  onRead?(document: EventsDocument): void;
  /** Every delivery's outcome. */
  onOutcome?(report: OutcomeReport): void;
  /** Its state in /readyz's details; null says nothing. */
  details?(): unknown;
  /** Called once the core exists and its HTTP endpoints listen, before the first poll. */
  start?(daemon: Daemon): Promise<void>;
  /** Its loop, until `signal` aborts (the daemon stopping). */
  run?(signal: AbortSignal): Promise<void>;
  /** Closes what it opened, before its loop is awaited. */
  close?(): Promise<void>;
}

/** What a feature is given at start: the daemon's core parts it may use. */
export interface Daemon {
  readonly approvals: ApprovalService;
}
