/**
 * se-bridge relay: the fleet's one approval endpoint (see approval/relay.ts). It reads its own
 * configuration file (--config, else $SE_BRIDGE_RELAY_CONFIG, else config/relay.yaml) and runs
 * until SIGINT or SIGTERM.
 */
import { RelayConfig, relaySecrets, startRelay } from '../approval/relay.ts';
import { ConfigError, loadFileWith } from '../config/load.ts';
import { errorFields } from '../lib/errors.ts';
import { createLogger, scrub } from '../lib/log.ts';
import { parseHostPort } from '../lib/validators.ts';
import { EXIT, onShutdown, parse } from './common.ts';

export async function main(argv: string[]): Promise<number> {
  const { values } = parse(argv, { config: { type: 'string', short: 'c' } });
  const path = values.config ?? process.env.SE_BRIDGE_RELAY_CONFIG ?? 'config/relay.yaml';
  let config: RelayConfig;
  try {
    config = loadFileWith(RelayConfig, path);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    return EXIT.usage;
  }
  const secrets = relaySecrets(config);
  const logger = createLogger({ level: config.log.level, destination: 'stdout', secrets });
  let resolveStop!: (signal: string) => void;
  const stopped = new Promise<string>((resolve) => (resolveStop = resolve));
  const detach = onShutdown((signal) => resolveStop(signal));
  let relay;
  try {
    relay = await startRelay(config, logger, parseHostPort(config.listen)!);
  } catch (err) {
    detach();
    logger.fatal(errorFields(err), 'cannot start');
    process.stderr.write(`se-bridge relay: ${scrub(errorFields(err).err, secrets)}\n`);
    return EXIT.failure;
  }
  const signal = await stopped;
  logger.info({ signal }, 'relay shutting down');
  await relay.close();
  detach();
  return EXIT.ok;
}
