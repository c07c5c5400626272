/**
 * se-bridge drill: asks the running daemon, through its local control channel, to play one
 * maintenance for this VM as if IMDS had listed it, waits for it to end, and prints its report:
 * each CloudEvent and what each sink did with it, the approval and its path, the preparations.
 * Exit 0 only when every step passed; 1 when one did not, or the daemon could not be asked; 2 on a
 * usage or configuration problem. `--end` ends the drill being played now.
 */
import { controlPath } from '../drill/control.ts';
import { controlCall as call } from '../drill/control-client.ts';
import type { DrillReport } from '../drill/report.ts';
import { parseDuration } from '../lib/time.ts';
import { CONFIG_OPTIONS, EXIT, loadOrReport, needs, parse, table, UsageError } from './common.ts';

/** How long after its end a drill's last deliveries may take before the report is printed anyway. */
const SETTLE_MS = 60_000;
const POLL_MS = 250;

export async function main(argv: string[]): Promise<number> {
  const { values } = parse(argv, {
    ...CONFIG_OPTIONS,
    type: { type: 'string' },
    notice: { type: 'string' },
    duration: { type: 'string' },
    source: { type: 'string' },
    sink: { type: 'string', multiple: true },
    prepare: { type: 'string' },
    cancel: { type: 'boolean' },
    end: { type: 'boolean' },
    json: { type: 'boolean' },
  });
  const seconds = (flag: string, v: string | undefined): number | undefined => {
    if (v === undefined) return undefined;
    const ms = parseDuration(v);
    if (ms === null) throw new UsageError(`--${flag} ${v}: a duration such as 30s, 5m or 1h`);
    return ms / 1000;
  };
  const noticeSeconds = seconds('notice', values.notice) ?? (values.duration !== undefined ? 0 : undefined);
  const durationSeconds = seconds('duration', values.duration);
  if (values.end === true && values.cancel === true)
    throw new UsageError('--end ends the drill being played; --cancel plays one that ends canceled: one of them');
  const loaded = await loadOrReport(values, needs.nothing);
  if (loaded === null) return EXIT.usage;
  const path = controlPath(loaded.config.state.path);
  const out = process.stdout;
  try {
    if (values.end === true) {
      const r = await call(path, 'POST', '/v1/drills/current/end');
      out.write(
        values.json === true
          ? `${JSON.stringify(r.body, null, 2)}\n`
          : `${r.status === 200 ? 'drill ended' : String((r.body as { message?: string }).message)}\n`,
      );
      return r.status === 200 ? EXIT.ok : EXIT.failure;
    }
    const body = {
      ...(values.type === undefined ? {} : { type: values.type }),
      ...(noticeSeconds === undefined ? {} : { noticeSeconds }),
      ...(durationSeconds === undefined ? {} : { durationSeconds }),
      ...(values.source === undefined ? {} : { source: values.source }),
      ...(values.sink === undefined ? {} : { sinks: values.sink }),
      ...(values.prepare === undefined ? {} : { prepare: values.prepare }),
      ...(values.cancel === true ? { end: 'cancel' } : {}),
    };
    const started = await call(path, 'POST', '/v1/drills', body);
    if (started.status === 400) throw new UsageError(String((started.body as { message?: string }).message));
    if (started.status !== 201) {
      process.stderr.write(`se-bridge drill: refused: ${String((started.body as { message?: string }).message)}\n`);
      return EXIT.failure;
    }
    const drill = (started.body as { drill: DrillReport['drill'] }).drill;
    if (values.json !== true)
      out.write(
        `drill ${drill.eventId}: ${drill.request.type} for ${drill.vmName}, NotBefore in ${drill.request.noticeMs / 1000} s, ` +
          `${drill.request.end === 'cancel' ? 'then canceled' : `Started for ${drill.request.durationMs / 1000} s`}; preparations ${drill.request.prepare === 'real' ? 'for real' : 'rehearsed'}; nothing is asked of Azure\n`,
      );
    const report = await waitForEnd(path, drill.eventId, drill.request.noticeMs + drill.request.durationMs);
    out.write(values.json === true ? `${JSON.stringify(report, null, 2)}\n` : `${reportText(report)}\n`);
    return report.passed ? EXIT.ok : EXIT.failure;
  } catch (err) {
    if (err instanceof UsageError) throw err;
    const e = err as NodeJS.ErrnoException;
    const why =
      e.code === 'ENOENT' || e.code === 'ECONNREFUSED'
        ? `the daemon is not running with this configuration (no control channel at ${path})`
        : e.code === 'EACCES'
          ? `cannot connect to ${path}: permission denied (run as the daemon's user, or root)`
          : (e.message ?? String(err));
    process.stderr.write(`se-bridge drill: ${why}\n`);
    return EXIT.failure;
  }
}

/** waitForEnd reads the drill's report until it ended and every delivery settled (bounded), and returns the last. */
export async function waitForEnd(path: string, eventId: string, playMs: number): Promise<DrillReport> {
  const deadline = Date.now() + playMs + SETTLE_MS + 30_000;
  let endedAt: number | null = null;
  for (;;) {
    const r = await call(path, 'GET', '/v1/drills/current');
    const report = r.body as DrillReport;
    if (r.status !== 200 || report.drill.eventId !== eventId) throw new Error('the daemon no longer knows the drill (it was restarted?)');
    if (report.drill.ended !== null) {
      endedAt ??= Date.now();
      const unsettled = report.events.some((e) => e.sinks.some((s) => s.outcome === 'pending' || s.outcome === 'retrying'));
      const ends = report.events.some((e) => e.transition === 'completed' || e.transition === 'canceled');
      if ((ends && !unsettled) || Date.now() - endedAt > SETTLE_MS || Date.now() > deadline) return report;
    } else if (Date.now() > deadline) return report;
    await new Promise((ok) => setTimeout(ok, POLL_MS));
  }
}

export function reportText(r: DrillReport): string {
  const s = (ms: number | null) => (ms === null ? '-' : `+${(ms / 1000).toFixed(1)} s`);
  const d = r.drill;
  const lines = [`ended: ${d.ended ?? 'not yet'}${d.endedAt === null ? '' : ` at ${s(d.endedAt - d.createdAt)}`}`];
  lines.push(
    r.approval === null
      ? 'approval: none (no rule or person approved it before it started)'
      : `approval: by ${r.approval.by} via ${r.approval.via} at ${s(r.approval.atMs)} (StartRequests not posted: a drill)`,
  );
  const rows = r.events.flatMap((e) =>
    e.sinks.length === 0
      ? [[s(e.atMs), e.transition, '-', 'no sink', '', '']]
      : e.sinks.map((x) => [s(x.atMs ?? e.atMs), e.transition, x.sink, x.outcome, String(x.attempts), x.detail ?? x.lastError ?? '']),
  );
  lines.push('', table(['TIME', 'TRANSITION', 'SINK', 'RESULT', 'ATTEMPTS', 'DETAIL'], rows));
  if (r.preparations.length > 0) {
    lines.push('', 'Preparations:');
    for (const p of r.preparations)
      lines.push(
        `  ${p.sink} (${p.mode === 'real' ? 'for real' : 'rehearsed'}): ${p.givenBack ? 'done, given back' : p.done ? 'done' : 'not done'}${p.detail === null ? '' : ` (${p.detail})`}`,
      );
  }
  lines.push('', r.passed ? 'PASSED: every step of the drill passed' : `FAILED: ${r.problems.join('; ')}`);
  return lines.join('\n');
}
