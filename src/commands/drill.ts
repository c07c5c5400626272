/**
 * se-bridge drill: asks the running daemon, through its local control channel, to play one
 * maintenance for this VM as if IMDS had listed it, waits for it to end, and prints its report:
 * each CloudEvent and what each sink did with it, the approval and its path, the preparations.
 * Exit 0 only when every step passed; 1 when one did not, or the daemon could not be asked; 2 on a
 * usage or configuration problem. `--end` ends the drill being played now.
 */
import { controlPath } from '../control/server.ts';
import { controlCall as call } from '../control/client.ts';
import type { DrillReport } from '../drill/report.ts';
import { z } from 'zod';
import { parseDuration } from '../lib/time.ts';
import { CONFIG_OPTIONS, EXIT, loadOrReport, needs, parse, table, UsageError } from './common.ts';

/** How long after its end a drill's last deliveries may take before the report is printed anyway. */
const SETTLE_MS = 60_000;
const POLL_MS = 250;
/** How long a drill aimed at named sinks (--sink) stays Started unless --duration says. */
const SINK_CHECK_SECONDS = 5;

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
  // "does my Slack work?" (--sink) needs no half minute Started: 5 s unless told
  const durationSeconds = seconds('duration', values.duration) ?? (values.sink === undefined ? undefined : SINK_CHECK_SECONDS);
  if (values.end === true && values.cancel === true)
    throw new UsageError('--end ends the drill being played; --cancel plays one that ends canceled: one of them');
  const loaded = await loadOrReport(values, needs.sections('state'));
  if (loaded === null) return EXIT.usage;
  const state = loaded.config.state.path;
  const path = controlPath(state);
  const out = process.stdout;
  try {
    if (values.end === true) {
      const r = await call(state, 'POST', '/v1/drills/current/end');
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
    const started = await call(state, 'POST', '/v1/drills', body);
    if (started.status !== 201) {
      const refusal = Refusal.safeParse(started.body);
      const message = refusal.success ? refusal.data.message : `an answer of another shape (HTTP ${started.status})`;
      if (started.status === 400) throw new UsageError(message);
      return failed(`refused: ${message}`, refusal.success ? refusal.data.error : 'DRILL_REFUSED');
    }
    const drill = answer(Started, started.body).drill;
    // progress goes where the report does not: stdout for people, stderr beside --json
    const progress = values.json === true ? process.stderr : out;
    progress.write(
      `drill ${drill.eventId}: ${drill.request.type} for ${drill.vmName}, NotBefore in ${drill.request.noticeMs / 1000} s, ` +
        `${drill.request.end === 'cancel' ? 'then canceled' : `Started for ${drill.request.durationMs / 1000} s`}; preparations ${drill.request.prepare === 'real' ? 'for real' : 'rehearsed'}; nothing is asked of Azure\n`,
    );
    const report = await waitForEnd(state, drill.eventId, drill.request.noticeMs + drill.request.durationMs, (line) =>
      progress.write(`  ${line}\n`),
    );
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
    return failed(why, e.code === 'CONTROL_IMPOSTOR' ? 'CONTROL_IMPOSTOR' : 'CONTROL_UNAVAILABLE');
  }

  /** failed: exit 1, said on stderr, and as JSON on stdout with --json. */
  function failed(message: string, code: string): number {
    process.stderr.write(`se-bridge drill: ${message}\n`);
    if (values.json === true) out.write(`${JSON.stringify({ passed: false, error: { code, message } }, null, 2)}\n`);
    return EXIT.failure;
  }
}

