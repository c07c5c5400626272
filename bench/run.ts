/**
 * npm run bench [-- --quick]: every figure of the README's Performance section, measured
 * against the project's IMDS simulator and local peers on 127.0.0.1, side by side with the
 * upstream reference algorithm. Writes bench/results.json, bench/results.md and
 * docs/latency.svg. Prints figures; never fails on a time.
 *
 *   A. change-to-delivery latency at poll intervals 1000/500/200 ms and for the reference
 *      poller, all running at once, each against its own simulator and webhook peer;
 *   B. footprint over 60 s (RSS, CPU share, IMDS request rate) of webhook+file, of every sink
 *      type, and of the reference poller, at once; start-up time to the first poll;
 *   C. approval round trip: signed POST /v1/approvals to StartRequests at the simulator;
 *   D. fan-out: one document with 50 events to six sinks, and again beside a sink that never answers;
 *   E. throughput: 10,000 transitions through diff, store and dispatcher to a local webhook.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { request } from 'undici';
import { validateConfig } from '../src/config/load.ts';
import { Bridge } from '../src/daemon/bridge.ts';
import { toCloudEvent } from '../src/pipeline/cloudevent.ts';
import { diff } from '../src/pipeline/diff.ts';
import { fullJitter } from '../src/lib/time.ts';
import { Dispatcher } from '../src/delivery/dispatcher.ts';
import { identityFrom } from '../src/imds/identity.ts';
import { ImdsSimulator } from '../src/simulator/server.ts';
import { toDomainDocument, WireDocument, type EventsDocument } from '../src/imds/wire.ts';
import { Store } from '../src/store/store.ts';
import { DeliveryConfig, FilterConfig } from '../src/sinks/contract.ts';
import { secretKey, signatureHeaders } from '../src/lib/standard-webhooks.ts';
import { webhookSink, type WebhookConfig } from '../src/sinks/webhook.ts';
import { SinkConfig } from '../src/config/schema.ts';
import { AmqpPeer } from '../testkit/amqp-peer.ts';
import { HttpPeer } from '../testkit/http-peer.ts';

const ROOT = join(fileURLToPath(import.meta.url), '..', '..');
const CLI = join(ROOT, 'src', 'cli.ts');
const quick = process.argv.includes('--quick');
const silent = pino({ level: 'silent' });
const dir = mkdtempSync(join(tmpdir(), 'se-bridge-bench-'));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const q = (s: readonly number[], p: number) => (s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor(p * s.length))]!);
const dist = (raw: number[]) => {
  const s = [...raw].sort((a, b) => a - b);
  return { n: s.length, p50: q(s, 0.5), p90: q(s, 0.9), p99: q(s, 0.99), max: s.at(-1) ?? NaN, samples: s };
};
const log = (line: string) => process.stderr.write(`bench: ${line}\n`);

function rssMiB(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}
function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, clock ticks at 100 Hz
}
/** pidOf: the node process behind the npm-less spawn (we spawn node directly, so it is the child). */
function daemon(args: string[]): ChildProcess {
  return spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
}
function bridgeConfig(name: string, o: Record<string, unknown>): string {
  const path = join(dir, `${name}.json`);
  writeFileSync(path, JSON.stringify({ state: { path: join(dir, `${name}.db`) }, log: { level: 'warn' }, observability: { listen: 'off' }, ...o }));
  return path;
}
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}

// ----- A. change-to-delivery latency ----------------------------------------------------------

interface Lane {
  name: string;
  sim: ImdsSimulator;
  hook: HttpPeer;
  child: ChildProcess;
  changedAt: Map<string, number>;
  latency: number[];
}

async function lane(name: string, pollIntervalMs: number | 'reference'): Promise<Lane> {
  const sim = new ImdsSimulator({ vmName: 'bench-vm', tickMs: 20 });
  await sim.listen(0);
  const hook = new HttpPeer();
  await hook.listen();
  const l: Lane = { name, sim, hook, child: null as unknown as ChildProcess, changedAt: new Map(), latency: [] };
  hook.answer = (r) => {
    const id = String(r.headers['ce-subject'] ?? (JSON.parse(r.body) as { EventId?: string }).EventId ?? '');
    const t = l.changedAt.get(id);
    if (t !== undefined) {
      l.latency.push(performance.now() - t);
      l.changedAt.delete(id);
    }
    return { status: 204 };
  };
  l.child =
    pollIntervalMs === 'reference'
      ? daemon([join(ROOT, 'bench', 'reference-poller.ts'), sim.url, hook.url])
      : daemon([CLI, 'run', '--config', bridgeConfig(name, { imds: { endpoint: sim.url, pollIntervalMs }, sinks: [{ name: 'hook', type: 'webhook', url: hook.url }] })]);
  return l;
}

