/**
 * se-bridge demo: the whole pipeline on one machine. Starts the IMDS simulator, runs the
 * bridge against it with a stdout sink, a file sink and a load balancer probe, plays every
 * scenario once at development timing (one sixtieth of real), and ends with a table of the
 * transitions seen per scenario. The probe's answers are printed as they change: 503 while a
 * Freeze is pending, a long Freeze approved once the probe has drained, 200 afterwards.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { freePort } from '../lib/http-server.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Bridge } from '../daemon/bridge.ts';
import { transitionOf } from '../pipeline/cloudevent.ts';
import { TRANSITIONS } from '../pipeline/diff.ts';
import { validateConfig } from '../config/load.ts';
import { ImdsSimulator } from '../simulator/server.ts';
import { SCENARIOS } from '../simulator/scenarios.ts';
import { createLogger } from '../lib/log.ts';
import { EXIT, onShutdown, parse, table, UsageError } from './common.ts';
import { demoDrill } from './demo-drill.ts';
import { ask, demoHttp } from './demo-kit.ts';

const DEFAULT_DURATION_S = 90;
/** How long the demo's probe drains before a long Freeze is approved. */
const DRAIN_S = 3;
/** Time left at the end for the last scenario to play out. */
const TAIL_MS = 30_000;

export async function main(argv: string[]): Promise<number> {
  const { values } = parse(argv, {
    duration: { type: 'string', default: String(DEFAULT_DURATION_S) },
    'state-dir': { type: 'string' },
    fleet: { type: 'boolean' },
  });
  if (values.fleet === true) return (await import('./demo-fleet.ts')).fleetDemo();
  const durationS = Number(values.duration);
  if (!Number.isFinite(durationS) || durationS < 3 || durationS > 3600) throw new UsageError('--duration must be 3 to 3600 seconds');
  const dir = values['state-dir'] ?? mkdtempSync(join(tmpdir(), 'se-bridge-demo-'));
  const eventsFile = join(dir, 'events.jsonl');

  const sim = new ImdsSimulator({ timing: 'dev' });
  const url = await sim.listen(0);
  try {
    return await play(sim, url, dir, eventsFile, durationS);
  } finally {
    await sim.close();
  }
}

