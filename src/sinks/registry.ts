/**
 * The sink registry: every sink type the bridge knows. Modules here must stay cheap to import;
 * a sink whose client library is heavy loads it inside `create`.
 */
import type { BridgeEvent, Preview, SinkConfigBase, SinkModule } from './contract.ts';
import { configSchema as moduleConfig, externalSinkModule, loadExternalSink, type ModuleSinkConfig } from './external.ts';
import { configSchema as stdoutConfig, stdoutSink } from '../../sinks/stdout.ts';
import { configSchema as fileConfig, fileSink } from '../../sinks/file.ts';
import { configSchema as webhookConfig, webhookSink } from '../../sinks/webhook/index.ts';
import { configSchema as eventHubsConfig, eventHubsSink } from '../../sinks/eventhubs.ts';
import { configSchema as serviceBusConfig, serviceBusSink } from '../../sinks/servicebus.ts';
import { configSchema as slackConfig, slackSink } from '../../sinks/slack.ts';
import { configSchema as teamsConfig, teamsSink } from '../../sinks/teams.ts';
import { configSchema as execConfig, execSink } from '../../sinks/exec.ts';
import { configSchema as eventGridConfig, eventGridSink } from '../../sinks/eventgrid.ts';
import { configSchema as probeConfig, probeSink } from '../../sinks/probe.ts';
import { configSchema as kubernetesConfig, kubernetesSink } from '../../sinks/kubernetes/index.ts';

const MODULES = [
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
] as unknown as readonly SinkModule[];

/** The config schema of every sink, in the order of MODULES (the `type` key tells them apart). */
export const SINK_CONFIG_SCHEMAS = [
  webhookConfig,
  eventHubsConfig,
  serviceBusConfig,
  eventGridConfig,
  slackConfig,
  teamsConfig,
  execConfig,
  stdoutConfig,
  fileConfig,
  probeConfig,
  kubernetesConfig,
  moduleConfig,
] as const;

export const SINK_TYPES: readonly string[] = [...MODULES.map((m) => m.type), 'module'];

/** builtIn is the built-in module of a sink type, or undefined (type: module, or a type that does not exist). */
const builtIn = (type: unknown): SinkModule | undefined => MODULES.find((m) => m.type === type);

function sinkModule(type: string): SinkModule {
  const found = builtIn(type);
  if (found === undefined) throw new Error(`unknown sink type ${type}`);
  return found;
}

/** sinkModuleOf finds the module of a configured sink: a built-in one, or an external one (`type: module`) loaded now. */
export async function sinkModuleOf(config: SinkConfigBase): Promise<SinkModule> {
  if (config.type !== 'module') return sinkModule(config.type);
  return externalSinkModule(await loadExternalSink((config as ModuleSinkConfig).module));
}

/** preparesTheVm: the sink is a preparation (`prepare: true`), or one that prepares and gives the VM back (probe, kubernetes). */
export function preparesTheVm(config: SinkConfigBase): boolean {
  if ((config as { prepare?: unknown }).prepare === true) return true;
  return builtIn(config.type)?.undoes === true;
}

/** sinkProblems: what the sinks' own checks find in the raw configuration beyond the schema, each by its path. */
export async function sinkProblems(sinks: readonly unknown[]): Promise<string[]> {
  const problems: string[] = [];
  for (const [i, raw] of sinks.entries()) {
    if (raw === null || typeof raw !== 'object') continue;
    const m = builtIn((raw as { type?: unknown }).type);
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
  const m = builtIn(config.type);
  return m?.preview === undefined ? null : m.preview(config, approvalUrl);
}
