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
import { REHEARSING_TYPES, rehearsalOf } from '../registry/sinks.ts';
import { identityOverride, type BridgeConfig, type SinkConfig } from '../config/schema.ts';
import type { Rehearsal } from '../sinks/contract.ts';
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
    needs.sinks((s) => s.type === 'kubernetes' || s.type === 'probe' || s.type === 'exec'),
  );
  if (loaded === null) return EXIT.usage;
  const { config } = loaded;
  const sinks = chosen(config.sinks, values.sink);

  const abort = new AbortController();
  const stop = onShutdown(() => abort.abort(new Error('stopped')));
  const vm = once(() => whoAmI(config));
  const results: Result[] = [];
  try {
    for (const sink of sinks) {
      try {
        const rehearsal = await rehearsalOf(sink)!({ noticeMs, vm, signal: abort.signal });
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
  } else {
    process.stdout.write('se-bridge prepare --dry-run: what each preparation would do now; nothing is changed\n');
    for (const r of results) {
      process.stdout.write(`\nsink ${r.sink} (${r.type})\n`);
      process.stdout.write(`${'rehearsal' in r ? r.rehearsal.text : `cannot rehearse: ${r.error.code}: ${r.error.message}`}\n`);
    }
  }
  return ready ? EXIT.ok : EXIT.failure;
}

/** chosen: the sink named, or every sink that rehearses; a usage error says why none. */
function chosen(sinks: readonly SinkConfig[], name: string | undefined): SinkConfig[] {
  const kinds = REHEARSING_TYPES.join(', ');
  if (name === undefined) {
    const found = sinks.filter((s) => rehearsalOf(s) !== null);
    if (found.length === 0) throw new UsageError(`no sink of this configuration rehearses a preparation (sinks of type ${kinds} do)`);
    return found;
  }
  const sink = sinks.find((s) => s.name === name);
  if (sink === undefined) throw new UsageError(`no sink is named "${name}"; the sinks are ${sinks.map((s) => s.name).join(', ')}`);
  if (rehearsalOf(sink) === null)
    throw new UsageError(`sink "${name}" is a ${sink.type} sink; only a preparation rehearses (sinks of type ${kinds})`);
  return [sink];
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
