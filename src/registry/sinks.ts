/**
 * The sink registry: every sink type the bridge knows, in one list. The configuration's union of
 * sink schemas, the type names, the error catalogue and the module of each configured sink all
 * come from it (register.ts). Modules here must stay cheap to import; a sink whose client
 * library is heavy loads it inside `create`.
 */
import type { BridgeEvent, Preview, Rehearsal, RehearsalOptions, SinkConfigBase, SinkModule } from '../sinks/contract.ts';
import { moduleSink } from './external.ts';
import { registerSinks } from './register.ts';
import { stdoutSink } from '../../sinks/stdout/index.ts';
import { fileSink } from '../../sinks/file/index.ts';
import { webhookSink } from '../../sinks/webhook/index.ts';
import { eventHubsSink } from '../../sinks/eventhubs/index.ts';
import { serviceBusSink } from '../../sinks/servicebus/index.ts';
import { slackSink } from '../../sinks/slack/index.ts';
import { teamsSink } from '../../sinks/teams/index.ts';
import { execSink } from '../../sinks/exec/index.ts';
import { eventGridSink } from '../../sinks/eventgrid/index.ts';
import { probeSink } from '../../sinks/probe/index.ts';
import { kubernetesSink } from '../../sinks/kubernetes/index.ts';

/** The list: adding a sink type is its folder under sinks/ and one line here. */
export const SINK_MODULES = [
  webhookSink,
  eventHubsSink,
  serviceBusSink,
  eventGridSink,
  slackSink,
  teamsSink,
  execSink,
  stdoutSink,
  fileSink,
  probeSink,
  kubernetesSink,
  moduleSink,
] as const;

export const SINKS = registerSinks(SINK_MODULES);

/** The config schema of every sink, in the order of the list (the `type` key tells them apart). */
export const SINK_CONFIG_SCHEMAS = SINKS.schemas;
export const SINK_TYPES: readonly string[] = SINKS.types;
/** Every stable code the bridge speaks in: the core's and each sink's. */
export const ERROR_CODES = SINKS.codes;

/** sinkModuleOf is the module of a configured sink. */
export function sinkModuleOf(config: SinkConfigBase): SinkModule {
  const found = SINKS.find(config.type);
  if (found === undefined) throw new Error(`unknown sink type ${config.type}`);
  return found;
}

/** sinkProblems: what the sinks' own checks find in the raw configuration beyond the schema, each by its path. */
export async function sinkProblems(sinks: readonly unknown[]): Promise<string[]> {
  const problems: string[] = [];
  for (const [i, raw] of sinks.entries()) {
    if (raw === null || typeof raw !== 'object') continue;
    const m = SINKS.find((raw as { type?: unknown }).type);
    if (m?.problems === undefined) continue;
    problems.push(...(await m.problems(raw as Record<string, unknown>)).map((p) => `sinks[${i}].${p}`));
  }
  return problems;
}

/** previewOf: what a configured sink would send for each event, without sending, or null when it shows nothing. */
export async function previewOf(
  config: SinkConfigBase,
  approvalUrl: (event: BridgeEvent) => string | null,
): Promise<((event: BridgeEvent) => Promise<Preview>) | null> {
  const m = SINKS.find(config.type);
  return m?.preview === undefined ? null : m.preview(config, approvalUrl);
}

/** rehearsalOf: how a configured sink rehearses its preparation (SinkModule.rehearse), or null when it does not. */
export function rehearsalOf(config: SinkConfigBase): ((options: RehearsalOptions) => Promise<Rehearsal>) | null {
  const m = SINKS.find(config.type);
  return m?.rehearse === undefined ? null : (options) => m.rehearse!(config, options);
}

/** realDrillNoticeOf: the least notice a drill with real preparations needs for this sink (SinkModule.realDrillNotice), or null. */
export function realDrillNoticeOf(config: SinkConfigBase): { readonly seconds: number; readonly why: string } | null {
  const m = SINKS.find(config.type);
  return m?.realDrillNotice === undefined ? null : m.realDrillNotice(config);
}

/**
 * The part a sink plays in preparing the VM: `prepare` (a preparation hook) alone gates
 * `approveAfterHooks`; `undoes` (probe, kubernetes: it gives the VM back) is a routing fact.
 */
export interface PreparationRole {
  readonly prepare: boolean;
  readonly undoes: boolean;
  /** It acts on an Advisory too (SinkModule.advisories). */
  readonly advisories?: boolean;
}

/** roleOf is the part a configured sink plays in preparing the VM. */
export function roleOf(config: SinkConfigBase): PreparationRole {
  const m = sinkModuleOf(config);
  return {
    prepare: 'prepare' in config && config.prepare === true,
    undoes: m.undoes === true,
    advisories: m.advisories?.(config) === true,
  };
}

/** prepares is the one rule of what prepares the VM: a preparation hook, or a sink that prepares and gives the VM back. */
export const prepares = (role: PreparationRole): boolean => role.prepare || role.undoes;
