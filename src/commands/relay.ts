/**
 * se-bridge relay: the fleet's one approval endpoint (see relay/relay.ts). It reads its own
 * configuration file (--config, else $SE_BRIDGE_RELAY_CONFIG, else config/relay.yaml), its
 * secrets from the environment over --env-file, and runs until SIGINT or SIGTERM.
 */
import { relayReadiness } from '../relay/bus.ts';
import { relaySecrets } from '../relay/config.ts';
import { startRelay } from '../relay/relay.ts';
import { ObservabilityServer } from '../observability/server.ts';
import { errorFields } from '../lib/errors.ts';
import { createLogger, scrub } from '../lib/log.ts';
import { CONFIG_OPTIONS, EXIT, onShutdown, parse } from './common.ts';
import { loadRelayOrReport } from './relay-file.ts';

export async function main(argv: string[]): Promise<number> {
  const { values } = parse(argv, CONFIG_OPTIONS);
  const loaded = await loadRelayOrReport(values);
  if (loaded === null) return EXIT.usage;
  const { config } = loaded;
  const secrets = relaySecrets(config);
  const logger = createLogger({ level: config.log.level, destination: 'stdout', secrets });
  let resolveStop!: (signal: string) => void;
  const stopped = new Promise<string>((resolve) => (resolveStop = resolve));
  const detach = onShutdown((signal) => resolveStop(signal));
  let relay;
  let probes: ObservabilityServer | null = null;
  try {
    relay = await startRelay(config, logger, config.at);
    // probes and metrics on a listener of their own, which approval clients cannot crowd out
    const at = config.observability.at;
    if (at !== null) {
      const running = relay;
      probes = new ObservabilityServer(relay.metrics, () => relayReadiness(running.bus, running.reader));
      logger.info({ url: await probes.listen(at.host, at.port) }, 'relay probes and metrics listening');
    }
  } catch (err) {
    await relay?.close();
    detach();
    logger.fatal(errorFields(err), 'cannot start');
    process.stderr.write(`se-bridge relay: ${scrub(errorFields(err).err, secrets)}\n`);
    return EXIT.failure;
  }
  const signal = await stopped;
  logger.info({ signal }, 'relay shutting down');
  await probes?.close();
  await relay.close();
  detach();
  return EXIT.ok;
}
