import { Bridge } from '../daemon/bridge.ts';
import { SHUTDOWN_DEADLINE_MS } from '../delivery/dispatcher.ts';
import { createLogger, scrub } from '../lib/log.ts';
import { errorFields } from '../lib/errors.ts';
import { secretsOf } from '../config/schema.ts';
import { configWarnings } from '../config/warnings.ts';
import { CONFIG_OPTIONS, EXIT, loadOrReport, onShutdown, parse } from './common.ts';

export async function main(argv: string[]): Promise<number> {
  const { values } = parse(argv, { ...CONFIG_OPTIONS, 'dry-run': { type: 'boolean' } });
  const loaded = await loadOrReport(values);
  if (loaded === null) return EXIT.usage;
  const { config } = loaded;
  // The stdout sink owns stdout when configured; logs then go to stderr so both stay parseable.
  const stdoutTaken = config.sinks.some((s) => s.type === 'stdout');
  const secrets = secretsOf(config);
  const logger = createLogger({ level: config.log.level, destination: stdoutTaken ? 'stderr' : 'stdout', secrets });
  for (const w of configWarnings(config)) logger.warn({ code: 'CONFIG_WARNING' }, w);
  const cannotStart = (err: unknown): number => {
    logger.fatal(errorFields(err), 'cannot start');
    process.stderr.write(`se-bridge run: ${scrub(errorFields(err).err, secrets)}\n`);
    return EXIT.failure;
  };
  // Start-up never ends in exit 0: if everything it waits for is gone (a promise nothing will
  // settle), Node would end the process quietly, and a supervisor that restarts on failure only
  // would leave the bridge down.
  const unfinished = () => {
    process.stderr.write('se-bridge run: start-up could not finish: it waited for something that can never happen\n');
    process.exit(EXIT.failure);
  };
  process.once('beforeExit', unfinished);
  let bridge: Bridge;
  try {
    bridge = await Bridge.create({ config, logger, dryRun: values['dry-run'] === true });
  } catch (err) {
    process.off('beforeExit', unfinished);
    return cannotStart(err);
  }
  let resolveStop!: (signal: string) => void;
  const stopped = new Promise<string>((resolve) => (resolveStop = resolve));
  const detach = onShutdown((signal) => resolveStop(signal));
  try {
    await bridge.start();
  } catch (err) {
    process.off('beforeExit', unfinished);
    detach();
    await bridge.stop(SHUTDOWN_DEADLINE_MS).catch(() => undefined);
    return cannotStart(err);
  }
  process.off('beforeExit', unfinished);
  const signal = await stopped;
  logger.info({ signal }, 'shutting down');
  await bridge.stop(SHUTDOWN_DEADLINE_MS);
  detach();
  return EXIT.ok;
}
