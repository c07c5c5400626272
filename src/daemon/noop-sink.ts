/** noopSink stands in for every sink in a dry run: it logs what would be delivered and counts it as delivered. */
import type { Logger } from 'pino';
import { delivered, type Sink } from '../sinks/contract.ts';

export function noopSink(name: string, logger: Logger): Sink {
  return {
    async send(events) {
      for (const e of events) logger.info({ sink: name, ceId: e.id, type: e.type, subject: e.subject }, 'dry run: would deliver');
      return events.map(() => delivered);
    },
    async close() {},
  };
}
