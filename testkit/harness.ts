/**
 * The in-process bridge harness every integration test and the benchmarks share: an IMDS
 * simulator (new, or one the caller shares between bridges), a temporary directory, a bridge
 * with a real SQLite store and real sinks (by default a file sink writing events.jsonl), its
 * log lines captured, and ways to read back what reached the sinks. `stopAll` cleans up.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { pino, type Logger } from 'pino';
import { validateConfig } from '../src/config/load.ts';
import type { BridgeConfig } from '../src/config/schema.ts';
import { Bridge, type BridgeOptions } from '../src/daemon/bridge.ts';
import { transitionOf } from '../src/pipeline/cloudevent.ts';
import { ImdsSimulator, type SimulatorOptions } from '../src/simulator/server.ts';

export interface HarnessOptions {
  /** A simulator to share (it is not closed by this harness), or the options of a new one. */
  readonly sim?: ImdsSimulator | SimulatorOptions;
  /** Configuration sections, each merged over the harness's defaults. */
  readonly config?: Record<string, unknown>;
  /** The sinks, or a function of the harness's directory that gives them; default: one file sink, `audit`, writing `events.jsonl` there. */
  readonly sinks?: readonly Record<string, unknown>[] | ((dir: string) => readonly Record<string, unknown>[]);
  /** Start the bridge (default true). */
  readonly start?: boolean;
  readonly dryRun?: boolean;
  /** A directory to keep the state and the files in (kept afterwards; a restart reuses it); default: a new temporary one. */
  readonly dir?: string;
  /** The bridge's logger, made from the configuration (default: one that keeps every line in `lines`). */
  readonly logger?: (config: BridgeConfig) => Logger;
  /** Further options of Bridge.create. */
  readonly bridge?: Partial<Omit<BridgeOptions, 'config' | 'logger' | 'stdout' | 'dryRun'>>;
}

/** A CloudEvent as the file sink writes it. */
export interface WrittenEvent {
  readonly id: string;
  readonly type: string;
  readonly subject: string;
  readonly source: string;
  readonly time: string;
  readonly data: Record<string, any>;
}

export interface Harness {
  readonly bridge: Bridge;
  readonly sim: ImdsSimulator;
  readonly config: BridgeConfig;
  /** The harness's temporary directory (state.db, events.jsonl). */
  readonly dir: string;
  /** The log lines, as objects (none when the caller gave its own logger). */
  readonly lines: Record<string, unknown>[];
  /** What the stdout sink wrote. */
  stdout(): string;
  /** The CloudEvents in a file the file sink writes (default events.jsonl), oldest first. */
  events(file?: string): WrittenEvent[];
  /** `<transition>:<EventId>` of each event written, oldest first. */
  kinds(file?: string): string[];
  /** Stops the bridge (once), closes a simulator the harness made, removes the directory. */
  stop(): Promise<void>;
}

const live = new Set<Harness>();

export async function startBridge(o: HarnessOptions = {}): Promise<Harness> {
  const owned = !(o.sim instanceof ImdsSimulator);
  const sim = o.sim instanceof ImdsSimulator ? o.sim : new ImdsSimulator({ vmName: 'vm0', peers: ['vm1', 'vm2'], tickMs: 10, ...o.sim });
  if (owned) await sim.listen(0);
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'se-bridge-test-'));
  const extra = o.config ?? {};
  const section = (name: string, base: Record<string, unknown>) => ({
    ...base,
    ...((extra[name] as Record<string, unknown> | undefined) ?? {}),
  });
  const config = validateConfig(
    {
      ...extra,
      imds: section('imds', { endpoint: sim.url, pollIntervalMs: 200 }),
      state: section('state', { path: join(dir, 'state.db') }),
      observability: section('observability', { listen: 'off' }),
      sinks: typeof o.sinks === 'function' ? o.sinks(dir) : (o.sinks ?? [{ name: 'audit', type: 'file', path: join(dir, 'events.jsonl') }]),
    },
    'test',
    {},
  );
  const lines: Record<string, unknown>[] = [];
  const logger =
    o.logger?.(config) ?? pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  const out = new PassThrough();
  let written = '';
  out.on('data', (c: Buffer) => (written += c.toString()));
  const bridge = await Bridge.create({ ...o.bridge, config, logger, stdout: out, dryRun: o.dryRun ?? false });
  let stopped: Promise<void> | null = null;
  const events = (file = 'events.jsonl'): WrittenEvent[] => {
    let text = '';
    try {
      text = readFileSync(join(dir, file), 'utf8');
    } catch {
      return [];
    }
    return text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as WrittenEvent);
  };
  const h: Harness = {
    bridge,
    sim,
    config,
    dir,
    lines,
    stdout: () => written,
    events,
    kinds: (file) => events(file).map((e) => `${transitionOf(e)}:${e.subject}`),
    stop: () =>
      (stopped ??= (async () => {
        live.delete(h);
        await bridge.stop(1000);
        if (owned) await sim.close();
        if (o.dir === undefined) rmSync(dir, { recursive: true, force: true });
      })()),
  };
  live.add(h);
  if (o.start ?? true) await bridge.start();
  return h;
}

/** stopAll stops every harness still running (for afterEach). */
export async function stopAll(): Promise<void> {
  await Promise.all([...live].map((h) => h.stop()));
}
