/**
 * Phase C3, a burst of fleet approvals: one client sends N signed approvals at once to one relay
 * (in this process), which passes them over the Service Bus stand-in (a process of its own) to N
 * bridges, each with its own IMDS simulator and inbox session (in ten more processes, ten VMs
 * each, as a fleet would be on machines of its own).
 * Each request's answer time and its VM's StartRequests time, from the moment the burst began:
 * the answers should follow the outcomes, not arrive together at the end. `node bench/burst.ts
 * [N]` runs it alone.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Agent, request } from 'undici';
import { validateConfig } from '../src/config/load.ts';
import { Bridge } from '../src/daemon/bridge.ts';
import { localRelayConfig } from '../src/commands/local-fleet.ts';
import type { FleetKeys } from '../src/fleet/keys.ts';
import { startRelay } from '../src/relay/relay.ts';
import { secretKey, signatureHeaders } from '../src/lib/standard-webhooks.ts';
import type { AmqpPeer } from '../src/simulator/servicebus/amqp-peer.ts';
import { ImdsSimulator } from '../src/simulator/server.ts';
import { API_SECRET, fleetApproval, fleetKeys, fleetPeer, sessionOf } from '../testkit/fleet.ts';
import { dir, dist, log, silent, sleep } from './common.ts';

interface FleetReady {
  readonly vms: { session: string; eventId: string }[];
}

const PROCESSES = 10;
const asPeer = (connectionString: string) => ({ connectionString: () => connectionString }) as unknown as AmqpPeer;

/** serviceBus runs the stand-in alone, says its connection string on stdout, and stops at `stop` on stdin. */
async function serviceBus(): Promise<void> {
  const peer = await fleetPeer();
  process.stdout.write(`${JSON.stringify({ connectionString: peer.connectionString() })}\n`);
  for await (const line of createInterface({ input: process.stdin })) if (line === 'stop') break;
  await peer.close();
}

/** fleet runs N bridges on the stand-in, says who they are on stdout, and answers `report` and `stop` on stdin. */
async function fleet(first: number, n: number, connectionString: string, keys: FleetKeys): Promise<void> {
  const vms: { sim: ImdsSimulator; bridge: Bridge; eventId: string }[] = [];
  for (let i = first; i < first + n; i++) {
    const sim = new ImdsSimulator({ vmName: `burst-vm-${String(i).padStart(3, '0')}`, peers: [], tickMs: 100 });
    await sim.listen(0);
    const eventId = sim.addEvent({ noticeMs: 3_600_000 }).eventId;
    const config = validateConfig(
      {
        imds: { endpoint: sim.url, pollIntervalMs: 1000 },
        state: { path: join(dir, `burst-${i}.db`) },
        approval: fleetApproval(asPeer(connectionString), keys, sessionOf(sim), 'https://approvals.example.com'),
        observability: { listen: 'off' },
      },
      'bench',
      {},
    );
    const bridge = await Bridge.create({ config, logger: silent });
    await bridge.start();
    vms.push({ sim, bridge, eventId });
  }
  for (let k = 0; k < 1200 && !vms.every((v) => v.bridge.store.journal.knowsEvent(v.eventId) && v.bridge.inbox?.connected); k++)
    await sleep(25);
  const ready: FleetReady = { vms: vms.map((v) => ({ session: sessionOf(v.sim), eventId: v.eventId })) };
  process.stdout.write(`${JSON.stringify(ready)}\n`);
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === 'report') {
      const starts = Object.fromEntries(
        vms.map((v) => [v.eventId, v.sim.startRequests.find((s) => s.eventIds.includes(v.eventId))?.at ?? null]),
      );
      process.stdout.write(`${JSON.stringify(starts)}\n`);
    }
    if (line === 'stop') break;
  }
  for (const v of vms) await v.bridge.stop(1000);
  for (const v of vms) await v.sim.close();
}

