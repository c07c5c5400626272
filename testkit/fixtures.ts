/** The test fixtures (test/fixtures/) and a logger whose lines a test can read, for test/, the sinks' tests and the benchmarks. */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino, type Logger } from 'pino';
import { toDomainDocument, WireDocument, type EventsDocument } from '../src/imds/wire.ts';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** fixtureText reads a captured IMDS document from test/fixtures/imds. */
export function fixtureText(name: string): string {
  return readFileSync(join(ROOT, 'test', 'fixtures', 'imds', name), 'utf8');
}

export function fixtureDocument(name: string): EventsDocument {
  return toDomainDocument(WireDocument.parse(JSON.parse(fixtureText(name)))).document;
}

/** captureLogger records log lines as objects. */
export function captureLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger: Logger = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  return { logger, lines };
}
