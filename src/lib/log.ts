/**
 * createLogger builds the bridge's pino logger: JSON lines with one stable field set (sink,
 * eventId, transition, code, err), readable when the output is a terminal. Secrets never reach
 * the output: every finished line is scrubbed of the configured secret values (config/schema.ts
 * secretsOf) and of anything shaped like one (SAS keys, connection strings, whsec_ secrets,
 * Slack tokens, signatures, bearer tokens and anything shaped like a JWT, Event Grid keys, the
 * secret parts of Slack and Teams webhook URLs), error messages from libraries included.
 */
import { createRequire } from 'node:module';
import { pino, type Logger, type DestinationStream } from 'pino';

export type { Logger };

const PATTERNS: [RegExp, string][] = [
  [/(SharedAccessKey=)[^;"\s\\]+/gi, '$1[redacted]'],
  [/(SharedAccessKey\s+)[^;"\s\\]+/g, '$1[redacted]'],
  [/(aeg-sas-key["']?\s*[:=]\s*["']?)[^;"'\s\\]+/gi, '$1[redacted]'],
  [/\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, '[redacted-jwt]'],
  [/(SharedAccessSignature=?\s*)[^;"\s\\]+/gi, '$1[redacted]'],
  [/(SharedAccessSignature sr=)[^"\s\\]+/gi, '$1[redacted]'],
  [/whsec_[A-Za-z0-9+/=]+/g, 'whsec_[redacted]'],
  [/xox[abposr]-[A-Za-z0-9-]+/g, 'xox?-[redacted]'],
  [/(hooks\.slack\.com\/(?:services|workflows|triggers)\/)[^"\s\\?]+/gi, '$1[redacted]'],
  [/([?&](?:sig|signature|code|token|sv|se|sp)=)[^&"\s\\]+/gi, '$1[redacted]'],
  [/(Bearer\s+)[A-Za-z0-9._~+/=-]+/g, '$1[redacted]'],
  [/(Basic\s+)[A-Za-z0-9+/=]{8,}/g, '$1[redacted]'],
  [/\bv1,[A-Za-z0-9+/=]{40,}/g, 'v1,[redacted]'],
  [/\bv0=[0-9a-f]{64}\b/g, 'v0=[redacted]'],
];

/** scrub removes secrets from one piece of text. */
export function scrub(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const s of secrets) {
    if (out.includes(s)) out = out.split(s).join('[redacted]');
    const escaped = JSON.stringify(s).slice(1, -1);
    if (escaped !== s && out.includes(escaped)) out = out.split(escaped).join('[redacted]');
  }
  for (const [re, by] of PATTERNS) out = out.replace(re, by);
  return out;
}

export interface LoggerOptions {
  level?: string;
  /** Where the lines go: stdout (default) or stderr (when the stdout sink owns stdout), or a stream. */
  destination?: 'stdout' | 'stderr' | DestinationStream;
  /** Secret values to scrub from every line (config/schema.ts secretsOf). */
  secrets?: readonly string[];
  /** Human-readable lines; default: when the destination is a terminal. */
  pretty?: boolean;
}

/** prettyPrinter loads pino-pretty when it is installed; the single executable has none, and writes JSON lines. */
function prettyPrinter(): ((o: object) => DestinationStream) | null {
  try {
    return createRequire(import.meta.url)('pino-pretty') as (o: object) => DestinationStream;
  } catch {
    return null;
  }
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const dest = options.destination ?? 'stdout';
  const fd = dest === 'stdout' ? 1 : dest === 'stderr' ? 2 : null;
  const tty = fd === 1 ? process.stdout.isTTY : fd === 2 ? process.stderr.isTTY : false;
  let stream: DestinationStream;
  if (fd !== null && (options.pretty ?? tty)) {
    const pretty = prettyPrinter();
    stream = pretty
      ? pretty({ destination: fd, sync: true, colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service' })
      : pino.destination({ fd, sync: true });
  } else {
    stream = fd !== null ? pino.destination({ fd, sync: true }) : (dest as DestinationStream);
  }
  const secrets = options.secrets ?? [];
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: 'se-bridge' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      hooks: { streamWrite: (line) => scrub(line, secrets) },
    },
    stream,
  );
}
