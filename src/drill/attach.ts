/**
 * attachDrill: the drills as a feature of the daemon (daemon/feature.ts). Its IMDS client carries
 * the drill's event in every read; a drill's CloudEvents go only to the sinks it names and are
 * logged for its report; the control channel (beside the state database, never in a dry run or
 * with the state in memory) starts, reports and ends drills.
 */
import type { Logger } from 'pino';
import { controlPath } from '../control/server.ts';
import type { OutcomeReport } from '../delivery/dispatcher.ts';
import type { ImdsClient, ImdsClientOptions } from '../imds/client.ts';
import { isDrill } from '../imds/drill-id.ts';
import type { BridgeView } from '../imds/view.ts';
import { realDrillNoticeOf } from '../registry/sinks.ts';
import type { DrillMode, SinkConfigBase } from '../sinks/contract.ts';
import type { ApprovalRecord, PendingEvent } from '../store/store.ts';
import { DrillClient } from './client.ts';
import { ControlServer } from './control.ts';
import { Drills } from './drills.ts';
import { DrillLog, type DrillPreparation } from './report.ts';

export interface DrillContext {
  readonly config: { readonly state: { readonly path: string }; readonly sinks: readonly SinkConfigBase[] };
  readonly dryRun: boolean;
  readonly logger: Logger;
  readonly state: BridgeView;
  /** What the preparations reported for an event. */
  readonly recorded: (eventId: string) => readonly DrillPreparation[];
  /** The approval recorded for an event. */
  readonly approvalOf: (eventId: string) => ApprovalRecord | null;
}

export function attachDrill(ctx: DrillContext) {
  const drills = new Drills();
  const log = new DrillLog();
  const path = ctx.config.state.path;
  const control =
    ctx.dryRun || path === ':memory:'
      ? null
      : new ControlServer({
          path: controlPath(path),
          statePath: path,
          drills,
          log,
          vmName: () => ctx.state.vm.name,
          listed: () => ctx.state.document?.events ?? [],
          sinks: ctx.config.sinks.map((c) => c.name),
          realNotice: ctx.config.sinks.flatMap((c) => {
            const n = realDrillNoticeOf(c);
            return n === null ? [] : [{ sink: c.name, ...n }];
          }),
          preparations: ctx.recorded,
          approval: (eventId) => {
            const r = ctx.approvalOf(eventId);
            return r === null ? null : { by: r.by, via: r.via, at: Date.parse(r.at) };
          },
          logger: ctx.logger,
        });
  return {
    name: 'drill',
    client: (options: ImdsClientOptions): ImdsClient => new DrillClient(options, drills, () => ctx.state.vm.name),
    /** A drill's CloudEvents go only to the sinks it names, and are logged for its report. */
    route: (p: PendingEvent): PendingEvent => {
      if (!isDrill(p.eventId)) return p;
      const only = drills.current()?.request.sinks ?? null;
      const routed = only === null ? p : { ...p, sinks: p.sinks.filter((s) => only.includes(s)) };
      log.routed(routed.eventId, routed.id, routed.transition, routed.sinks);
      return routed;
    },
    onOutcome: (report: OutcomeReport) => log.outcome(report),
    details: () => drills.current(),
    start: async () => control?.start(),
    close: async () => control?.close(),
    /** For the sinks: a drill's mode; a drill this process did not start (before a restart) can only end, so what it changed is given back. */
    sinkMode: (eventId: string): DrillMode | null => {
      const d = drills.current();
      return isDrill(eventId) ? { prepare: d?.eventId === eventId ? d.request.prepare : 'real' } : null;
    },
  };
}