async function phaseLatency() {
  const seconds = quick ? 25 : 75;
  const lanes = await Promise.all([lane('poll-1000ms', 1000), lane('poll-500ms', 500), lane('poll-200ms', 200), lane('reference', 'reference')]);
  await sleep(2000);
  const end = performance.now() + seconds * 1000;
  // each lane gets changes at random moments (exponential gaps, mean 330 ms)
  await Promise.all(
    lanes.map(async (l) => {
      while (performance.now() < end) {
        await sleep(Math.min(2000, -Math.log(1 - Math.random()) * 330));
        const e = l.sim.addEvent({ noticeMs: 3_600_000 });
        l.changedAt.set(e.eventId, performance.now());
      }
    }),
  );
  await sleep(2500);
  await Promise.all(lanes.map((l) => stop(l.child)));
  await Promise.all(lanes.flatMap((l) => [l.sim.close(), l.hook.close()]));
  return Object.fromEntries(lanes.map((l) => [l.name, dist(l.latency)]));
}

// ----- B. footprint ----------------------------------------------------------------------------

async function phaseFootprint() {
  const seconds = quick ? 15 : 60;
  const hook = new HttpPeer();
  await hook.listen();
  const amqp = new AmqpPeer();
  await amqp.listen();
  const slack = new HttpPeer();
  await slack.listen();
  slack.answer = () => ({ status: 200, body: 'ok' });
  const sims = await Promise.all([0, 1, 2].map(async () => {
    const s = new ImdsSimulator({ vmName: 'bench-vm', tickMs: 50 });
    await s.listen(0);
    return s;
  }));
  const basic = (url: string) => [
    { name: 'hook', type: 'webhook', url: hook.url },
    { name: 'audit', type: 'file', path: join(dir, `${url.length}-${Math.random()}.jsonl`) },
  ];
  const configs = [
    { name: 'webhook+file', args: [CLI, 'run', '--config', bridgeConfig('fp-basic', { imds: { endpoint: sims[0]!.url }, sinks: basic(sims[0]!.url) })], sim: sims[0]! },
    {
      name: 'every sink type',
      args: [CLI, 'run', '--config', bridgeConfig('fp-all', {
        imds: { endpoint: sims[1]!.url },
        sinks: [
          ...basic(sims[1]!.url),
          { name: 'hub', type: 'eventhubs', connectionString: amqp.connectionString('maintenance') },
          { name: 'queue', type: 'servicebus', connectionString: amqp.connectionString(), entity: 'q' },
          { name: 'slack', type: 'slack', webhookUrl: `${slack.url}/services/x` },
          { name: 'teams', type: 'teams', webhookUrl: `${slack.url}/teams` },
          { name: 'exec', type: 'exec', command: ['/bin/true'] },
          { name: 'out', type: 'stdout', format: 'json' },
        ],
      })],
      sim: sims[1]!,
    },
    { name: 'reference poller', args: [join(ROOT, 'bench', 'reference-poller.ts'), sims[2]!.url, hook.url], sim: sims[2]! },
  ];
  const started = configs.map((c) => {
    const t0 = performance.now();
    const mark = c.sim.requests.length;
    return { ...c, child: daemon(c.args), t0, mark, firstPollMs: NaN };
  });
  for (let k = 0; k < 1000 && started.some((s) => Number.isNaN(s.firstPollMs)); k++) {
    for (const s of started) {
      if (Number.isNaN(s.firstPollMs) && s.sim.requests.slice(s.mark).some((r) => r.path === '/metadata/scheduledevents')) s.firstPollMs = performance.now() - s.t0;
    }
    await sleep(5);
  }
  // one event through every sink so each client is connected, then measure
  for (const s of started) s.sim.addEvent({ noticeMs: 3_600_000 });
  await sleep(3000);
  const before = started.map((s) => ({ cpu: cpuSeconds(s.child.pid!), at: performance.now(), requests: s.sim.requests.length }));
  await sleep(seconds * 1000);
  const out = started.map((s, i) => {
    const elapsed = (performance.now() - before[i]!.at) / 1000;
    const reqs = s.sim.requests.slice(before[i]!.requests).map((r) => r.at);
    let maxPerSecond = 0;
    for (let a = 0, b = 0; b < reqs.length; b++) {
      while (reqs[b]! - reqs[a]! >= 1000) a++;
      maxPerSecond = Math.max(maxPerSecond, b - a + 1);
    }
    return {
      name: s.name,
      startupToFirstPollMs: Math.round(s.firstPollMs),
      rssMiB: Math.round(rssMiB(s.child.pid!) * 10) / 10,
      cpuPercent: Math.round(((cpuSeconds(s.child.pid!) - before[i]!.cpu) / elapsed) * 1000) / 10,
      imdsRequestsPerSecond: Math.round((reqs.length / elapsed) * 100) / 100,
      imdsMaxInAnySecond: maxPerSecond,
    };
  });
  await Promise.all(started.map((s) => stop(s.child)));
  await Promise.all([hook.close(), amqp.close(), slack.close(), ...sims.map((s) => s.close())]);
  return out;
}

