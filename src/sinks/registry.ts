/**
 * The sink registry: every sink type the bridge knows. Modules here must stay cheap to import;
 * a sink whose client library is heavy loads it inside `create`.
 */
import type { SinkConfigBase, SinkModule } from './contract.ts';
import { configSchema as moduleConfig, externalSinkModule, loadExternalSink, type ModuleSinkConfig } from './external.ts';
import { configSchema as stdoutConfig, stdoutSink } from './stdout.ts';
import { configSchema as fileConfig, fileSink } from './file.ts';
import { configSchema as webhookConfig, webhookSink } from './webhook.ts';
import { configSchema as eventHubsConfig, eventHubsSink } from './eventhubs.ts';
import { configSchema as serviceBusConfig, serviceBusSink } from './servicebus.ts';
import { configSchema as slackConfig, slackSink } from './slack.ts';
import { configSchema as teamsConfig, teamsSink } from './teams.ts';
import { configSchema as execConfig, execSink } from './exec.ts';
import { configSchema as eventGridConfig, eventGridSink } from './eventgrid.ts';
import { configSchema as probeConfig, probeSink } from './probe.ts';
import { configSchema as kubernetesConfig, kubernetesSink } from './kubernetes.ts';

const MODULES = [webhookSink, eventHubsSink, serviceBusSink, eventGridSink, slackSink, teamsSink, execSink, stdoutSink, fileSink, probeSink, kubernetesSink] as unknown as readonly SinkModule[];

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

function sinkModule(type: string): SinkModule {
  const found = MODULES.find((m) => m.type === type);
  if (found === undefined) throw new Error(`unknown sink type ${type}`);
  return found;
}

/** sinkModuleOf finds the module of a configured sink: a built-in one, or an external one (`type: module`) loaded now. */
export async function sinkModuleOf(config: SinkConfigBase): Promise<SinkModule> {
  if (config.type !== 'module') return sinkModule(config.type);
  return externalSinkModule(await loadExternalSink((config as ModuleSinkConfig).module)) as unknown as SinkModule;
}

/** preparesTheVm: the sink is a preparation (`prepare: true`), or one that prepares and gives the VM back (probe, kubernetes). */
export function preparesTheVm(config: SinkConfigBase): boolean {
  if ((config as { prepare?: unknown }).prepare === true) return true;
  return MODULES.find((m) => m.type === config.type)?.undoes === true;
}
