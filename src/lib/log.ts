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

/** The shortest form of a secret that is scrubbed on its own (shorter ones would cut words). */
const MIN_FORM = 6;

/**
 * secretForms: the ways a secret can appear in text a peer echoes back: as it is, JSON-escaped,
 * percent-encoded, and inside base64 (standard and URL alphabets) at any of the three byte
 * alignments, as in a Basic authorization header (the characters that depend only on the secret).
 */
export function secretForms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const forms = new Set([secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)]);
  for (let k = 0; k < 3; k++) {
    const skip = k === 0 ? 0 : 3 - k; // secret bytes that share a group with what precedes them
    const whole = Math.floor((bytes.length - skip) / 3) * 4; // characters of whole groups of secret bytes
    if (whole < 8) continue;
    const encoded = Buffer.concat([Buffer.alloc(k), bytes]).toString('base64');
    const core = encoded.slice(k === 0 ? 0 : 4, (k === 0 ? 0 : 4) + whole);
    forms.add(core);
    forms.add(core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return [...forms].filter((f) => f.length >= MIN_FORM).sort((a, b) => b.length - a.length);
}

/** scrubber removes secrets (in every form of secretForms) and anything shaped like one; the forms are worked out once. */
export function scrubber(secrets: readonly string[] = []): (text: string) => string {
  const forms = [...new Set(secrets.flatMap(secretForms))].sort((a, b) => b.length - a.length);
  return (text) => {
    let out = text;
    for (const f of forms) if (out.includes(f)) out = out.split(f).join('[redacted]');
    for (const [re, by] of PATTERNS) out = out.replace(re, by);
    return out;
  };
}

/** scrub removes secrets from one piece of text. */
export function scrub(text: string, secrets: readonly string[] = []): string {
  return scrubber(secrets)(text);
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
  const clean = scrubber(options.secrets ?? []);
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: 'se-bridge' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      hooks: { streamWrite: clean },
    },
    stream,
  );
}
