/** se-bridge dead-letters list|replay: inspect the events a sink could not take, or queue them again. */
import { existsSync } from 'node:fs';
import { Store } from '../store/store.ts';
import { CONFIG_OPTIONS, EXIT, loadOrReport, needs, parse, table, UsageError } from './common.ts';

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { ...CONFIG_OPTIONS, sink: { type: 'string' }, json: { type: 'boolean' } }, true);
  const action = positionals[0];
  if (positionals.length !== 1 || (action !== 'list' && action !== 'replay')) throw new UsageError('expected "list" or "replay"');
  const loaded = await loadOrReport(values, needs.sections('state'));
  if (loaded === null) return EXIT.usage;
  const path = loaded.config.state.path;
  // a command that reads never makes a state database: without one there is nothing to list or replay
  if (!existsSync(path)) {
    if (values.json && action === 'list') process.stdout.write('[]\n');
    else process.stdout.write(`no dead letters (no state database at ${path})\n`);
    return EXIT.ok;
  }
  const store = Store.open(path);
  try {
    if (action === 'replay') {
      const n = store.outbox.replayDeadLetters(values.sink);
      process.stdout.write(`${n} dead letter${n === 1 ? '' : 's'} queued again${values.sink ? ` for sink ${values.sink}` : ''}\n`);
      return EXIT.ok;
    }
    const rows = store.outbox.deadLetters(values.sink);
    if (values.json) {
      process.stdout.write(
        `${JSON.stringify(
          rows.map((d) => ({ ...d, json: undefined, event: JSON.parse(d.json) as unknown })),
          null,
          2,
        )}\n`,
      );
      return EXIT.ok;
    }
    if (rows.length === 0) {
      process.stdout.write('no dead letters\n');
      return EXIT.ok;
    }
    process.stdout.write(
      `${table(
        ['SINK', 'TRANSITION', 'EVENT ID', 'ATTEMPTS', 'DEAD SINCE', 'LAST ERROR'],
        rows.map((d) => [d.sink, d.transition, d.eventId, String(d.attempts), new Date(d.deadAt).toISOString(), d.lastError]),
      )}\n`,
    );
    return EXIT.ok;
  } finally {
    store.close();
  }
}