// ----- C. approval round trip ----------------------------------------------------------------

async function phaseApprovals() {
  const n = quick ? 100 : 500;
  const secret = `whsec_${Buffer.alloc(32, 2).toString('base64')}`;
  const key = secretKey(secret)!;
  const sim = new ImdsSimulator({ tickMs: 100 });
  await sim.listen(0);
  const config = validateConfig(
    { imds: { endpoint: sim.url, pollIntervalMs: 60_000 }, state: { path: join(dir, 'approvals.db') }, approval: { secret }, server: { listen: '127.0.0.1:0', rateLimit: { perSecond: 1000, burst: 1000 } }, observability: { listen: 'off' } },
    'bench',
    {},
  );
  const ids = Array.from({ length: n }, () => sim.addEvent({ noticeMs: 3_600_000 }).eventId);
  const bridge = await Bridge.create({ config, logger: silent });
  await bridge.start();
  for (let k = 0; k < 400 && !bridge.store.knowsEvent(ids.at(-1)!); k++) await sleep(25);
  const samples: number[] = [];
  for (const id of ids) {
    const body = JSON.stringify({ eventId: id, approver: 'bench' });
    const t0 = Date.now();
    const res = await request(`${bridge.approvalServerUrl}/v1/approvals`, { method: 'POST', headers: { 'content-type': 'application/json', ...signatureHeaders([key], `msg_${id}`, body) }, body });
    await res.body.dump();
    const at = sim.startRequests.find((s) => s.eventIds.includes(id))?.at;
    if (res.statusCode === 200 && at !== undefined) samples.push(at - t0);
    await sleep(205); // the IMDS budget is 5 requests/s, StartRequests included
  }
  await bridge.stop(1000);
  await sim.close();
  return dist(samples);
}

// ----- D. fan-out and isolation ----------------------------------------------------------------

