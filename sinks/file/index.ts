/**
 * file sink: JSON Lines, one CloudEvent per line in the CloudEvents JSON event format,
 * appended and flushed to disk (fdatasync) before the events count as delivered. The file is
 * opened for each batch, so a log rotation that moves it away is followed at once.
 */
import { mkdir, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { delivered, type Outcome, reject, retry, sinkBase, type SinkModule } from '../../src/api.ts';

export const configSchema = z.strictObject({
  type: z.literal('file'),
  ...sinkBase,
  path: z
    .string()
    .min(1, 'must name a file')
    .describe('The JSON Lines file: one CloudEvent per line, flushed to disk before the event counts as delivered.'),
  mkdir: z.boolean().default(true).describe('Create missing parent directories (default true).'),
});
export type FileConfig = z.infer<typeof configSchema>;

/** Errors of the file system that a later attempt may not see again. */
const TRANSIENT = new Set(['ENOSPC', 'EAGAIN', 'EBUSY', 'EMFILE', 'ENFILE', 'EIO', 'EDQUOT', 'ENOENT']);

export const fileSink: SinkModule<FileConfig, typeof configSchema> = {
  type: 'file',
  configSchema,
  maxBatchSize: 500,
  create(config) {
    return {
      async send(events) {
        const text = events.map((e) => `${JSON.stringify(e)}\n`).join('');
        let outcome: Outcome = delivered;
        try {
          if (config.mkdir) await mkdir(dirname(config.path), { recursive: true });
          const handle = await open(config.path, 'a', 0o640);
          try {
            await handle.appendFile(text, 'utf8');
            await handle.datasync();
          } finally {
            await handle.close();
          }
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code ?? 'UNKNOWN';
          const reason = `${code}: cannot append to ${config.path}`;
          // A permission or path problem stays until an operator fixes it, which the
          // dispatcher's max age covers; retrying keeps the events instead of dropping them.
          outcome = TRANSIENT.has(code) || code === 'EACCES' || code === 'EROFS' || code === 'EPERM' ? retry(reason) : reject(reason);
        }
        return events.map(() => outcome);
      },
      async close() {},
    };
  },
};
