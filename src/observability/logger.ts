/**
 * createLogger builds the bridge's pino logger: JSON lines, one stable field set
 * (sink, eventId, transition, code), secrets redacted by key wherever they appear.
 */
import { pino, type Logger, type DestinationStream } from 'pino';

export type { Logger };

/** Keys whose values never reach a log line. */
export const REDACT_PATHS = [
  'secret',
  '*.secret',
  '*.*.secret',
  'connectionString',
  '*.connectionString',
  '*.*.connectionString',
  'botToken',
  '*.botToken',
  'signingSecret',
  '*.signingSecret',
  'webhookUrl',
  '*.webhookUrl',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'token',
  '*.token',
];

export interface LoggerOptions {
  level?: string;
  /** Where the JSON lines go: stdout (default) or stderr (when the stdout sink owns stdout). */
  destination?: 'stdout' | 'stderr' | DestinationStream;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const dest = options.destination ?? 'stdout';
  const stream = dest === 'stdout' ? pino.destination({ fd: 1, sync: true }) : dest === 'stderr' ? pino.destination({ fd: 2, sync: true }) : dest;
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: 'se-bridge' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    stream,
  );
}

/** errorFields turns an error into log fields: its stable code and message, never a stack of secrets. */
export function errorFields(err: unknown): { code: string; err: string } {
  const e = err as { code?: unknown; message?: unknown; name?: unknown };
  return {
    code: typeof e?.code === 'string' ? e.code : typeof e?.name === 'string' ? e.name : 'UNKNOWN',
    err: typeof e?.message === 'string' ? e.message : String(err),
  };
}