async function phaseFanout(withStuck: boolean) {
  const sim = new ImdsSimulator({ vmName: 'bench-vm', tickMs: 20 });
  await sim.listen(0);
  const http = new HttpPeer();
  await http.listen();
  http.answer = (r) => (r.url === '/stuck' ? { hang: true } : r.url.startsWith('/teams') ? { status: 202 } : { status: 200, body: 'ok' });
  const amqp = new AmqpPeer();
  await amqp.listen();
  const file = join(dir, `fanout-${withStuck}.jsonl`);
  const sinks: Record<string, unknown>[] = [
    { name: 'webhook', type: 'webhook', url: `${http.url}/hook` },
    { name: 'file', type: 'file', path: file },
    { name: 'eventhubs', type: 'eventhubs', connectionString: amqp.connectionString('maintenance') },
    { name: 'servicebus', type: 'servicebus', connectionString: amqp.connectionString(), entity: 'q' },
    { name: 'slack', type: 'slack', webhookUrl: `${http.url}/services/x` },
    { name: 'teams', type: 'teams', webhookUrl: `${http.url}/teams` },
  ];
  if (withStuck) sinks.push({ name: 'stuck', type: 'webhook', url: `${http.url}/stuck`, delivery: { timeoutMs: 600_000 } });
  const config = validateConfig({ imds: { endpoint: sim.url, pollIntervalMs: 200 }, state: { path: join(dir, `fanout-${withStuck}.db`) }, sinks, observability: { listen: 'off' } }, 'bench', {});
  const doneAt = new Map<string, number>();
  let counts: Record<string, number> = {};
  const bridge = await Bridge.create({
    config,
    logger: silent,
    onOutcome: (r) => {
      if (r.outcome !== 'delivered') return;
      counts[r.sink] = (counts[r.sink] ?? 0) + 1;
      if (counts[r.sink] === 50) doneAt.set(r.sink, performance.now());
    },
  });
  await bridge.start();
  // warm up: one event through every sink, so connections exist in both runs alike
  sim.addEvent({ noticeMs: 3_600_000 });
  for (let k = 0; k < 500 && Object.keys(counts).length < sinks.length - (withStuck ? 1 : 0); k++) await sleep(10);
  await sleep(500);
  counts = {};
  const t0 = performance.now();
  for (let i = 0; i < 50; i++) sim.addEvent({ noticeMs: 3_600_000 });
  const names = ['webhook', 'file', 'eventhubs', 'servicebus', 'slack', 'teams'];
  for (let k = 0; k < 3000 && names.some((n) => !doneAt.has(n)); k++) await sleep(10);
  await bridge.stop(500);
  await Promise.all([sim.close(), http.close(), amqp.close()]);
  return Object.fromEntries(names.map((n) => [n, Math.round((doneAt.get(n) ?? NaN) - t0)]));
}

// ----- E. throughput ---------------------------------------------------------------------------

async function phaseThroughput() {
  const total = quick ? 2000 : 10_000;
  const perDoc = 100;
  const hook = new HttpPeer();
  await hook.listen();
  let received = 0;
  hook.answer = () => {
    received++;
    return { status: 204 };
  };
  const path = join(dir, 'throughput.db');
  const store = Store.open(path);
  const config = SinkConfig.parse({ name: 'hook', type: 'webhook', url: hook.url }) as WebhookConfig;
  const sink = await webhookSink.create(config, { logger: silent, stdout: process.stdout });
  const dispatcher = new Dispatcher({ store, logger: silent, targets: [{ name: 'hook', type: 'webhook', sink, delivery: DeliveryConfig.parse({}), maxBatchSize: sink.maxBatchSize ?? 1, filter: FilterConfig.parse({}), prepare: false }] });
  dispatcher.start();
  const vm = identityFrom(null, { name: 'bench-vm' });
  let previous: EventsDocument | null = null;
  const events: Record<string, unknown>[] = [];
  const t0 = performance.now();
  for (let d = 0; d < total / perDoc; d++) {
    for (let i = 0; i < perDoc; i++) {
      events.push({ EventId: `E-${d}-${i}`, EventType: 'Reboot', EventStatus: 'Scheduled', Resources: ['bench-vm'], NotBefore: 'Mon, 11 Apr 2022 22:26:58 GMT', DurationInSeconds: -1 });
    }
    const doc = toDomainDocument(WireDocument.parse({ DocumentIncarnation: d + 2, Events: events.slice(-perDoc) })).document;
    const observedAt = new Date().toISOString();
    const ces = diff(previous, doc).filter((t) => t.kind === 'scheduled').map((t) => toCloudEvent(t, { vm, observedAt }));
    store.commit({ document: doc, etag: null, observedAt, events: ces.map((e) => ({ id: e.id, eventId: e.subject!, transition: 'scheduled', json: JSON.stringify(e), sinks: ['hook'] })) });
    dispatcher.notify();
    previous = { incarnation: doc.incarnation, events: [] };
  }
  const committedMs = performance.now() - t0;
  for (let k = 0; k < 12_000 && received < total; k++) await sleep(5);
  const elapsedMs = performance.now() - t0;
  await dispatcher.stop(1000);
  const bytes = statSync(path).size + (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);
  store.close();
  await hook.close();
  return { transitions: total, received, committedPerSecond: Math.round(total / (committedMs / 1000)), deliveredPerSecond: Math.round(received / (elapsedMs / 1000)), storeBytesPerEvent: Math.round(bytes / total) };
}

