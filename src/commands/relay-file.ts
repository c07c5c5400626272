/**
 * The relay's configuration file, as the verbs that read it load it (`relay`, `validate --relay`,
 * `fleet status --relay-config`): apart from the relay's service, so a verb that only reads the
 * file loads none of it.
 */
import { loadFileWith, RELAY_PLACES, resolveConfigPath, type Needs } from '../config/load.ts';
import { RelayConfig } from '../relay/config.ts';
import { reportProblems, type ConfigValues } from './common.ts';

/**
 * loadRelayOrReport: a relay's configuration (--config, else $SE_BRIDGE_RELAY_CONFIG, else
 * config/relay.yaml), its secrets from the environment over --env-file, resolving only what the
 * verb `uses` (default: everything); null when it has problems (each said on stderr, by its path).
 */
export async function loadRelayOrReport(values: ConfigValues, uses?: Needs): Promise<{ config: RelayConfig; path: string } | null> {
  return reportProblems(values, (env) => {
    const path = resolveConfigPath(values.config, process.env, RELAY_PLACES);
    return { config: loadFileWith(RelayConfig, path, env, uses === undefined ? {} : { needs: uses }), path };
  });
}
