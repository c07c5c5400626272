/**
 * What the parts of `se-bridge demo --fleet` share: how they speak (`say`), wait (`until`, bounded
 * in count and time), ask over HTTP (`ask`, each request with a deadline), time their story
 * (`stopwatch`), start a simulated VM with its bridge (`startMember`), and stop everything at the
 * end, last started first (`Closers`), so the fleet view at the end still sees every member.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import { validateConfig } from '../config/load.ts';
import { Bridge } from '../daemon/bridge.ts';
import { HttpClient } from '../lib/http-client.ts';
import type { BridgeEvent } from '../pipeline/cloudevent.ts';
import { ImdsSimulator } from '../simulator/server.ts';

export const say = (text: string): void => void process.stdout.write(`${text}\n`);

/** How long one request of the demo may take. */
const ASK_DEADLINE_MS = 10_000;

/** What every part of the fleet demo is given. */
export interface DemoContext {
  readonly dir: string;
  readonly logger: Logger;
  /** The fleet store every member names (Blob Storage, served by Azurite). */
  readonly store: Record<string, unknown>;
  readonly closers: Closers;
  readonly http: HttpClient;
}

/** Closers stops what the demo started, last started first, each one even when another fails. */
export class Closers {
  readonly #all: (() => Promise<void>)[] = [];

  add(close: () => Promise<void>): void {
    this.#all.push(close);
  }

  async close(): Promise<void> {
    let first: unknown = null;
    for (const close of this.#all.splice(0).reverse()) await close().catch((err: unknown) => (first ??= err));
    if (first !== null) throw first;
  }
}

/** until waits for `check` to give a value, looking every 50 ms; it throws, naming `what`, after `timeoutMs`. */
export async function until<T>(
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (let i = 0; Date.now() < end && i < 10_000; i++) {
    const v = await check();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the demo timed out waiting for ${what}`);
}

/** stopwatch: the time since it was made, as the demo prints it (+1.2 s). */
export function stopwatch(): (t?: number) => string {
  const t0 = Date.now();
  return (t = Date.now()) => `+${((t - t0) / 1000).toFixed(1)} s`;
}

/** ask makes one request with a deadline and gives its status and body as text. */
export async function ask(
  http: HttpClient,
  url: string,
  init: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; text: string }> {
  const res = await http.request(url, {
    method: init.method ?? 'GET',
    ...(init.headers === undefined ? {} : { headers: init.headers }),
    ...(init.body === undefined ? {} : { body: init.body }),
    signal: AbortSignal.timeout(ASK_DEADLINE_MS),
    maxBodyBytes: 1024 * 1024,
    onOverflow: 'destroy',
  });
  return { status: res.status, text: res.bytes.toString('utf8') };
}

/** demoHttp: the demo's HTTP client (no proxy: every peer is on 127.0.0.1). */
export const demoHttp = (): HttpClient => new HttpClient({ proxy: 'none', maxSockets: 8, keepAliveMs: 5000 });

/** A simulated VM: its IMDS and the bridge that polls it. */
export interface Member {
  readonly name: string;
  readonly sim: ImdsSimulator;
  readonly bridge: Bridge;
}

/**
 * startMember starts a VM's IMDS simulator and its bridge: state and an audit file in `dir`,
 * no observability listener unless `config` says one, and `config`'s sections on top (its sinks
 * beside the audit file; made from the simulator when they need what its IMDS says). The bridge and the simulator are stopped by `closers` at the end.
 */
export async function startMember(
  o: { dir: string; logger: Logger; closers: Closers },
  name: string,
  config: Record<string, unknown> | ((sim: ImdsSimulator) => Record<string, unknown>),
  more: { pollIntervalMs?: number; tickMs?: number; onCommitted?: (events: readonly BridgeEvent[]) => void } = {},
): Promise<Member> {
  const sim = new ImdsSimulator({ vmName: name, peers: [], timing: 'dev', ...(more.tickMs === undefined ? {} : { tickMs: more.tickMs }) });
  const url = await sim.listen(0);
  o.closers.add(() => sim.close());
  const { sinks, ...rest } = typeof config === 'function' ? config(sim) : config;
  const valid = validateConfig(
    {
      imds: { endpoint: url, pollIntervalMs: more.pollIntervalMs ?? 250 },
      state: { path: join(o.dir, `${name}.db`) },
      observability: { listen: 'off' },
      ...rest,
      sinks: [{ name: 'audit', type: 'file', path: join(o.dir, `${name}.jsonl`) }, ...((sinks as unknown[] | undefined) ?? [])],
    },
    'demo --fleet',
    {},
  );
  const bridge = await Bridge.create({
    config: valid,
    logger: o.logger,
    ...(more.onCommitted === undefined ? {} : { onCommitted: more.onCommitted }),
  });
  o.closers.add(() => bridge.stop(1000));
  await bridge.start();
  return { name, sim, bridge };
}

/** imdsReadsSince: how many times the VM read its scheduled events from IMDS since `t`. */
export const imdsReadsSince = (sim: ImdsSimulator, t: number): number =>
  sim.requests.filter((r) => r.at >= t && r.method === 'GET' && r.path.startsWith('/metadata/scheduledevents')).length;