async function play(sim: ImdsSimulator, url: string, dir: string, eventsFile: string, durationS: number): Promise<number> {
  const durationMs = durationS * 1000;
  const probePort = await freePort();
  const config = validateConfig(
    {
      imds: { endpoint: url, pollIntervalMs: 1000 },
      state: { path: join(dir, 'state.db') },
      sinks: [
        { name: 'console', type: 'stdout' },
        { name: 'audit', type: 'file', path: eventsFile },
        // the load balancer's view of this VM: out of rotation while a Freeze is pending
        {
          name: 'lb',
          type: 'probe',
          listen: `127.0.0.1:${probePort}`,
          drainSeconds: DRAIN_S,
          prepare: true,
          filter: { scope: 'self', eventTypes: ['Freeze'] },
        },
      ],
      log: { level: process.env.LOG_LEVEL || 'warn' },
      // The approval server on localhost: events the policy leaves to a human get a link.
      approval: {
        secret: `whsec_${randomBytes(32).toString('base64')}`,
        rules: [
          { name: 'user-initiated', match: { eventSource: 'User' }, action: 'approve' },
          { name: 'short-freeze', match: { eventType: 'Freeze', maxDurationSeconds: 8 }, action: 'approve' },
          { name: 'drain-long-freeze', match: { eventType: 'Freeze', minDurationSeconds: 20 }, action: 'approveAfterHooks' },
        ],
      },
      server: { listen: '127.0.0.1:0' },
      observability: { listen: '127.0.0.1:0' },
    },
    'demo',
    {},
  );
  const logger = createLogger({ level: config.log.level, destination: 'stderr' });
  const linksOut: string[] = [];
  let bridgeRef: Bridge | null = null;
  const counts = new Map<string, Map<string, number>>(SCENARIOS.map((s) => [s.name, new Map()]));
  const bridge = await Bridge.create({
    config,
    logger,
    onCommitted(events) {
      for (const e of events) {
        const link = bridgeRef?.approvalLinks?.link(e) ?? null;
        if (link !== null) linksOut.push(`   approve ${e.data.eventType} ${e.subject}: ${link}`);
        const scenario = sim.scenarioOfEvent.get(e.subject ?? '');
        if (scenario === undefined) continue;
        const c = counts.get(scenario)!;
        const kind = transitionOf(e);
        c.set(kind, (c.get(kind) ?? 0) + 1);
      }
    },
  });

  const out = process.stdout;
  out.write(
    `scheduled-events-bridge demo\n` +
      `  IMDS simulator   ${url} (VM ${sim.vmName}, development timing: 1/60 of real notice periods)\n` +
      `  sinks            stdout (below) and file ${eventsFile}\n` +
      `  duration         ${durationS} s; ${SCENARIOS.length} scenarios\n`,
  );
  bridgeRef = bridge;
  await bridge.start();
  out.write(
    `  approvals        policy approves user-initiated events and freezes up to 8 s; freezes of 20 s or more once the probe has drained ${DRAIN_S} s; links for the rest below\n`,
  );
  out.write(
    `  probe            http://127.0.0.1:${probePort}/probe  (what a load balancer sees: 503 while a Freeze of this VM is pending)\n`,
  );
  out.write(`  metrics          ${bridge.observabilityUrl ?? 'off'}/metrics  (also /livez, /readyz)\n\n`);
  // approval links follow the events they belong to (the stdout sink prints events as it delivers them)
  const linkTimer = setInterval(() => {
    for (const l of linksOut.splice(0)) out.write(`${l}\n`);
  }, 250);
  const prober = watchProbe(`http://127.0.0.1:${probePort}/probe`, (line) => out.write(`${line}\n`));

  const stagger = Math.max(250, Math.min(5000, Math.floor((durationMs - TAIL_MS) / SCENARIOS.length)));
  const timers: NodeJS.Timeout[] = SCENARIOS.map((s, i) =>
    setTimeout(
      () => {
        out.write(`-- scenario ${s.name}: ${s.title}\n`);
        sim.playScenario(s.name);
      },
      500 + i * stagger,
    ),
  );

  const interrupted = await new Promise<boolean>((resolve) => {
    const t = setTimeout(() => resolve(false), durationMs);
    const detach = onShutdown(() => {
      clearTimeout(t);
      detach();
      resolve(true);
    });
  });
  for (const t of timers) clearTimeout(t);

  const kinds = TRANSITIONS.filter((k) => !['fleet.collision', 'fleet.paused', 'calendar.conflict', 'unwatched'].includes(k)); // the demo's one VM is in no fleet group and has no calendar, and no relay watches Azure's feed
  const rows = SCENARIOS.map((s) => [s.name, ...kinds.map((k) => String(counts.get(s.name)!.get(k) ?? 0))]);
  const total = kinds.map((k) => String([...counts.values()].reduce((a, c) => a + (c.get(k) ?? 0), 0)));
  out.write(
    `\nTransitions seen per scenario${interrupted ? ' (interrupted)' : ''}:\n${table(['SCENARIO', ...kinds], [...rows, ['total', ...total]])}\n`,
  );
  // the last act: a drill, and its report
  const drilled = interrupted ? true : await demoDrill(join(dir, 'state.db'), sim, out);
  clearInterval(linkTimer);
  prober.stop();
  await bridge.stop(5000);
  out.write(`\nEvery CloudEvent is also in ${eventsFile}\n`);
  return drilled ? EXIT.ok : EXIT.failure;
}

/** watchProbe asks the probe every 250 ms, as a load balancer would, and reports each change of its answer. */
function watchProbe(url: string, report: (line: string) => void): { stop(): void } {
  let last = '';
  let stopped = false;
  const http = demoHttp();
  const tick = async () => {
    try {
      const r = await ask(http, url);
      const body = JSON.parse(r.text) as { status?: string; eventType?: string; eventId?: string };
      const now = `${r.status} ${body.status ?? ''}${body.eventId ? ` (${body.eventType} ${body.eventId})` : ''}`;
      if (now !== last) report(`   probe lb: ${now}`);
      last = now;
    } catch {
      /* the bridge is starting or stopping */
    }
    if (!stopped) timer = setTimeout(() => void tick(), 250);
  };
  let timer = setTimeout(() => void tick(), 250);
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
      http.close();
    },
  };
}
