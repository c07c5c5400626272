/**
 * The sink registry: every sink type the bridge knows. Modules here must stay cheap to import;
 * a sink whose client library is heavy loads it inside `create`.
 */
import type { SinkModule } from './contract.ts';
import { configSchema as stdoutConfig, stdoutSink } from './stdout.ts';
import { configSchema as fileConfig, fileSink } from './file.ts';
import { configSchema as webhookConfig, webhookSink } from './webhook.ts';
import { configSchema as eventHubsConfig, eventHubsSink } from './eventhubs.ts';
import { configSchema as serviceBusConfig, serviceBusSink } from './servicebus.ts';
import { configSchema as slackConfig, slackSink } from './slack.ts';
import { configSchema as teamsConfig, teamsSink } from './teams.ts';
import { configSchema as execConfig, execSink } from './exec.ts';

const MODULES = [webhookSink, eventHubsSink, serviceBusSink, slackSink, teamsSink, execSink, stdoutSink, fileSink] as unknown as readonly SinkModule[];

/** The config schema of every sink, in the order of MODULES (the `type` key tells them apart). */
export const SINK_CONFIG_SCHEMAS = [webhookConfig, eventHubsConfig, serviceBusConfig, slackConfig, teamsConfig, execConfig, stdoutConfig, fileConfig] as const;

export const SINK_TYPES: readonly string[] = MODULES.map((m) => m.type);

export function sinkModule(type: string): SinkModule {
  const found = MODULES.find((m) => m.type === type);
  if (found === undefined) throw new Error(`unknown sink type ${type}`);
  return found;
}