/** The answers of the control channel, checked before they are believed (a socket is only as good as who listens on it). */
const Refusal = z.looseObject({ error: z.string(), message: z.string() });
const Started = z.looseObject({
  drill: z.looseObject({
    eventId: z.string().startsWith('drill-'),
    vmName: z.string(),
    createdAt: z.number(),
    ended: z.string().nullable(),
    request: z.looseObject({
      type: z.string(),
      noticeMs: z.number().min(0),
      durationMs: z.number().min(0),
      prepare: z.enum(['rehearse', 'real']),
      end: z.enum(['complete', 'cancel']),
    }),
  }),
});
const Report = z.looseObject({
  drill: Started.shape.drill.extend({ endedAt: z.number().nullable() }),
  passed: z.boolean(),
  problems: z.array(z.string()),
  events: z.array(
    z.looseObject({
      transition: z.string(),
      atMs: z.number(),
      sinks: z.array(
        z.looseObject({
          sink: z.string(),
          outcome: z.string(),
          attempts: z.number(),
          atMs: z.number().nullable(),
          detail: z.string().nullable(),
          lastError: z.string().nullable(),
        }),
      ),
    }),
  ),
  preparations: z.array(z.looseObject({ sink: z.string(), mode: z.string(), done: z.boolean(), givenBack: z.boolean() })),
  approval: z.looseObject({ by: z.string(), via: z.string(), atMs: z.number() }).nullable(),
  timeline: z.array(z.looseObject({ atMs: z.number(), step: z.string(), detail: z.string() })),
});

/** answer: the body in the shape expected, or an error saying the daemon's answer is not one. */
function answer<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const parsed = schema.safeParse(body);
  if (!parsed.success)
    throw new Error(`the control channel answered in another shape than the daemon's (${parsed.error.issues[0]?.message ?? ''})`);
  return parsed.data;
}

/** waitForEnd reads the drill's report until it ended and every delivery settled (bounded), and returns the last. */
export async function waitForEnd(
  statePath: string,
  eventId: string,
  playMs: number,
  progress: (line: string) => void = () => {},
): Promise<DrillReport> {
  const deadline = Date.now() + playMs + SETTLE_MS + 30_000;
  let endedAt: number | null = null;
  const said = new Set<string>();
  for (;;) {
    const r = await call(statePath, 'GET', '/v1/drills/current');
    if (r.status !== 200) throw new Error('the daemon no longer knows the drill (it was restarted?)');
    const report = answer(Report, r.body) as unknown as DrillReport;
    if (report.drill.eventId !== eventId) throw new Error('the daemon no longer knows the drill (it was restarted?)');
    // each step once, as it happens (a pending delivery is said when it settles)
    for (const t of report.timeline) {
      const key = `${t.step}\n${t.detail}`;
      if (t.step === 'pending' || said.has(key)) continue;
      said.add(key);
      progress(`${seconds(t.atMs)}  ${t.step}: ${t.detail}`);
    }
    if (report.drill.ended !== null) {
      endedAt ??= Date.now();
      const unsettled = report.events.some((e) => e.sinks.some((s) => s.outcome === 'pending' || s.outcome === 'retrying'));
      const ends = report.events.some((e) => e.transition === 'completed' || e.transition === 'canceled');
      if ((ends && !unsettled) || Date.now() - endedAt > SETTLE_MS || Date.now() > deadline) return report;
    } else if (Date.now() > deadline) return report;
    await new Promise((ok) => setTimeout(ok, POLL_MS));
  }
}

/** seconds: a time since the drill began, in the one format of every report line: `+12.3 s`. */
function seconds(ms: number | null): string {
  return ms === null ? '-' : `+${(ms / 1000).toFixed(1)} s`;
}

export function reportText(r: DrillReport): string {
  const s = seconds;
  const d = r.drill;
  const lines = [`ended: ${d.ended ?? 'not yet'}${d.endedAt === null ? '' : ` at ${s(d.endedAt - d.createdAt)}`}`];
  lines.push(
    r.approval === null
      ? 'approval: none (no rule or person approved it before it started)'
      : `approval: by ${r.approval.by} via ${r.approval.via} at ${s(r.approval.atMs)} (StartRequests not posted: a drill)`,
  );
  // in time order, whatever the order of the CloudEvents
  const rows = r.events
    .flatMap((e) =>
      e.sinks.length === 0
        ? [{ at: e.atMs, row: [s(e.atMs), e.transition, '-', 'no sink', '', ''] }]
        : e.sinks.map((x) => ({
            at: x.atMs ?? e.atMs,
            row: [s(x.atMs ?? e.atMs), e.transition, x.sink, x.outcome, String(x.attempts), x.detail ?? x.lastError ?? ''],
          })),
    )
    .sort((a, b) => a.at - b.at)
    .map((x) => x.row);
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
