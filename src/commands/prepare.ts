/**
 * se-bridge prepare --dry-run [--sink NAME] [--notice DURATION] [--config FILE] [--json]: what
 * each preparation of this VM would do now, with nothing changed: a kubernetes sink's drain,
 * asked of the API server as dry-run evictions (the pods it would evict with their grace, those
 * it would skip and why, what would block it). Exit 0 when nothing would stop a preparation, 1
 * when something would or a peer could not be asked, 2 on a usage or configuration problem.
 */
import { ImdsClient } from '../imds/client.ts';
import { identityFrom, type VmIdentity } from '../imds/identity.ts';
import { errorFields } from '../lib/errors.ts';
import { parseDuration } from '../lib/time.ts';
import { prepares, rehearsalOf, roleOf } from '../registry/sinks.ts';
import { identityOverride, type BridgeConfig, type SinkConfig } from '../config/schema.ts';
import type { Rehearsal, RehearsalOptions } from '../sinks/contract.ts';
import { CONFIG_OPTIONS, EXIT, loadOrReport, needs, onShutdown, parse, UsageError } from './common.ts';

type Result =
  | { readonly sink: string; readonly type: string; readonly rehearsal: Rehearsal }
  | { readonly sink: string; readonly type: string; readonly error: { readonly code: string; readonly message: string } };

export async function main(argv: string[]): Promise<number> {
  const { values } = parse(argv, {
    ...CONFIG_OPTIONS,
    sink: { type: 'string' },
    notice: { type: 'string' },
    'dry-run': { type: 'boolean' },
    json: { type: 'boolean' },
  });
  if (values['dry-run'] !== true)
    throw new UsageError('prepare only rehearses: add --dry-run (a real preparation follows a maintenance event)');
  const noticeMs = values.notice === undefined ? null : parseDuration(values.notice);
  if (values.notice !== undefined && noticeMs === null) throw new UsageError(`--notice ${values.notice}: a duration such as 30s, 5m or 1h`);
  const loaded = await loadOrReport(
    values,
    needs.sinks((s) => s.type === 'kubernetes' || s.type === 'probe' || s.type === 'exec', 'imds', 'identity'),
  );
  if (loaded === null) return EXIT.usage;
  const { config } = loaded;
  let sinks: SinkConfig[];
  try {
    sinks = chosen(config.sinks, values.sink);
  } catch (err) {
    // with --json a refusal is JSON too
    if (!(err instanceof UsageError) || values.json !== true) throw err;
    process.stdout.write(`${JSON.stringify({ ready: false, error: { code: 'USAGE', message: err.message } }, null, 2)}\n`);
    return EXIT.usage;
  }

  const abort = new AbortController();
  const stop = onShutdown(() => abort.abort(new Error('stopped')));
  const vm = once(() => whoAmI(config));
  const results: Result[] = [];
  try {
    for (const sink of sinks) {
      try {
        const rehearse = rehearsalOf(sink) ?? notRehearsed(sink);
        const rehearsal = await rehearse({ noticeMs, vm, signal: abort.signal });
        results.push({ sink: sink.name, type: sink.type, rehearsal });
      } catch (err) {
        const { code, err: message } = errorFields(err);
        results.push({ sink: sink.name, type: sink.type, error: { code, message } });
      }
    }
  } finally {
    stop();
  }
  const ready = results.every((r) => 'rehearsal' in r && r.rehearsal.ready);
  if (values.json === true) {
    const rehearsals = results.map((r) =>
      'rehearsal' in r ? { sink: r.sink, type: r.type, ready: r.rehearsal.ready, ...r.rehearsal.data } : { ...r, ready: false },
    );
    process.stdout.write(`${JSON.stringify({ ready, noticeSeconds: noticeMs === null ? null : noticeMs / 1000, rehearsals }, null, 2)}\n`);
  } else if (results.length === 0) {
    process.stdout.write(
      'se-bridge prepare --dry-run: this configuration has no preparation (probe, kubernetes, or a hook with prepare: true); nothing to rehearse\n',
    );
  } else {
    process.stdout.write('se-bridge prepare --dry-run: what each preparation would do now; nothing is changed\n');
    for (const r of results) {
      process.stdout.write(`\nsink ${r.sink} (${r.type})\n`);
      process.stdout.write(`${'rehearsal' in r ? r.rehearsal.text : `cannot rehearse: ${r.error.code}: ${r.error.message}`}\n`);
    }
  }
  return ready ? EXIT.ok : EXIT.failure;
}

/**
 * chosen: the sink named, or every preparation of this VM (those that rehearse, and the hooks,
 * which say what they would run); a usage error says why the one named cannot be.
 */
function chosen(sinks: readonly SinkConfig[], name: string | undefined): SinkConfig[] {
  if (name === undefined) return sinks.filter((s) => prepares(roleOf(s)));
  const sink = sinks.find((s) => s.name === name);
  if (sink === undefined) throw new UsageError(`no sink is named "${name}"; the sinks are ${sinks.map((s) => s.name).join(', ')}`);
  if (!prepares(roleOf(sink)))
    throw new UsageError(
      `sink "${name}" is a ${sink.type} sink that prepares nothing; the preparations are ${
        sinks
          .filter((s) => prepares(roleOf(s)))
          .map((s) => s.name)
          .join(', ') || 'none'
      }`,
    );
  return [sink];
}

/** notRehearsed: a preparation that cannot ask anyone what it would do (a hook): it says what it would run, and runs nothing. */
function notRehearsed(sink: SinkConfig): (o: RehearsalOptions) => Promise<Rehearsal> {
  const command: readonly string[] = 'command' in sink && Array.isArray(sink.command) ? sink.command : [];
  const would = `would run ${command.join(' ') || `its ${sink.type} step`}; a rehearsal runs nothing`;
  return async () => ({ ready: true, summary: would, text: `It ${would}.`, data: { command } });
}

/** whoAmI reads this VM's identity from instance metadata (with the configured overrides), or null when it cannot. */
async function whoAmI(config: BridgeConfig): Promise<VmIdentity | null> {
  const override = identityOverride(config.identity);
  if (override.resourceId !== undefined) return identityFrom(null, override);
  const client = new ImdsClient({
    endpoint: config.imds.endpoint,
    requestTimeoutMs: config.imds.requestTimeoutMs,
    firstRequestTimeoutMs: config.imds.firstRequestTimeoutMs,
  });
  const compute = await client.getInstanceCompute().catch(() => null);
  return compute === null ? null : identityFrom(compute, override);
}

function once<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => (made ??= make());
}