/** child starts this file in another process; `next` reads its next JSON line, `say` writes a line to it. */
function child(args: string[]) {
  const proc = spawn(process.execPath, [new URL(import.meta.url).pathname, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
  return {
    next: async <T>() => JSON.parse(String((await lines.next()).value)) as T,
    say: (line: string) => proc.stdin.write(`${line}\n`),
    stop: async () => {
      proc.stdin.end('stop\n');
      if (proc.exitCode === null) await new Promise((r) => proc.once('exit', r));
    },
  };
}

export async function phaseBurst(n: number) {
  const bus = child(['--service-bus']);
  const fleets: ReturnType<typeof child>[] = [];
  try {
    const { connectionString } = await bus.next<{ connectionString: string }>();
    const keys = fleetKeys();
    const per = Math.ceil(n / PROCESSES);
    for (let first = 0; first < n; first += per)
      fleets.push(child(['--fleet', String(first), String(Math.min(per, n - first)), connectionString, JSON.stringify(keys)]));
    const vms = (await Promise.all(fleets.map((f) => f.next<FleetReady>()))).flatMap((r) => r.vms);
    const relay = await startRelay(
      localRelayConfig(asPeer(connectionString), keys, {
        apiSecrets: [API_SECRET],
        rateLimit: { perSecond: 10_000, burst: 10_000 },
        replyWaitMs: 25_000,
        log: { level: 'silent' },
      }),
      silent,
      { host: '127.0.0.1', port: 0 },
    );
    for (let k = 0; k < 400 && !relay.bus?.listening; k++) await sleep(25);
    const key = secretKey(API_SECRET)!;
    // one client, as many connections as requests (a script's Promise.all with a pooled agent)
    const agent = new Agent({ connections: n, pipelining: 1 });
    const t0 = Date.now();
    const answers = await Promise.all(
      vms.map(async (v) => {
        const body = JSON.stringify({ vm: v.session, eventId: v.eventId, approver: 'burst' });
        const res = await request(`${relay.url}/v1/approvals`, {
          method: 'POST',
          dispatcher: agent,
          headers: { 'content-type': 'application/json', ...signatureHeaders([key], `msg_burst_${v.eventId}`, body) },
          body,
        });
        await res.body.dump();
        return { status: res.statusCode, at: Date.now() - t0 };
      }),
    );
    const starts: Record<string, number | null> = {};
    for (const f of fleets) {
      f.say('report');
      Object.assign(starts, await f.next<Record<string, number | null>>());
    }
    const started = vms.map((v) => (starts[v.eventId] ?? NaN) - t0);
    const statuses: Record<string, number> = {};
    for (const a of answers) statuses[a.status] = (statuses[a.status] ?? 0) + 1;
    // how long after its own VM's StartRequests each request was answered
    const lag = answers.map((a, i) => a.at - started[i]!).filter((x) => Number.isFinite(x));
    await agent.close();
    await relay.close();
    return {
      n,
      statuses,
      answer: dist(answers.map((a) => a.at)),
      toStartRequests: dist(started.filter((x) => Number.isFinite(x))),
      answerAfterStart: dist(lag),
    };
  } finally {
    await Promise.all(fleets.map((f) => f.stop()));
    await bus.stop();
  }
}

const [, , mode, ...args] = process.argv;
if (import.meta.url === `file://${process.argv[1]}` && mode === '--service-bus') {
  await serviceBus();
} else if (import.meta.url === `file://${process.argv[1]}` && mode === '--fleet') {
  await fleet(Number(args[0]), Number(args[1]), args[2]!, JSON.parse(args[3]!) as FleetKeys);
} else if (import.meta.url === `file://${process.argv[1]}`) {
  const n = Number(process.argv[2] ?? 100);
  log(`C3: a burst of ${n} approvals through the relay`);
  const r = await phaseBurst(n);
  const f = (d: { p50: number; p99: number; max: number }) => `p50 ${d.p50} ms, p99 ${d.p99} ms, max ${d.max} ms`;
  process.stdout.write(
    `statuses ${JSON.stringify(r.statuses)}\nanswer: ${f(r.answer)}\nStartRequests: ${f(r.toStartRequests)}\nanswer after its StartRequests: ${f(r.answerAfterStart)}\n`,
  );
}