// ----- F. a 10-minute outage under the default delivery policy -----------------------------------

/** phaseOutage replays the dispatcher's own backoff (fullJitter, the default DeliveryConfig) over many simulated outages. */
function phaseOutage(outageMs: number, trials: number) {
  const d = DeliveryConfig.parse({});
  const attempts: number[] = [];
  const waits: number[] = [];
  let deadLettered = 0;
  for (let t = 0; t < trials; t++) {
    let now = 0;
    let n = 0;
    for (;;) {
      n += 1;
      if (now >= outageMs) break;
      if (n >= d.maxAttempts || now > d.maxAgeMs) {
        deadLettered += 1;
        break;
      }
      now += fullJitter(n - 1, d.initialBackoffMs, d.maxBackoffMs) + 5;
    }
    attempts.push(n);
    waits.push(now - outageMs);
  }
  const a = dist(attempts);
  const w = dist(waits);
  return { trials, deadLettered, attemptsMedian: a.p50, attemptsMax: a.max, recoveryWaitMs: { p50: Math.round(w.p50), p90: Math.round(w.p90), max: Math.round(w.max) } };
}

// ----- the run ---------------------------------------------------------------------------------

function svg(latency: Record<string, { samples: number[] }>): string {
  const W = 720;
  const H = 380;
  const L = 60;
  const B = 330;
  const maxX = Math.max(...Object.values(latency).flatMap((l) => l.samples));
  const xMax = Math.ceil(maxX / 250) * 250;
  const colors: Record<string, string> = { 'poll-200ms': '#1b7f3b', 'poll-500ms': '#1f5fbf', 'poll-1000ms': '#8a3ffc', reference: '#c4314b' };
  const x = (v: number) => L + (v / xMax) * (W - L - 20);
  const y = (p: number) => B - p * (B - 30);
  const lines = Object.entries(latency)
    .map(([name, l]) => {
      const pts = l.samples.map((v, i) => `${x(v).toFixed(1)},${y((i + 1) / l.samples.length).toFixed(1)}`).join(' ');
      return `<polyline fill="none" stroke="${colors[name] ?? '#333'}" stroke-width="2" points="${x(0)},${y(0)} ${pts}"/>`;
    })
    .join('\n');
  const ticks = Array.from({ length: xMax / 250 + 1 }, (_, i) => i * 250)
    .filter((v) => v % (xMax > 2000 ? 500 : 250) === 0)
    .map((v) => `<line x1="${x(v)}" y1="${B}" x2="${x(v)}" y2="${B + 5}" stroke="#555"/><text x="${x(v)}" y="${B + 20}" text-anchor="middle">${v}</text>`)
    .join('');
  const yt = [0, 0.5, 0.9, 0.99].map((p) => `<text x="${L - 8}" y="${y(p) + 4}" text-anchor="end">${p === 0.99 ? 'p99' : p === 0.9 ? 'p90' : p === 0.5 ? 'p50' : '0'}</text><line x1="${L}" y1="${y(p)}" x2="${W - 20}" y2="${y(p)}" stroke="#eee"/>`).join('');
  const legend = Object.keys(latency)
    .map((name, i) => `<rect x="${W - 250}" y="${B - 84 + i * 18}" width="14" height="4" fill="${colors[name]}"/><text x="${W - 230}" y="${B - 78 + i * 18}">${name === 'reference' ? 'reference algorithm (1 s sleep)' : `se-bridge, ${name.replace('poll-', 'poll every ')}`}</text>`)
    .join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="#fff"/>
<text x="${L}" y="20" font-size="14" font-weight="bold">IMDS change to webhook delivery: cumulative distribution</text>
${yt}<line x1="${L}" y1="${B}" x2="${W - 20}" y2="${B}" stroke="#555"/>${ticks}
<text x="${(W + L) / 2}" y="${H - 8}" text-anchor="middle">milliseconds</text>
${lines}
${legend}
</svg>
`;
}

try {
  const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? '', memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, quick };
  log(`A: latency (${quick ? 25 : 75} s, four lanes at once)`);
  const latency = await phaseLatency();
  log(`B: footprint (${quick ? 15 : 60} s, three processes at once)`);
  const footprint = await phaseFootprint();
  log('C: approval round trip');
  const approvals = await phaseApprovals();
  log('D: fan-out');
  const fanout = await phaseFanout(false);
  const fanoutStuck = await phaseFanout(true);
  log('E: throughput');
  const throughput = await phaseThroughput();
  const outage = phaseOutage(10 * 60_000, quick ? 2000 : 20_000);

  const strip = (d: ReturnType<typeof dist>) => ({ n: d.n, p50: Math.round(d.p50), p90: Math.round(d.p90), p99: Math.round(d.p99), max: Math.round(d.max) });
  const results = {
    at: new Date().toISOString(),
    machine,
    changeToDeliveryMs: Object.fromEntries(Object.entries(latency).map(([k, v]) => [k, strip(v)])),
    footprint,
    approvalRoundTripMs: strip(approvals),
    fanoutMs: { alone: fanout, besideStuckSink: fanoutStuck },
    throughput,
    tenMinuteOutage: outage,
  };
  writeFileSync(join(ROOT, 'bench', 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(ROOT, 'docs', 'latency.svg'), svg(latency));

  const ref = results.changeToDeliveryMs.reference!;
  const ratio = (v: number, r: number) => (r > 0 ? `${(v / r).toFixed(2)}×` : '-');
  const refFp = footprint.find((f) => f.name === 'reference poller')!;
  const md = [
    `Measured by \`npm run bench${quick ? ' -- --quick' : ''}\` on ${machine.cpus} cores (${machine.cpuModel}), ${machine.memoryGiB} GiB, Node ${machine.node}; everything on 127.0.0.1.`,
    '',
    '| IMDS change to webhook delivery | changes | p50 | p90 | p99 | max | p50 vs reference |',
    '|---|---|---|---|---|---|---|',
    ...Object.entries(results.changeToDeliveryMs).map(([k, v]) => `| ${k === 'reference' ? 'reference algorithm (sleep 1 s, compare incarnation)' : `se-bridge, ${k.replace('poll-', 'poll every ')}`} | ${v.n} | ${v.p50} ms | ${v.p90} ms | ${v.p99} ms | ${v.max} ms | ${ratio(v.p50, ref.p50)} |`),
    '',
    '| footprint over the measuring window | start-up to first poll | RSS | CPU | IMDS requests/s (max in any second) | RSS vs reference |',
    '|---|---|---|---|---|---|',
    ...footprint.map((f) => `| ${f.name} | ${f.startupToFirstPollMs} ms | ${f.rssMiB} MiB | ${f.cpuPercent} % | ${f.imdsRequestsPerSecond} (${f.imdsMaxInAnySecond}) | ${ratio(f.rssMiB, refFp.rssMiB)} |`),
    '',
    `| approval round trip (signed POST /v1/approvals to StartRequests at IMDS) | ${approvals.n} approvals | p50 ${Math.round(approvals.p50)} ms | p99 ${Math.round(approvals.p99)} ms |`,
    '|---|---|---|---|',
    '',
    '| 50 events in one document, until all 50 are delivered at each sink | webhook | file | Event Hubs | Service Bus | Slack | Teams |',
    '|---|---|---|---|---|---|---|',
    `| six sinks | ${Object.values(fanout).map((v) => `${v} ms`).join(' | ')} |`,
    `| the same six, beside a seventh that never answers | ${Object.values(fanoutStuck).map((v) => `${v} ms`).join(' | ')} |`,
    '',
    `| throughput: ${throughput.transitions} transitions through diff, store and dispatcher to a local webhook | committed ${throughput.committedPerSecond}/s | delivered ${throughput.deliveredPerSecond}/s | ${throughput.storeBytesPerEvent} store bytes per event |`,
    '|---|---|---|---|',
    '',
    `| a 10-minute webhook outage, default policy (${outage.trials} simulated runs of the dispatcher's backoff) | attempts: median ${outage.attemptsMedian}, max ${outage.attemptsMax} | dead-lettered: ${outage.deadLettered} | delivered after recovery: p50 ${(outage.recoveryWaitMs.p50 / 1000).toFixed(1)} s, max ${(outage.recoveryWaitMs.max / 1000).toFixed(1)} s |`,
    '|---|---|---|---|',
    '',
  ].join('\n');
  writeFileSync(join(ROOT, 'bench', 'results.md'), md);
  process.stdout.write(`\n${md}\nwritten: bench/results.json, bench/results.md, docs/latency.svg\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
