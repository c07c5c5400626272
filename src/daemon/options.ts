/** BridgeOptions: what a daemon is made from (the configuration) and what its embedder may watch or change. */
import type { Logger } from 'pino';
import type { BridgeConfig } from '../config/schema.ts';
import type { OutcomeReport } from '../delivery/dispatcher.ts';
import type { BridgeEvent } from '../pipeline/cloudevent.ts';

export interface BridgeOptions {
  config: BridgeConfig;
  logger: Logger;
  /** Where the stdout sink writes (default process.stdout). */
  stdout?: NodeJS.WritableStream;
  /** Log what would be sent instead of sending; keep state in memory only. */
  dryRun?: boolean;
  /** Called with every CloudEvent committed, after the commit. */
  onCommitted?: (events: readonly BridgeEvent[]) => void;
  onOutcome?: (report: OutcomeReport) => void;
  /** How long each sink's create() may take (default 30 s; tests shorten it). */
  sinkCreateDeadlineMs?: number;
  /** How soon a failed identity read is tried again (default 60 s; tests shorten it). */
  identityRetryMs?: number;
  /** When the system booted (ms since epoch; default from its uptime): tests set it to play a reboot. */
  bootedAt?: number | null;
  /** The clock the calendar is read on (default Date.now): tests set it to a day of their own. */
  calendarClock?: () => number;
}
