/**
 * A small Prometheus registry: counters, gauges and histograms with labels, written in the text
 * exposition format 0.0.4, and Node's process metrics under the names every Prometheus client
 * library uses (process_*, nodejs_*), so standard dashboards work.
 *
 * It replaces prom-client, whose default metrics sample the event loop delay every 10 ms: about
 * 200 wake-ups a second, most of the daemon's idle CPU. Here the event loop lag is measured when
 * scraped (one setImmediate), and nothing runs between scrapes.
 *
 * @see https://prometheus.io/docs/instrumenting/exposition_formats/
 */
import { readdirSync, readFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';

type Labels = Readonly<Record<string, string | number>>;
type Kind = 'counter' | 'gauge' | 'histogram';

interface Family {
  readonly name: string;
  readonly help: string;
  readonly kind: Kind;
  /** Appends the sample lines (after HELP and TYPE). */
  write(out: string[]): void;
}

export class Registry {
  readonly contentType = 'text/plain; version=0.0.4; charset=utf-8';
  readonly #families: Family[] = [];
  readonly #collectors: (() => void | Promise<void>)[] = [];

  register<F extends Family>(family: F, collect?: () => void | Promise<void>): F {
    if (this.#families.some((f) => f.name === family.name)) throw new Error(`metric ${family.name} is registered twice`);
    this.#families.push(family);
    if (collect !== undefined) this.#collectors.push(collect);
    return family;
  }

  /** metrics runs the collectors, then writes every family. */
  async metrics(): Promise<string> {
    for (const collect of this.#collectors) await collect();
    const out: string[] = [];
    for (const f of this.#families) {
      out.push(`# HELP ${f.name} ${f.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`, `# TYPE ${f.name} ${f.kind}`);
      f.write(out);
    }
    return `${out.join('\n')}\n`;
  }
}

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(
    ([k, v]) => `${k}="${String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`,
  );
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

function number(v: number): string {
  return Number.isNaN(v) ? 'NaN' : v === Infinity ? '+Inf' : v === -Infinity ? '-Inf' : String(v);
}

/** Values by label set; the key is the label set in the declared label order. */
abstract class Labelled<V> implements Family {
  abstract readonly kind: Kind;
  protected readonly values = new Map<string, { labels: Labels; value: V }>();
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    this.name = name;
    this.help = help;
    this.labelNames = labelNames;
  }

  protected slot(labels: Labels, init: () => V): { labels: Labels; value: V } {
    const ordered: Record<string, string | number> = {};
    for (const n of this.labelNames) ordered[n] = labels[n] ?? '';
    const key = JSON.stringify(Object.values(ordered));
    let s = this.values.get(key);
    if (s === undefined) {
      s = { labels: ordered, value: init() };
      this.values.set(key, s);
    }
    return s;
  }

  abstract write(out: string[]): void;
}

export class Counter extends Labelled<number> {
  readonly kind = 'counter';
  inc(labels: Labels = {}, by = 1): void {
    this.slot(labels, () => 0).value += by;
  }
  write(out: string[]): void {
    // an unlabelled counter is exposed from the start, at 0
    if (this.labelNames.length === 0 && this.values.size === 0) this.slot({}, () => 0);
    for (const { labels, value } of this.values.values()) out.push(`${this.name}${labelText(labels)} ${number(value)}`);
  }
}

export class Gauge extends Labelled<number> {
  readonly kind = 'gauge';
  set(labelsOrValue: Labels | number, value?: number): void {
    if (typeof labelsOrValue === 'number') this.slot({}, () => 0).value = labelsOrValue;
    else this.slot(labelsOrValue, () => 0).value = value ?? 0;
  }
  inc(labels: Labels = {}, by = 1): void {
    this.slot(labels, () => 0).value += by;
  }
  reset(): void {
    this.values.clear();
  }
  write(out: string[]): void {
    if (this.labelNames.length === 0 && this.values.size === 0) this.slot({}, () => 0);
    for (const { labels, value } of this.values.values()) out.push(`${this.name}${labelText(labels)} ${number(value)}`);
  }
}

export class Histogram extends Labelled<{ counts: number[]; sum: number; count: number }> {
  readonly kind = 'histogram';
  readonly #buckets: readonly number[];
  constructor(name: string, help: string, labelNames: readonly string[], buckets: readonly number[]) {
    super(name, help, labelNames);
    this.#buckets = [...buckets].sort((a, b) => a - b);
  }
  observe(labels: Labels, v: number): void {
    const s = this.slot(labels, () => ({ counts: this.#buckets.map(() => 0), sum: 0, count: 0 })).value;
    for (let i = 0; i < this.#buckets.length; i++) if (v <= this.#buckets[i]!) s.counts[i]! += 1;
    s.sum += v;
    s.count += 1;
  }
  write(out: string[]): void {
    for (const { labels, value } of this.values.values()) {
      this.#buckets.forEach((le, i) => out.push(`${this.name}_bucket${labelText({ ...labels, le: number(le) })} ${value.counts[i]}`));
      out.push(`${this.name}_bucket${labelText({ ...labels, le: '+Inf' })} ${value.count}`);
      out.push(`${this.name}_sum${labelText(labels)} ${number(value.sum)}`, `${this.name}_count${labelText(labels)} ${value.count}`);
    }
  }
}

/**
 * processMetrics registers Node's process metrics, read when scraped:
 * process_cpu_{user,system}_seconds_total, process_cpu_seconds_total, process_start_time_seconds,
 * process_resident_memory_bytes, process_open_fds and process_max_fds (Linux),
 * nodejs_eventloop_lag_seconds, nodejs_active_resources{type} (sum it for the total: prom-client's
 * nodejs_active_resources_total is a gauge named like a counter, which `promtool check metrics` refuses),
 * nodejs_heap_size_{total,used}_bytes, nodejs_external_memory_bytes,
 * nodejs_heap_space_size_{total,used,available}_bytes{space}, nodejs_version_info.
 */
export function processMetrics(r: Registry): void {
  const g = (name: string, help: string, labelNames: string[] = []) => new Gauge(name, help, labelNames);
  const user = new Counter('process_cpu_user_seconds_total', 'Total user CPU time spent in seconds.');
  const system = new Counter('process_cpu_system_seconds_total', 'Total system CPU time spent in seconds.');
  const cpu = new Counter('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds.');
  const start = g('process_start_time_seconds', 'Start time of the process since unix epoch in seconds.');
  const rss = g('process_resident_memory_bytes', 'Resident memory size in bytes.');
  const lag = g('nodejs_eventloop_lag_seconds', 'Lag of event loop in seconds.');
  const resources = g('nodejs_active_resources', 'Number of active resources keeping the event loop alive, grouped by type.', ['type']);
  const heapTotal = g('nodejs_heap_size_total_bytes', 'Process heap size from Node.js in bytes.');
  const heapUsed = g('nodejs_heap_size_used_bytes', 'Process heap size used from Node.js in bytes.');
  const external = g('nodejs_external_memory_bytes', 'Node.js external memory size in bytes.');
  const spaces = (kind: string) =>
    g(`nodejs_heap_space_size_${kind}_bytes`, `Process heap space size ${kind} from Node.js in bytes.`, ['space']);
  const [spaceTotal, spaceUsed, spaceAvailable] = [spaces('total'), spaces('used'), spaces('available')];
  const version = g('nodejs_version_info', 'Node.js version info.', ['version', 'major', 'minor', 'patch']);
  const linux = process.platform === 'linux';
  const openFds = linux ? g('process_open_fds', 'Number of open file descriptors.') : null;
  const maxFds = linux ? g('process_max_fds', 'Maximum number of open file descriptors.') : null;

  start.set(Math.round(Date.now() / 1000 - process.uptime()));
  const [major, minor, patch] = process.versions.node.split('.');
  version.set({ version: process.version, major: major!, minor: minor!, patch: patch! }, 1);
  let last = { user: 0, system: 0 };
  const collect = async () => {
    const usage = process.cpuUsage();
    user.inc({}, (usage.user - last.user) / 1e6);
    system.inc({}, (usage.system - last.system) / 1e6);
    cpu.inc({}, (usage.user - last.user + usage.system - last.system) / 1e6);
    last = usage;
    const mem = process.memoryUsage();
    rss.set(mem.rss);
    heapTotal.set(mem.heapTotal);
    heapUsed.set(mem.heapUsed);
    external.set(mem.external);
    for (const s of getHeapSpaceStatistics()) {
      const space = s.space_name.replace(/_space$/, '');
      spaceTotal.set({ space }, s.space_size);
      spaceUsed.set({ space }, s.space_used_size);
      spaceAvailable.set({ space }, s.space_available_size);
    }
    resources.reset();
    const info = process.getActiveResourcesInfo();
    for (const type of info) resources.inc({ type });
    if (openFds !== null && maxFds !== null) {
      try {
        openFds.set(readdirSync('/proc/self/fd').length - 1);
        const limit = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
        if (limit) maxFds.set(Number(limit[1]));
      } catch {
        /* no /proc: left as they were */
      }
    }
    const t0 = process.hrtime.bigint();
    await new Promise<void>((resolve) => setImmediate(resolve));
    lag.set(Number(process.hrtime.bigint() - t0) / 1e9);
  };
  r.register(user, collect);
  for (const f of [
    system,
    cpu,
    start,
    rss,
    openFds,
    maxFds,
    lag,
    resources,
    heapTotal,
    heapUsed,
    external,
    spaceTotal,
    spaceUsed,
    spaceAvailable,
    version,
  ]) {
    if (f !== null) r.register(f);
  }
}
