/**
 * configWarnings: what is valid but probably not meant. `validate` prints each as a warning
 * (exit 0 all the same) and `run` logs it at start.
 */
import type { BridgeConfig } from './schema.ts';

/** What a preparation takes when its filter names no types (see delivery/route.ts). */
const PREPARES = new Set(['scheduled', 'updated']);

export function configWarnings(config: BridgeConfig): string[] {
  const out: string[] = [];
  config.sinks.forEach((s, i) => {
    if (!(s.type === 'exec' && s.prepare) || s.filter.types === undefined) return;
    const others = s.filter.types.filter((t) => !PREPARES.has(t));
    if (others.length === 0) return;
    out.push(
      `sinks[${i}].filter.types: this preparation (prepare: true) also runs for ${others.join(', ')}, so it prepares the VM again ` +
        'when the event is approved, starts or is over; without types it takes scheduled, updated, and started for an event never seen Scheduled',
    );
  });
  return out;
}
