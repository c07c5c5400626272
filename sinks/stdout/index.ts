/**
 * stdout sink: one readable line per event (`format: text`, the default) or one CloudEvent in
 * the JSON event format per line (`format: json`), for piping into jq or a log shipper.
 */
import { z } from 'zod';
import { type BridgeEvent, delivered, retry, sinkBase, type SinkModule } from '../../src/api.ts';
import { formatEventLine } from '../../src/kit.ts';

export const configSchema = z.strictObject({
  type: z.literal('stdout'),
  ...sinkBase,
  format: z
    .enum(['text', 'json'])
    .default('text')
    .describe('text: one readable line per event, this VM starred; json: one CloudEvent per line.'),
});
export type StdoutConfig = z.infer<typeof configSchema>;

export const stdoutSink: SinkModule<StdoutConfig, typeof configSchema> = {
  type: 'stdout',
  configSchema,
  maxBatchSize: 100,
  create(config, context) {
    const render = config.format === 'json' ? (e: BridgeEvent) => JSON.stringify(e) : (e: BridgeEvent) => formatEventLine(e);
    return {
      async send(events) {
        const text = events.map((e) => `${render(e)}\n`).join('');
        try {
          await new Promise<void>((resolve, fail) => context.stdout.write(text, (err) => (err ? fail(err) : resolve())));
        } catch (err) {
          const outcome = retry(`stdout write failed: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
          return events.map(() => outcome);
        }
        return events.map(() => delivered);
      },
      async close() {},
    };
  },
};
