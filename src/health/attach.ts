/**
 * attachHealth: this VM's health checks as a feature of the daemon (daemon/feature.ts), when a
 * health block is configured (`health`, or `fleet.health`). One monitor serves every part that
 * waits for health: the fleet budget (its settle time, its member record) and the probe sink
 * (`health: true`). Its loop checks every intervalSeconds; /readyz's details carry its state.
 */
import type { Logger } from 'pino';
import type { HealthConfig } from './config.ts';
import { HealthMonitor } from './monitor.ts';

export function attachHealth(config: HealthConfig | undefined, logger: Logger, resourceId: () => string | null) {
  if (config === undefined) return null;
  const monitor = new HealthMonitor(config, logger, Date.now, resourceId);
  return {
    monitor,
    feature: {
      name: 'health',
      details: () => monitor.state ?? { checked: false },
      run: (signal: AbortSignal) => monitor.run(signal),
      close: async () => monitor.close(),
    },
  };
}
